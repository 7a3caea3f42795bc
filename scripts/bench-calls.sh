#!/usr/bin/env bash
# Call-setup benchmark: how fast a new 1:1 call reaches the callee's held
# GET /events long poll, on 127.0.0.1.
#
#   usage: scripts/bench-calls.sh path/to/switchboard
#
# Measures (see bench/README.md, "Call benchmark", for how to read them):
#   BENCH_PAIRS (200) caller/callee pairs, each pair friends (one
#   conversation); every callee holds GET /events?wait=25 on its own
#   connection. Callers create 1:1 audio calls (POST /calls) at BENCH_RATE/s
#   for BENCH_DURATION s, round-robin over the pairs; each call's latency runs
#   from the POST being written to the callee's poll returning the
#   `call_changed` event of that call. Each call is cancelled by its caller
#   as soon as it was seen (not measured), so a pair is free again long
#   before its next turn. Also: POST /calls response time, statuses,
#   achieved rate, and the server's CPU time during the run.
# The load client is bench/call_latency.py (Python 3 stdlib only; it imports
# helpers from bench/event_fanout.py and bench/hold_connections.py).
#
# Figures are printed, never asserted: exit 0 when every step ran, non-zero
# with a message on stderr when a step failed. All traffic stays on loopback.
# Every process started here is stopped by the EXIT trap, even on failure.
#
# Environment knobs (all optional):
#   BENCH_PAIRS       caller/callee pairs = held long polls (default 200)
#   BENCH_RATE        POST /calls per second               (default 100)
#   BENCH_DURATION    seconds of calls                     (default 10)
#   BENCH_WARMUP      uncounted warm-up calls              (default 20)
#   BENCH_CONNS       caller keep-alive connections        (default 4)
#   BENCH_MAX_SECONDS cap on the load client's run         (default 110)
#   BENCH_LOG_LEVEL   the server's --log-level             (default warning)
#   KEEP_TMP=1        keep the temp dir (logs, figures JSON) for inspection
set -euo pipefail

readonly PAIRS="${BENCH_PAIRS:-200}"
readonly RATE="${BENCH_RATE:-100}"
readonly DURATION="${BENCH_DURATION:-10}"
readonly WARMUP="${BENCH_WARMUP:-20}"
readonly CONNS="${BENCH_CONNS:-4}"
readonly CLIENT_MAX="${BENCH_MAX_SECONDS:-110}"
readonly NOFILE_WANTED=$((PAIRS + 1024))

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CLIENT_PY="$HERE/../bench/call_latency.py"

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'bench-calls: error: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------
[[ $# -eq 1 ]] || die "usage: $0 path/to/switchboard"
SWITCHBOARD="$1"
[[ -x "$SWITCHBOARD" ]] || die "server binary '$SWITCHBOARD' not found or not executable (build it first)"
SWITCHBOARD="$(cd "$(dirname "$SWITCHBOARD")" && pwd)/$(basename "$SWITCHBOARD")"
[[ -f "$CLIENT_PY" ]] || die "missing $CLIENT_PY"
for dep in event_fanout.py hold_connections.py; do
    [[ -f "$HERE/../bench/$dep" ]] || die "missing bench/$dep (call_latency.py imports it)"
done
command -v python3 >/dev/null || die "python3 is required"
command -v timeout >/dev/null || die "timeout (coreutils) is required"
for knob in PAIRS DURATION CONNS CLIENT_MAX; do
    [[ "${!knob}" =~ ^[1-9][0-9]*$ ]] || die "BENCH_$knob must be a positive integer, got '${!knob}'"
done
[[ "$WARMUP" =~ ^[0-9]+$ ]] || die "BENCH_WARMUP must be a non-negative integer, got '$WARMUP'"
[[ "$RATE" =~ ^[0-9]+([.][0-9]+)?$ ]] && awk -v r="$RATE" 'BEGIN { exit !(r > 0) }' \
    || die "BENCH_RATE must be a positive number, got '$RATE'"

# ---------------------------------------------------------------------------
# Cleanup: everything we start is recorded here and stopped on exit.
# ---------------------------------------------------------------------------
TMP="$(mktemp -d -t switchboard-bench-calls.XXXXXX)"
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
# Cheap password hashes (scrypt N = 2^10) so hundreds of registrations take
# seconds; room for every long poll plus the caller connections.
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
# 3. The load client (setup, long polls, calls); bounded by `timeout`
# ---------------------------------------------------------------------------
# Its progress goes to stderr and its results to stdout, both straight
# through; its figures go to figures.json for the summary below. It runs in
# the background so that the INT/TERM traps can stop it.
log "running bench/call_latency.py: $PAIRS pairs, ${RATE} calls/s for ${DURATION}s, $WARMUP warm-up calls (at most ${CLIENT_MAX}s)"
timeout -k 5 "$CLIENT_MAX" python3 "$CLIENT_PY" --host 127.0.0.1 --port "$PORT" \
    --server-pid "$SERVER_PID" --pairs "$PAIRS" --rate "$RATE" --duration "$DURATION" \
    --warmup "$WARMUP" --conns "$CONNS" \
    --max-seconds "$((CLIENT_MAX - 60 > 30 ? CLIENT_MAX - 60 : 30))" \
    --json-out "$TMP/figures.json" </dev/null &
CLIENT_PID=$!
CLIENT_RC=0
wait "$CLIENT_PID" || CLIENT_RC=$?
CLIENT_PID=""
kill -0 "$SERVER_PID" 2>/dev/null || die "switchboard exited during the benchmark (status: see its log below)"
case "$CLIENT_RC" in
    0) ;;
    124|137) die "bench/call_latency.py did not finish within ${CLIENT_MAX} s (BENCH_MAX_SECONDS)" ;;
    *) die "bench/call_latency.py failed (exit $CLIENT_RC); see its message above" ;;
