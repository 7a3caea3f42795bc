#!/usr/bin/env bash
# Push benchmark: VoIP pushes per second through our APNs provider (SwitchboardPush over
# libcurl/nghttp2) to the APNs emulator over TLS, on one and on BENCH_CONNS HTTP/2
# connections, side by side with a well-known Python APNs client (aioapns, PyPI) against
# the same emulator, on 127.0.0.1.
#
#   usage: scripts/bench-push.sh path/to/switchboard-dev [path/to/push-bench]
#
# The emulator is `switchboard-dev push-emulator`; push-bench defaults to the push-bench beside
# switchboard-dev. Build both with
#   swift build -c release --product switchboard-dev && swift build -c release --product push-bench
#
# Measures (see bench/README.md, "Push benchmark", for how to read them), each run
# BENCH_COUNT pushes after BENCH_WARMUP uncounted ones, BENCH_CONCURRENCY senders that
# each send their next push when the previous one is answered, over BENCH_ROUNDS rounds
# in rotating order (medians reported):
#   1. push-bench (our APNsProvider), 1 connection;
#   2. push-bench, BENCH_CONNS connections (streams per connection = concurrency / conns);
#   3. bench/apns_python_client.py (aioapns, 1 connection);
#   5. push-bench fcm (our FCMTransport, the Android ring channel), 1 connection: FCM HTTP v1
#      ring messages with an OAuth2 access token to the emulator's FCM stand-in, same port;
#   6. push-bench huawei, xiaomi, oppo and vivo (the makers' channels), 1 connection each:
#      rings with each service's auth to the emulator's stand-ins, same port;
#   4. push-bench, 1 connection, a quarter of BENCH_COUNT, with the emulator holding the
#      answers of BENCH_HANG_PERCENT % of the device tokens past the 10 s deadline (a sender
#      hands such a push off and goes on, as the server's dispatcher does): the other pushes'
#      figures beside the clean ones.
# Per run: pushes/s, send -> response latency p50/p99/max, statuses, client CPU; and from
# the emulator (GET /control/stats, /proc): connections it accepted, pushes it processed,
# its CPU time.
#
# Figures are printed, never asserted: exit 0 when every step ran, non-zero with a
# message on stderr when a step failed. All traffic stays on loopback. Every process
# started here is stopped by the EXIT trap, even on failure.
#
# Environment knobs (all optional):
#   BENCH_COUNT        measured pushes per run                  (default 20000)
#   BENCH_WARMUP       uncounted pushes before each run          (default 2000)
#   BENCH_CONCURRENCY  concurrent senders                        (default 200)
#   BENCH_CONNS        connections for the multi-connection run  (default 4)
#   BENCH_ROUNDS       rounds; medians and spreads are reported  (default 5)
#   BENCH_TOKENS       device tokens the pushes go to in turn    (default 1000)
#   BENCH_RUN_SECONDS  cap on one client run                     (default 60)
#   BENCH_HANG_PERCENT tokens whose answers are held in run 4    (default 1; 0 skips run 4)
#   KEEP_TMP=1         keep the temp dir (keys, per-run JSON, emulator logs)
set -euo pipefail

readonly COUNT="${BENCH_COUNT:-20000}"
readonly WARMUP="${BENCH_WARMUP:-2000}"
readonly CONCURRENCY="${BENCH_CONCURRENCY:-200}"
readonly CONNS="${BENCH_CONNS:-4}"
readonly ROUNDS="${BENCH_ROUNDS:-5}"
readonly TOKENS="${BENCH_TOKENS:-1000}"
readonly RUN_SECONDS="${BENCH_RUN_SECONDS:-60}"
readonly HANG_PERCENT="${BENCH_HANG_PERCENT:-1}"
readonly TARGET_PPS=5000
readonly TEAM_ID="BENCHTEAM1"
readonly KEY_ID="BENCHKEY01"
readonly BUNDLE_ID="com.example.switchboard"

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CLIENT_PY="$HERE/../bench/apns_python_client.py"

BENCH_NAME=bench-push
# shellcheck source=scripts/bench-lib.sh
. "$(dirname "$0")/bench-lib.sh"

