#!/usr/bin/env bash
# Event-delivery benchmark: long-poll fan-out and single-event latency of
# Switchboard's GET /events, on 127.0.0.1.
#
#   usage: scripts/bench-events.sh path/to/switchboard
#
# Measures (see bench/README.md, "Event benchmark", for how to read them):
#   1. fan-out: BENCH_MEMBERS (5000) friends of one owner in one group, each
#      holding a long poll on its own connection; the owner posts one group
#      message; time until the last of them is answered, p50/p99 of the
#      per-connection answer times (median of BENCH_ROUNDS rounds), and
#      resident memory per held long poll;
#   2. single-event latency: 1:1 messages at BENCH_RATE/s for
#      BENCH_DURATION s, send -> seen by the receiver's long poll.
# The load client is bench/event_fanout.py (Python 3 stdlib only).
#
# Figures are printed, never asserted: exit 0 when every step ran, non-zero
# with a message on stderr when a step failed. All traffic stays on loopback.
# Every process started here is stopped by the EXIT trap, even on failure.
#
# Environment knobs (all optional):
#   BENCH_MEMBERS    group members / held long polls   (default 5000)
#   BENCH_ROUNDS     fan-out rounds; medians reported  (default 3)
#   BENCH_RATE       1:1 messages per second           (default 200)
#   BENCH_DURATION   seconds of 1:1 messages           (default 10)
#   BENCH_MAX_SECONDS cap on the load client's run     (default 230)
#   KEEP_TMP=1       keep the temp dir (logs, figures JSON) for inspection
set -euo pipefail