esac
[[ -s "$TMP/figures.json" ]] || die "bench/call_latency.py wrote no figures"

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
# Problems the client counted (statuses other than 201/200, 409 CALL_BUSY,
# calls never seen, lost connections, calls left ringing, ...).
python3 - "$TMP/figures.json" >>"$TMP/warnings" <<'PY'
import json, sys
with open(sys.argv[1]) as fh:
    f = json.load(fh)
c = f.get("calls", {})
for what, n in sorted(c.get("problems", {}).items()):
    print(f"calls: {what}: {n}")
if c.get("call_busy_409"):
    print(f"calls: {c['call_busy_409']} POST /calls answered 409 CALL_BUSY")
if c.get("waited_for_pair"):
    print(f"calls: {c['waited_for_pair']} time(s) no pair was free when a "
          f"call was due (cancels lag behind; use more BENCH_PAIRS)")
if c.get("waited_for_conn"):
    print(f"calls: {c['waited_for_conn']} time(s) every caller connection "
          f"was busy when a call was due (use more BENCH_CONNS)")
for what, n in sorted(f.get("unexpected_non_2xx", {}).items()):
    print(f"server metrics: {what}: {n}")
if f.get("setup_reconnects"):
    print(f"setup: the server closed the keep-alive setup connection "
          f"{f['setup_reconnects']} time(s)")
PY