# ---------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------
[[ $# -eq 1 || $# -eq 2 ]] || die "usage: $0 path/to/switchboard-dev [path/to/push-bench]"
[[ -x "$1" ]] || die "switchboard-dev '$1' not found or not executable (build it first: make release)"
DEV_TOOLS="$(abs_path "$1")"
PUSH_BENCH="${2:-$(dirname "$DEV_TOOLS")/push-bench}"
[[ -x "$PUSH_BENCH" ]] || die "push-bench '$PUSH_BENCH' not found or not executable" \
    "(build it: swift build -c release --product push-bench)"
PUSH_BENCH="$(abs_path "$PUSH_BENCH")"
[[ -f "$CLIENT_PY" ]] || die "missing $CLIENT_PY"
command -v python3 >/dev/null || die "python3 is required"
command -v timeout >/dev/null || die "timeout (coreutils) is required"
need_positive_ints COUNT CONCURRENCY CONNS ROUNDS TOKENS RUN_SECONDS
need_nonneg_int WARMUP
"$DEV_TOOLS" apns-emulator --help >/dev/null 2>&1 \
    || die "'$DEV_TOOLS' has no apns-emulator command (is it switchboard-dev?)"

BUILD="$(build_type "$DEV_TOOLS" "$PUSH_BENCH")"

# ---------------------------------------------------------------------------
# Cleanup: everything we start is recorded here and stopped on exit.
# ---------------------------------------------------------------------------
EMULATOR_PID=""
CLIENT_PID=""
BENCH_STOP_ON_EXIT=(CLIENT_PID EMULATOR_PID)
bench_init_tmp switchboard-bench-push.XXXXXX
BENCH_FAILURE_LOGS=("$TMP/emulator.err" "$TMP/emulator.out" "$TMP/client.err")

: >"$TMP/warnings"

# ---------------------------------------------------------------------------
# 1. Tools: curl (emulator stats), aioapns (the reference client)
# ---------------------------------------------------------------------------
command -v curl >/dev/null || apt_install curl || die "could not install curl"
PY_OK=1
if ! pip_module aioapns aioapns "the reference client"; then
    PY_OK=0
    warn "aioapns could not be installed from PyPI: no reference run, no ratio"
fi

# ---------------------------------------------------------------------------
# 2. A provider key (ES256, .p8) and the emulator (TLS) that trusts it
# ---------------------------------------------------------------------------
"$PUSH_BENCH" generate-key --p8 "$TMP/key.p8" --public "$TMP/key.pub.pem" 2>"$TMP/client.err" \
    || die "push-bench generate-key failed: $(cat "$TMP/client.err")"
# The FCM service account: the emulator learns its key now; the client's copy names the
# emulator's token endpoint once the port is known.
"$PUSH_BENCH" generate-fcm-account --out "$TMP/fcm-emulator.json" --token-uri https://localhost/token 2>"$TMP/client.err" \
    || die "push-bench generate-fcm-account failed: $(cat "$TMP/client.err")"

# The makers' apps the stand-ins accept (and push-bench sends as).
HUAWEI_APP="104857600:bench-huawei-secret"
XIAOMI_APP="com.example.bench:bench-xiaomi-secret"
OPPO_APP="bench-oppo-key:bench-oppo-master"
VIVO_APP="10001:bench-vivo-key:bench-vivo-secret"

log "starting $DEV_TOOLS push-emulator --tls ($BUILD build)"
# SIGPIPE is ignored for the emulator (inherited through exec): its TLS transport writes
# with OpenSSL's socket BIO (write(2), no MSG_NOSIGNAL) and `push-emulator` does not ignore
# SIGPIPE itself, so a client closing a connection while the emulator still writes to it
# would kill the emulator (status 141) in the middle of the benchmark.
# stdout goes to a file so the emulator can never block on a full pipe; its first line
# is the JSON "listening" record with the bound address.
(
    trap '' PIPE
    exec "$DEV_TOOLS" push-emulator --listen 127.0.0.1:0 --tls --ca-out "$TMP/ca.pem" \
        --public-key "$TMP/key.pub.pem" --team-id "$TEAM_ID" --key-id "$KEY_ID" --bundle-id "$BUNDLE_ID" \
        --max-concurrent-streams 1000 --fcm-service-account "$TMP/fcm-emulator.json" \
        --huawei-app "$HUAWEI_APP" --xiaomi-app "$XIAOMI_APP" --oppo-app "$OPPO_APP" --vivo-app "$VIVO_APP"
) </dev/null >"$TMP/emulator.out" 2>"$TMP/emulator.err" &
EMULATOR_PID=$!

wait_listening "$EMULATOR_PID" "$TMP/emulator.out" "the emulator" "the emulator's" h2 "TLS (h2)"
ADDR="$LISTEN_ADDR"
[[ -s "$TMP/ca.pem" ]] || die "the emulator wrote no CA certificate"
PORT="$LISTEN_PORT"
# The certificate names localhost, 127.0.0.1 and ::1; /etc/hosts maps localhost to 127.0.0.1.
URL="https://localhost:$PORT"
log "emulator listening on $ADDR (pid $EMULATOR_PID)"
python3 - "$TMP/fcm-emulator.json" "$URL/token" >"$TMP/fcm-account.json" <<'PY'
import json, sys
account = json.load(open(sys.argv[1]))
account["token_uri"] = sys.argv[2]
print(json.dumps(account))
PY

# running PID: true while PID exists and is not a zombie (an exited child that was not
# reaped yet still answers kill -0).
running() {
    local state
    state="$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" || return 1
    [[ -n "$state" && "$state" != Z ]]
}

# emulator_snapshot FILE: GET /control/stats (one fresh connection) plus the emulator's
# CPU ticks from /proc/PID/stat (utime + stime), as one JSON object.
emulator_snapshot() {
    local out="$1" ticks
    running "$EMULATOR_PID" || die "the emulator is gone (see its log below)"
    ticks="$(awk '{ print $14 + $15 }' "/proc/$EMULATOR_PID/stat")"
    curl -sS --http2 --cacert "$TMP/ca.pem" --max-time 10 "$URL/control/stats" >"$out.stats" \
        || die "GET /control/stats from the emulator failed"
    python3 - "$out.stats" "$ticks" "$(getconf CLK_TCK)" >"$out" <<'PY'
import json, sys
stats = json.load(open(sys.argv[1]))
stats["cpu_ms"] = int(sys.argv[2]) * 1000 / int(sys.argv[3])
print(json.dumps(stats))
PY
}

# ---------------------------------------------------------------------------
# 3. The runs, rotating the order every round
# ---------------------------------------------------------------------------
# run_client NAME ROUND: one run; its JSON (with the emulator's figures for the run
# under "emulator") goes to $TMP/run-NAME-ROUND.json. Runs in this shell so the
# traps know CLIENT_PID.
run_client() {
    local name="$1" round="$2" out="$TMP/run-$1-$2.json" rc=0
    local -a command
    case "$name" in
        ours-1)
            command=("$PUSH_BENCH" --url "$URL" --ca-file "$TMP/ca.pem" --team-id "$TEAM_ID" --key-id "$KEY_ID"
                --key-file "$TMP/key.p8" --bundle-id "$BUNDLE_ID" --count "$COUNT" --warmup "$WARMUP"
                --concurrency "$CONCURRENCY" --connections 1 --tokens "$TOKENS" --label "$name") ;;
        ours-n)
            command=("$PUSH_BENCH" --url "$URL" --ca-file "$TMP/ca.pem" --team-id "$TEAM_ID" --key-id "$KEY_ID"
                --key-file "$TMP/key.p8" --bundle-id "$BUNDLE_ID" --count "$COUNT" --warmup "$WARMUP"
                --concurrency "$CONCURRENCY" --connections "$CONNS" --tokens "$TOKENS" --label "$name") ;;
        ours-hung)
            command=("$PUSH_BENCH" --url "$URL" --ca-file "$TMP/ca.pem" --team-id "$TEAM_ID" --key-id "$KEY_ID"
                --key-file "$TMP/key.p8" --bundle-id "$BUNDLE_ID" --count "$((COUNT / 4))" --warmup "$((WARMUP / 4))"
                --concurrency "$CONCURRENCY" --connections 1 --tokens "$TOKENS" --label "$name"
                --hang-percent "$HANG_PERCENT" --hang-ms 15000) ;;
        fcm-1)
            command=("$PUSH_BENCH" fcm --url "$URL" --ca-file "$TMP/ca.pem" --service-account "$TMP/fcm-account.json"
                --count "$COUNT" --warmup "$WARMUP" --concurrency "$CONCURRENCY" --connections 1 --tokens "$TOKENS"
                --label "$name") ;;
        huawei-1|xiaomi-1|oppo-1|vivo-1)
            local maker="${name%-1}" app
            case "$maker" in
                huawei) app="$HUAWEI_APP" ;; xiaomi) app="$XIAOMI_APP" ;; oppo) app="$OPPO_APP" ;; vivo) app="$VIVO_APP" ;;
            esac
            command=("$PUSH_BENCH" "$maker" --url "$URL" --ca-file "$TMP/ca.pem" --app "$app"
                --count "$COUNT" --warmup "$WARMUP" --concurrency "$CONCURRENCY" --connections 1 --tokens "$TOKENS"
                --label "$name") ;;
        python)
            command=(python3 "$CLIENT_PY" --host localhost --port "$PORT" --ca-file "$TMP/ca.pem"
                --team-id "$TEAM_ID" --key-id "$KEY_ID" --key-file "$TMP/key.p8" --bundle-id "$BUNDLE_ID"
                --count "$COUNT" --warmup "$WARMUP" --concurrency "$CONCURRENCY" --tokens "$TOKENS"
                --max-seconds "$((RUN_SECONDS - 5 > 5 ? RUN_SECONDS - 5 : 5))" --label "$name") ;;
    esac
    emulator_snapshot "$TMP/emu-before.json"
    log "round $round/$ROUNDS: $name"
    # The held pushes keep the hung run open until their 10 s deadline, and every stall it
    # finds lasts as long: it gets twice the cap.
    local cap="$RUN_SECONDS"
    [[ "$name" == ours-hung ]] && cap=$((RUN_SECONDS * 2))
    timeout -k 5 "$cap" "${command[@]}" </dev/null >"$out.client" 2>"$TMP/client.err" &
    CLIENT_PID=$!
    # Watch the emulator while the client runs, so that its death ends the run at once
    # instead of after the clients' retries; bounded by the client's own `timeout`.
    for ((i = 0; i < (cap + 10) * 20; i++)); do
        running "$CLIENT_PID" || break
        running "$EMULATOR_PID" || die "the emulator exited during $name round $round (see its log below)"
        sleep 0.05
    done
    wait "$CLIENT_PID" || rc=$?
    CLIENT_PID=""
    case "$rc" in
        0) ;;
        124|137) die "$name did not finish within ${cap} s (BENCH_RUN_SECONDS)" ;;
        *) die "$name failed (exit $rc): $(tail -n 5 "$TMP/client.err")" ;;
    esac
    if [[ "$name" == ours-hung ]]; then
        # The held tokens' faults never run out: clear them for the next runs.
        curl -sS --http2 --cacert "$TMP/ca.pem" --max-time 10 -X DELETE "$URL/control/faults" >/dev/null \
            || die "DELETE /control/faults on the emulator failed"
    fi
    emulator_snapshot "$TMP/emu-after.json"
    python3 - "$out.client" "$TMP/emu-before.json" "$TMP/emu-after.json" >"$out" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