readonly MEMBERS="${BENCH_MEMBERS:-5000}"
readonly ROUNDS="${BENCH_ROUNDS:-3}"
readonly RATE="${BENCH_RATE:-200}"
readonly DURATION="${BENCH_DURATION:-10}"
readonly CLIENT_MAX="${BENCH_MAX_SECONDS:-230}"
readonly NOFILE_WANTED=$((MEMBERS + 1024))

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CLIENT_PY="$HERE/../bench/event_fanout.py"

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'bench-events: error: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------
[[ $# -eq 1 ]] || die "usage: $0 path/to/switchboard"
SWITCHBOARD="$1"
[[ -x "$SWITCHBOARD" ]] || die "server binary '$SWITCHBOARD' not found or not executable (build it first)"
SWITCHBOARD="$(cd "$(dirname "$SWITCHBOARD")" && pwd)/$(basename "$SWITCHBOARD")"
[[ -f "$CLIENT_PY" ]] || die "missing $CLIENT_PY"
[[ -f "$HERE/../bench/hold_connections.py" ]] || die "missing bench/hold_connections.py (event_fanout.py imports it)"
command -v python3 >/dev/null || die "python3 is required"
command -v timeout >/dev/null || die "timeout (coreutils) is required"
for knob in MEMBERS ROUNDS DURATION CLIENT_MAX; do
    [[ "${!knob}" =~ ^[1-9][0-9]*$ ]] || die "BENCH_$knob must be a positive integer, got '${!knob}'"
done
[[ "$RATE" =~ ^[0-9]+([.][0-9]+)?$ ]] || die "BENCH_RATE must be a positive number, got '$RATE'"

# ---------------------------------------------------------------------------
# Cleanup: everything we start is recorded here and stopped on exit.
# ---------------------------------------------------------------------------
TMP="$(mktemp -d -t switchboard-bench-events.XXXXXX)"
SERVER_PID=""
CLIENT_PID=""

# stop_pid PID: SIGTERM, wait up to 10 s, then SIGKILL. Sets STOP_STATUS to
# the exit status, or "killed". Must run in this shell (not in $(...)) so
# that `wait` can reap our own child and see its status.
STOP_STATUS=""
stop_pid() {
    local pid="$1" i
    STOP_STATUS=0
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for ((i = 0; i < 100; i++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            kill -KILL "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
            STOP_STATUS="killed"
            return 0
        fi
    fi
    wait "$pid" 2>/dev/null || STOP_STATUS=$?
}

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    set +e
    [[ -n "$CLIENT_PID" ]] && stop_pid "$CLIENT_PID"
    [[ -n "$SERVER_PID" ]] && stop_pid "$SERVER_PID"
    if [[ $rc -ne 0 ]]; then
        for f in "$TMP/server.err" "$TMP/server.out"; do
            if [[ -s "$f" ]]; then
                printf -- '--- last lines of %s ---\n' "$(basename "$f")" >&2
                tail -n 15 "$f" >&2
            fi
        done
    fi
    if [[ "${KEEP_TMP:-0}" == 1 ]]; then
        log "kept temp dir $TMP"
    else
        rm -rf "$TMP"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT
trap 'log "terminated"; exit 143' TERM

# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------

# Wait (bounded) until 127.0.0.1:PORT accepts TCP connections.
wait_port() {
    local port="$1" pid="$2" name="$3" i
    for ((i = 0; i < 100; i++)); do
        kill -0 "$pid" 2>/dev/null || die "$name exited during startup"
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    die "$name did not accept connections on 127.0.0.1:$port within 10 s"
}

# fig EXPR: a value from the client's figures JSON, as text ("n/a" if
# missing). EXPR indexes the decoded object `f`, e.g. 'f["fanout"]["kb_per_poll"]'.
fig() {
    python3 - "$TMP/figures.json" "$1" <<'PY'
import json, sys
with open(sys.argv[1]) as fh:
    f = json.load(fh)
try:
    v = eval(sys.argv[2], {"f": f})
except (KeyError, IndexError, TypeError):
    v = None
print("n/a" if v is None else v)
PY
}

# ---------------------------------------------------------------------------
# 1. Limits
# ---------------------------------------------------------------------------
# Raise the open-file limit for this shell and everything it starts. Try a
# higher hard limit first (needs privilege), then lift the soft limit to it.
ulimit -Hn 30000 2>/dev/null || true
hard_nofile="$(ulimit -Hn)"
if [[ "$hard_nofile" == unlimited ]] || ((hard_nofile >= NOFILE_WANTED)); then
    ulimit -n "$( [[ "$hard_nofile" == unlimited ]] && echo 30000 || echo "$hard_nofile")"
fi
NOFILE="$(ulimit -n)"
((NOFILE >= NOFILE_WANTED)) || die "open-file limit is $NOFILE (hard $hard_nofile); need >= $NOFILE_WANTED"
log "open-file limit: $NOFILE"

BUILD="release"
case "$SWITCHBOARD" in
    */debug/*) BUILD="debug" ;;
esac

# ---------------------------------------------------------------------------
# 2. Switchboard
# ---------------------------------------------------------------------------
mkdir -p "$TMP/data"
log "starting $SWITCHBOARD ($BUILD build)"
# Cheap password hashes (scrypt N = 2^10) so thousands of registrations take
# seconds; room for every long poll plus the setup connections.
# stdout goes to a file so the server can never block on a full pipe; its
# first line is the JSON "listening" record with the bound address.
SWITCHBOARD_PASSWORD_SCRYPT_LOG_N=10 SWITCHBOARD_MAX_CONNECTIONS=20000 \
    "$SWITCHBOARD" serve --listen 127.0.0.1:0 --data-dir "$TMP/data" --log-level "${BENCH_LOG_LEVEL:-warning}" \
    </dev/null >"$TMP/server.out" 2>"$TMP/server.err" &
SERVER_PID=$!

ADDR=""
for ((i = 0; i < 300; i++)); do   # 300 x 0.1 s = 30 s
    # Only look at a complete (newline-terminated) first line.
    if [[ -s "$TMP/server.out" ]] && [[ "$(head -c 65536 "$TMP/server.out" | wc -l)" -ge 1 ]]; then
        ADDR="$(head -n 1 "$TMP/server.out" | python3 -c '
import json, sys
try:
    rec = json.loads(sys.stdin.readline())
except ValueError:
    sys.exit("first stdout line is not JSON")
if rec.get("msg") != "listening" or not rec.get("address"):
    sys.exit("first stdout line is not a listening record with an address")
print(rec["address"])
')" || die "could not parse the server's first stdout line: $(head -n 1 "$TMP/server.out")"
        break
    fi
    kill -0 "$SERVER_PID" 2>/dev/null || die "switchboard exited during startup"
    sleep 0.1
done
[[ -n "$ADDR" ]] || die "switchboard printed no listening line within 30 s"
[[ "$ADDR" == 127.0.0.1:* ]] || die "switchboard listens on '$ADDR', expected 127.0.0.1:PORT"
PORT="${ADDR##*:}"
wait_port "$PORT" "$SERVER_PID" switchboard
log "switchboard listening on $ADDR (pid $SERVER_PID)"

# ---------------------------------------------------------------------------
# 3. The load client (setup, fan-out, latency); bounded by `timeout`
# ---------------------------------------------------------------------------
# Its progress goes to stderr and its result tables to stdout, both straight
# through; its figures go to figures.json for the summary below. It runs in
# the background so that the INT/TERM traps can stop it.
log "running bench/event_fanout.py: $MEMBERS members, $ROUNDS fan-out rounds, ${RATE}/s for ${DURATION}s (at most ${CLIENT_MAX}s)"
timeout -k 5 "$CLIENT_MAX" python3 "$CLIENT_PY" --host 127.0.0.1 --port "$PORT" \
    --server-pid "$SERVER_PID" --members "$MEMBERS" --rounds "$ROUNDS" \
    --rate "$RATE" --duration "$DURATION" --max-seconds "$((CLIENT_MAX - 60 > 30 ? CLIENT_MAX - 60 : 30))" \
    --json-out "$TMP/figures.json" </dev/null &
CLIENT_PID=$!
CLIENT_RC=0
wait "$CLIENT_PID" || CLIENT_RC=$?
CLIENT_PID=""
kill -0 "$SERVER_PID" 2>/dev/null || die "switchboard exited during the benchmark (status: see its log below)"
case "$CLIENT_RC" in
    0) ;;
    124|137) die "bench/event_fanout.py did not finish within ${CLIENT_MAX} s (BENCH_MAX_SECONDS)" ;;
    *) die "bench/event_fanout.py failed (exit $CLIENT_RC); see its message above" ;;
esac
[[ -s "$TMP/figures.json" ]] || die "bench/event_fanout.py wrote no figures"

# ---------------------------------------------------------------------------
# 4. Stop the server (it should exit 0 on SIGTERM) and summarise
# ---------------------------------------------------------------------------
RSS_END="$(awk '/^VmRSS:/ {print $2; exit}' "/proc/$SERVER_PID/status" 2>/dev/null || echo "?")"
stop_pid "$SERVER_PID"
SERVER_EXIT="$STOP_STATUS"
SERVER_PID=""

: >"$TMP/warnings"
warn() { log "WARNING: $*"; echo "$*" >>"$TMP/warnings"; }
[[ "$SERVER_EXIT" == 0 ]] || warn "switchboard: exit status on SIGTERM was $SERVER_EXIT (expected 0)"
if [[ -s "$TMP/server.err" ]]; then
    warn "switchboard wrote $(wc -l <"$TMP/server.err") line(s) to stderr at log level ${BENCH_LOG_LEVEL:-warning}; first: $(head -n 1 "$TMP/server.err" | cut -c1-300)"
fi
# Lines after the first on stdout are warnings/errors (info is filtered out).
if [[ "$(wc -l <"$TMP/server.out")" -gt 1 ]]; then
    warn "switchboard logged $(($(wc -l <"$TMP/server.out") - 1)) line(s) at warning level or above; first: $(sed -n 2p "$TMP/server.out" | cut -c1-300)"
fi
# Problems the client counted (lost connections, unanswered polls, unexpected
# statuses, waiters not released, ...).
python3 - "$TMP/figures.json" >>"$TMP/warnings" <<'PY'
import json, sys
with open(sys.argv[1]) as fh:
    f = json.load(fh)
fan, lat = f.get("fanout", {}), f.get("latency", {})
for what, n in sorted(fan.get("problems", {}).items()):
    print(f"fan-out: {what}: {n}")
if fan.get("early_answers"):
    print(f"fan-out: {fan['early_answers']} long polls were answered before "
          f"the group message (re-polled)")
rel = fan.get("release", {})
if rel and rel.get("left") != 0:
    print(f"fan-out: {rel.get('left')} waiters still registered 10 s after "
          f"the client closed its held polls")
for what, n in sorted(lat.get("problems", {}).items()):
    print(f"latency: {what}: {n}")
for what, n in sorted(f.get("unexpected_non_2xx", {}).items()):
    print(f"server metrics: {what}: {n}")
if f.get("setup_reconnects"):
    print(f"setup: the server closed the keep-alive setup connection "
          f"{f['setup_reconnects']} time(s)")
PY

N="$(fig 'f["fanout"]["members"]')"
LAST="$(fig 'f["fanout"]["median_last_ms"]')"
P50="$(fig 'f["fanout"]["median_p50_ms"]')"
P99="$(fig 'f["fanout"]["median_p99_ms"]')"
ALL_ANSWERED="$(fig 'f["fanout"]["all_answered"]')"
CPU="$(fig 'f["fanout"]["median_client_cpu_ms"]')"
KB="$(fig 'f["fanout"]["kb_per_poll"]')"
RSS_BEFORE="$(fig 'f["fanout"]["rss_before_kb"]')"
RSS_HELD="$(fig 'f["fanout"]["rss_held_kb"]')"
LAT_P50="$(fig 'f["latency"]["p50_ms"]')"
LAT_P99="$(fig 'f["latency"]["p99_ms"]')"
LAT_MAX="$(fig 'f["latency"]["max_ms"]')"
LAT_SEEN="$(fig 'f["latency"]["seen"]')"
LAT_COUNT="$(fig 'f["latency"]["messages"]')"
LAT_RATE="$(fig 'f["latency"]["achieved_rate"]')"
SETUP_S="$(fig 'f["setup_s"]["total"]')"
ROUND_LASTS="$(fig '", ".join("n/a" if r["last_ms"] is None else "%.1f" % r["last_ms"] for r in f["fanout"]["rounds"])')"

# num VALUE DECIMALS: VALUE rounded for the summary ("n/a" stays).
num() { awk -v v="$1" -v d="$2" 'BEGIN { if (v == "n/a" || v == "") print "n/a"; else printf("%." d "f\n", v) }'; }
met() { awk -v v="$1" -v lim="$2" 'BEGIN { print (v != "n/a" && v + 0 <= lim + 0) ? "met" : "NOT met" }'; }
FAN_OK="$(met "$LAST" 250)"
[[ "$ALL_ANSWERED" == True ]] || FAN_OK="NOT met"
MEM_OK="$(met "$KB" 8)"
LAT_OK="$(met "$LAT_P99" 5)"
LAST="$(num "$LAST" 1)" P50="$(num "$P50" 1)" P99="$(num "$P99" 1)" CPU="$(num "$CPU" 1)"
LAT_P50="$(num "$LAT_P50" 2)" LAT_P99="$(num "$LAT_P99" 2)" LAT_MAX="$(num "$LAT_MAX" 2)"

echo
echo "---- summary (paste-ready) ----"
echo "Switchboard event benchmark, $(date -u +%Y-%m-%d), $(nproc) cores, $BUILD build, loopback"
echo "$N group members, one long poll each (GET /events wait=25), one group message, $ROUNDS rounds (medians); 1:1 messages at ${RATE}/s for ${DURATION}s; Python client (bench/event_fanout.py), setup ${SETUP_S} s"
echo
echo "| figure                                         |      value |"
echo "|------------------------------------------------|-----------:|"
printf '| %-46s | %10s |\n' "fan-out: last of $N answered, ms (median)" "$LAST"
printf '| %-46s | %10s |\n' "fan-out: per-connection p50 ms (median)" "$P50"
printf '| %-46s | %10s |\n' "fan-out: per-connection p99 ms (median)" "$P99"
printf '| %-46s | %10s |\n' "fan-out: client CPU ms per round (median)" "$CPU"
printf '| %-46s | %10s |\n' "memory: KB per held long-poll" "$KB"
printf '| %-46s | %10s |\n' "1:1 message send->seen p50 ms" "$LAT_P50"
printf '| %-46s | %10s |\n' "1:1 message send->seen p99 ms" "$LAT_P99"
printf '| %-46s | %10s |\n' "1:1 message send->seen max ms" "$LAT_MAX"
echo
echo "fan-out: last answer per round: $ROUND_LASTS ms -> median $LAST ms (target: all $N answered within 250 ms: $FAN_OK)"
echo "switchboard RSS: $RSS_BEFORE KB before -> $RSS_HELD KB with $N long polls held = $KB KB/poll (target <= 8: $MEM_OK); $RSS_END KB at the end"
echo "1:1 latency: $LAT_SEEN/$LAT_COUNT messages seen at $LAT_RATE msg/s; p99 $LAT_P99 ms (target <= 5: $LAT_OK)"
if [[ "$BUILD" == debug ]]; then
    echo "NOTE: debug build - these figures are a functional check only and mean nothing."
fi
if [[ -s "$TMP/warnings" ]]; then
    echo "warnings:"
    sed 's/^/  - /' "$TMP/warnings"
fi