N_PAIRS="$(fig 'f["calls"]["pairs"]')"
COUNT="$(fig 'f["calls"]["calls"]')"
SEEN="$(fig 'f["calls"]["seen"]')"
CREATED="$(fig 'f["calls"]["created_201"]')"
ACHIEVED="$(fig 'f["calls"]["achieved_rate"]')"
P50="$(fig 'f["calls"]["p50_ms"]')"
P99="$(fig 'f["calls"]["p99_ms"]')"
MAX="$(fig 'f["calls"]["max_ms"]')"
POST_P50="$(fig 'f["calls"]["post_p50_ms"]')"
POST_P99="$(fig 'f["calls"]["post_p99_ms"]')"
CPU_MS="$(fig 'f["calls"]["server_cpu_ms"]')"
CPU_PCT="$(fig 'f["calls"]["server_cpu_pct"]')"
WINDOW="$(fig 'f["calls"]["window_s"]')"
CLIENT_CPU="$(fig 'f["calls"]["client_cpu_ms"]')"
BUSY="$(fig 'f["calls"]["call_busy_409"]')"
CREATE_ST="$(fig '", ".join("%s: %s" % kv for kv in f["calls"]["create_statuses"].items())')"
CANCEL_ST="$(fig '", ".join("%s: %s" % kv for kv in f["calls"]["cancel_statuses"].items())')"
RSS_BEFORE="$(fig 'f["calls"]["rss_before_kb"]')"
RSS_HELD="$(fig 'f["calls"]["rss_held_kb"]')"
RSS_AFTER="$(fig 'f["calls"]["rss_after_kb"]')"
SETUP_S="$(fig 'f["setup_s"]["total"]')"

# num VALUE DECIMALS: VALUE rounded for the summary ("n/a" stays).
num() { awk -v v="$1" -v d="$2" 'BEGIN { if (v == "n/a" || v == "") print "n/a"; else printf("%." d "f\n", v) }'; }
met() { awk -v v="$1" -v lim="$2" 'BEGIN { print (v != "n/a" && v + 0 <= lim + 0) ? "met" : "NOT met" }'; }
LAT_OK="$(met "$P99" 10)"
P50="$(num "$P50" 2)" P99="$(num "$P99" 2)" MAX="$(num "$MAX" 2)"
POST_P50="$(num "$POST_P50" 2)" POST_P99="$(num "$POST_P99" 2)" CPU_MS="$(num "$CPU_MS" 0)" CLIENT_CPU="$(num "$CLIENT_CPU" 0)"

echo
echo "---- summary (paste-ready) ----"
echo "Switchboard call benchmark, $(date -u +%Y-%m-%d), $(nproc) cores, $BUILD build, loopback"
echo "$N_PAIRS caller/callee pairs, each callee holding GET /events (wait=25); 1:1 audio calls (POST /calls) at ${RATE}/s for ${DURATION}s round-robin, each cancelled once seen; Python client (bench/call_latency.py), setup ${SETUP_S} s"
echo
echo "| figure                                         |      value |"
echo "|------------------------------------------------|-----------:|"
printf '| %-46s | %10s |\n' "POST /calls -> callee's call_changed p50 ms" "$P50"
printf '| %-46s | %10s |\n' "POST /calls -> callee's call_changed p99 ms" "$P99"
printf '| %-46s | %10s |\n' "POST /calls -> callee's call_changed max ms" "$MAX"
printf '| %-46s | %10s |\n' "POST /calls response time p50 ms" "$POST_P50"
printf '| %-46s | %10s |\n' "POST /calls response time p99 ms" "$POST_P99"
printf '| %-46s | %10s |\n' "calls seen / sent" "$SEEN/$COUNT"
printf '| %-46s | %10s |\n' "achieved calls/s" "$ACHIEVED"
printf '| %-46s | %10s |\n' "server CPU ms during the run" "$CPU_MS"
echo
echo "calls: $CREATED/$COUNT created, $SEEN seen by the callee, at $ACHIEVED calls/s; statuses (warm-up included): POST /calls {$CREATE_ST}, cancel {$CANCEL_ST}; 409 CALL_BUSY: $BUSY"
echo "server CPU: $CPU_MS ms in the ${WINDOW} s run = ${CPU_PCT} % of one core (client: $CLIENT_CPU ms); RSS $RSS_BEFORE KB before the polls, $RSS_HELD KB held, $RSS_AFTER KB after the calls, $RSS_END KB at the end"
echo "call latency: p99 $P99 ms (target <= 10: $LAT_OK)"
if [[ "$BUILD" == debug ]]; then
    echo "NOTE: debug build - these figures are a functional check only and mean nothing."
fi
if [[ -s "$TMP/warnings" ]]; then
    echo "warnings:"
    sed 's/^/  - /' "$TMP/warnings"
fi