before, after = json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
sent = run["count"] + run["warmup"]
run["emulator"] = {
    # The after-snapshot's own curl connection is one of the accepted ones.
    "connections_accepted": after["connectionsAccepted"] - before["connectionsAccepted"] - 1,
    "push_requests": after["pushRequests"] - before["pushRequests"],
    "extra_push_requests": after["pushRequests"] - before["pushRequests"] - sent,
    "duplicate_deliveries": after["duplicateDeliveries"] - before["duplicateDeliveries"],
    "resets_received": after["resetsReceived"] - before["resetsReceived"],
    "goaways_sent": after["goawaysSentTotal"] - before["goawaysSentTotal"],
    "cpu_ms": round(after["cpu_ms"] - before["cpu_ms"]),
}
print(json.dumps(run))
PY
    if [[ -s "$TMP/client.err" ]]; then
        warn "$name round $round wrote to stderr: $(head -n 3 "$TMP/client.err" | tr '\n' ' ' | cut -c1-300)"
    fi
}

NAMES=(ours-1 ours-n fcm-1 huawei-1 xiaomi-1 oppo-1 vivo-1)
[[ $PY_OK -eq 1 ]] && NAMES+=(python)
[[ "$HANG_PERCENT" -gt 0 ]] && NAMES+=(ours-hung)
for round in $(seq 1 "$ROUNDS"); do
    # Rotate: round 1 ours-1 ours-n python, round 2 ours-n python ours-1, ...
    count=${#NAMES[@]}
    for ((j = 0; j < count; j++)); do
        run_client "${NAMES[$(((j + round - 1) % count))]}" "$round"
    done
done

# ---------------------------------------------------------------------------
# 4. Stop the emulator (it should exit 0 on SIGTERM) and summarise
# ---------------------------------------------------------------------------
stop_pid "$EMULATOR_PID"
EMULATOR_EXIT="$STOP_STATUS"
EMULATOR_PID=""
[[ "$EMULATOR_EXIT" == 0 ]] || warn "emulator: exit status on SIGTERM was $EMULATOR_EXIT (expected 0)"
[[ -s "$TMP/emulator.err" ]] \
    && warn "emulator wrote to stderr: $(head -n 2 "$TMP/emulator.err" | tr '\n' ' ' | cut -c1-300)"

CURL_VERSION="$(curl --version | head -n 1 | awk '{ print $2 }')"
NGHTTP2_VERSION="$(dpkg-query -W -f='${Version}' libnghttp2-14 2>/dev/null || echo '?')"
python3 - "$TMP" "$ROUNDS" "$CONNS" "$TARGET_PPS" "$BUILD" "$CURL_VERSION" "$NGHTTP2_VERSION" \
    >"$TMP/report.txt" 2>>"$TMP/warnings" <<'PY'
import glob, json, os, statistics, sys, time

tmp, rounds, conns, target, build = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
curl_version, nghttp2_version = sys.argv[6], sys.argv[7]
runs = {}
# In round order (run-NAME-ROUND.json), so that the n-th of two clients' runs share a round.
for path in sorted(glob.glob(os.path.join(tmp, "run-*-*.json")), key=lambda p: int(p[:-5].rsplit("-", 1)[1])):
    name = os.path.basename(path)[4:-5].rsplit("-", 1)[0]
    runs.setdefault(name, []).append(json.load(open(path)))

def med(name, key, sub=None):
    values = [(r[sub] if sub else r)[key] for r in runs.get(name, [])]
    return statistics.median(values) if values else None

def fmt(value, decimals=0):
    if value is None:
        return "n/a"
    return f"{value:,.{decimals}f}"

rows = [("ours-1", "switchboard, 1 connection"), ("ours-n", f"switchboard, {conns} connections"),
        ("python", "aioapns, 1 connection"), ("fcm-1", "switchboard FCM, 1 connection"),
        ("huawei-1", "switchboard Huawei, 1 conn."), ("xiaomi-1", "switchboard Xiaomi, 1 conn."),
        ("oppo-1", "switchboard OPPO, 1 conn."), ("vivo-1", "switchboard vivo, 1 conn.")]
MAKERS = [("huawei-1", "Huawei Push Kit"), ("xiaomi-1", "Xiaomi MiPush"), ("oppo-1", "OPPO push"), ("vivo-1", "vivo push")]
if "ours-hung" in runs:
    rows.append(("ours-hung", f"switchboard, 1 conn, {runs['ours-hung'][0]['hang_percent']} % hung"))
first = next(iter(runs.values()))[0]
count, warmup, concurrency, tokens = first["count"], first["warmup"], first["concurrency"], first["device_tokens"]
py_client = runs["python"][0]["client"] if "python" in runs else "aioapns (not run)"

print()
print(f"Push throughput: {count:,} VoIP pushes per run after {warmup:,} warm-up, {concurrency} concurrent "
      f"senders, {tokens:,} device tokens; HTTP/2 over TLS to the APNs emulator on 127.0.0.1; "
      f"median of {rounds} rounds")
header = (f"  {'client':<30} {'pushes/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} "
          f"{'client CPU ms':>13} {'emu CPU ms':>10} {'conns opened':>12} {'duplicates':>10} "
          f"{'RST_STREAMs':>11} {'GOAWAYs':>7}")
print(header)
for name, title in rows:
    if name not in runs:
        continue
    print(f"  {title:<30} {fmt(med(name, 'pushes_per_second')):>9} {fmt(med(name, 'p50_ms'), 2):>8} "
          f"{fmt(med(name, 'p99_ms'), 2):>8} {fmt(med(name, 'max_ms'), 1):>8} "
          f"{fmt(med(name, 'client_cpu_ms')):>13} {fmt(med(name, 'cpu_ms', 'emulator')):>10} "
          f"{fmt(med(name, 'connections_accepted', 'emulator')):>12} "
          f"{fmt(med(name, 'duplicate_deliveries', 'emulator')):>10} "
          f"{fmt(med(name, 'resets_received', 'emulator')):>11} {fmt(med(name, 'goaways_sent', 'emulator')):>7}")
print("  per round, pushes/s:")
for i in range(rounds):
    parts = []
    for name, title in rows:
        if name in runs and i < len(runs[name]):
            parts.append(f"{name} {runs[name][i]['pushes_per_second']:,}")
    print(f"    round {i + 1}: " + ", ".join(parts))

ours1 = med("ours-1", "pushes_per_second")
oursn = med("ours-n", "pushes_per_second")
py = med("python", "pushes_per_second")
# Judged on the distribution: the per-round ratios (each round runs every client in turn).
def round_ratios(a, b, key="pushes_per_second"):
    return sorted(x[key] / y[key] for x, y in zip(runs.get(a, []), runs.get(b, [])) if y[key])
def spread(values):
    return f"{values[0]:.2f}–{values[-1]:.2f}" if len(values) > 1 else "-"
def median_ratio(values):
    return f"{statistics.median(values):.2f}" if values else "n/a"
py_ratios = round_ratios("ours-1", "python")
ratio1 = median_ratio(py_ratios)
ration = f"{oursn / py:.2f}" if py else "n/a"
met = "met" if ours1 is not None and ours1 >= target else "NOT met"
print(f"  reference: {py_client}")
print(f"  ratio switchboard/aioapns pushes/s, 1 connection each: {ratio1} "
      f"({conns} connections vs aioapns's 1: {ration})")
print(f"  target: >= {target:,} pushes/s on one connection -> {met}")
if "ours-hung" in runs:
    hung = runs["ours-hung"][0]
    print(f"  with {hung['hang_percent']} % of the tokens held: the other pushes at "
          f"{fmt(med('ours-hung', 'pushes_per_second'))}/s, p99 {fmt(med('ours-hung', 'p99_ms'), 2)} ms "
          f"(clean: {fmt(ours1)}/s, p99 {fmt(med('ours-1', 'p99_ms'), 2)} ms); held pushes per run "
          f"{fmt(med('ours-hung', 'hung_pushes'))}, ended {hung['hung_failures'] or hung['hung_statuses']}")
fcm1 = med("fcm-1", "pushes_per_second")
if fcm1 is not None:
    print(f"  FCM HTTP v1 (ring data messages, OAuth2 bearer token) on one connection: {fmt(fcm1)}/s, "
          f"p99 {fmt(med('fcm-1', 'p99_ms'), 2)} ms, beside APNs VoIP's {fmt(ours1)}/s; "
          f"access tokens fetched per run: {fmt(med('fcm-1', 'access_tokens_fetched'))}")
for name, title in MAKERS:
    pps = med(name, "pushes_per_second")
    if pps is not None:
        print(f"  {title} on one connection: {fmt(pps)}/s, p99 {fmt(med(name, 'p99_ms'), 2)} ms, beside APNs VoIP's "
              f"{fmt(ours1)}/s; auth tokens fetched per run: {fmt(med(name, 'access_tokens_fetched'))}")
print("  duplicates = deliveries of an apns-id already delivered; RST_STREAMs = stream resets the client sent;")
print("  GOAWAYs = every GOAWAY the emulator sent (nghttp2 sends one after 1,000 resets above 33/s)")

print()
print("---- summary (paste-ready) ----")
print(f"Switchboard push benchmark, {time.strftime('%Y-%m-%d', time.gmtime())}, {os.cpu_count()} cores, "
      f"{build} build, loopback, TLS; libcurl {curl_version}, libnghttp2 {nghttp2_version}")
print(f"{count:,} VoIP pushes per run ({warmup:,} warm-up), {concurrency} concurrent senders, "
      f"{tokens:,} device tokens, median of {rounds} rounds; reference: {py_client}")
print()
print("| client                         | pushes/s | p50 ms | p99 ms | connections opened | duplicates |")
print("|--------------------------------|---------:|-------:|-------:|-------------------:|-----------:|")
for name, title in rows:
    if name in runs:
        print(f"| {title:<30} | {fmt(med(name, 'pushes_per_second')):>8} | {fmt(med(name, 'p50_ms'), 2):>6} | "
              f"{fmt(med(name, 'p99_ms'), 2):>6} | {fmt(med(name, 'connections_accepted', 'emulator')):>18} | "
              f"{fmt(med(name, 'duplicate_deliveries', 'emulator')):>10} |")
print()
print(f"ratio switchboard/aioapns pushes/s (1 connection each): {ratio1}")
churn = med("ours-1", "connections_accepted", "emulator")
note = f"; {fmt(churn)} connections one after another, see warnings" if churn and churn > 1 else ""
print(f">= {target:,} pushes/s on one connection: {met} ({fmt(ours1)} pushes/s{note})")
summary_dir = os.environ.get("BENCH_SUMMARY_DIR")
if summary_dir:
    os.makedirs(summary_dir, exist_ok=True)
    with open(os.path.join(summary_dir, "bench-push.tsv"), "a") as out:
        def row(*fields):
            out.write("\t".join(fields) + "\n")
        p99_ratios = round_ratios("ours-1", "python", "p99_ms")
        row("VoIP pushes/s, one HTTP/2 connection (TLS)", fmt(ours1), f">= {target:,}", met,
            "aioapns, 1 connection", fmt(py), ratio1, spread(py_ratios), str(rounds))
        row("  the same, p99 ms", fmt(med("ours-1", "p99_ms"), 2), "-", "-",
            "aioapns, 1 connection", fmt(med("python", "p99_ms"), 2), median_ratio(p99_ratios), spread(p99_ratios),
            str(rounds))
        for name, title in [("fcm-1", "FCM messages/s")] + [(n, f"{t} rings/s") for n, t in MAKERS]:
            pps = med(name, "pushes_per_second")
            if pps is not None:
                ratios = round_ratios(name, "ours-1")
                row(f"{title}, one HTTP/2 connection (TLS)", fmt(pps), "-", "-", "APNs VoIP, same run", fmt(ours1),
                    median_ratio(ratios), spread(ratios), str(rounds))
if build == "debug":
    print("NOTE: debug build - these figures are a functional check only and mean nothing.")

# Warnings (stderr of this helper is appended to the warnings file), one line per client
# and kind, with the per-round figures.
def warn(text):
    print(text, file=sys.stderr)

# Our client may open 2 overflow connections beside the configured ones (HTTP2Client's
# overflowConnections: streams unanswered for 1 s stop counting against the stream budget,
# and requests past it go to a connection of their own). More than that is churn.
OVERFLOW = 2
expected_conns = {"ours-1": 1 + OVERFLOW, "ours-n": conns + OVERFLOW, "python": 1, "ours-hung": 1 + OVERFLOW,
                  "fcm-1": 1 + OVERFLOW, "huawei-1": 1 + OVERFLOW, "xiaomi-1": 1 + OVERFLOW, "oppo-1": 1 + OVERFLOW,
                  "vivo-1": 1 + OVERFLOW}
# The makers answer in the body: these are their successes.
DELIVERED = {"200", "200 0", "200 80000000"}
for name, title in rows:
    done = runs.get(name, [])
    if not done:
        continue
    for i, run in enumerate(done, 1):
        bad = {k: v for k, v in run["statuses"].items() if k not in DELIVERED}
        # The held pushes' own timeouts are the point of that run, not a failure.
        if bad or run["failures"]:
            examples = run.get("failure_examples", {})
            warn(f"{title}, round {i}: non-200 answers {bad or '{}'}, transport failures {run['failures'] or '{}'}"
                 + (f" (e.g. {next(iter(examples.values()))[:200]})" if examples else ""))
    accepted = [run["emulator"]["connections_accepted"] for run in done]
    if max(accepted) > expected_conns[name]:
        warn(f"{title}: the emulator accepted {'/'.join(map(str, accepted))} connections in the rounds "
             f"(expected at most {expected_conns[name]}): connections were closed and reopened during the runs "
             f"(see bench/README.md, 'Connection churn')")
    extra = [run["emulator"]["extra_push_requests"] for run in done]
    if max(extra) > 0:
        warn(f"{title}: the emulator processed {'/'.join(map(str, extra))} more pushes than the client sent "
             f"in the rounds: pushes retried after the emulator had processed them (duplicate deliveries)")
    slow = [run.get("over_1s", 0) for run in done]
    if max(slow) > 0:
        warn(f"{title}: {'/'.join(map(str, slow))} pushes in the rounds took 1 s or more")
PY
cat "$TMP/report.txt"
print_warnings
