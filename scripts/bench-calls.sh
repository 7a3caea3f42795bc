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
#   BENCH_RAMP        call rates tried after it, 5 s each, for the capacity
#                     row: the highest whose ring p99 stays < 50 ms
#                     (default 100,200,400,600,800,1000,1200; "" skips it)
#   BENCH_MAX_SECONDS cap on the load client's run         (default 220)
#   BENCH_LOG_LEVEL   the server's --log-level             (default warning)
#   KEEP_TMP=1        keep the temp dir (logs, figures JSON) for inspection
set -euo pipefail

readonly PAIRS="${BENCH_PAIRS:-200}"
readonly RATE="${BENCH_RATE:-100}"
readonly DURATION="${BENCH_DURATION:-10}"
readonly WARMUP="${BENCH_WARMUP:-20}"
readonly CONNS="${BENCH_CONNS:-4}"
readonly CLIENT_MAX="${BENCH_MAX_SECONDS:-220}"
readonly RAMP="${BENCH_RAMP-100,200,400,600,800,1000,1200}"
readonly NOFILE_WANTED=$((PAIRS + 1024))

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CLIENT_PY="$HERE/../bench/call_latency.py"

BENCH_NAME=bench-calls
# shellcheck source=scripts/bench-lib.sh
. "$(dirname "$0")/bench-lib.sh"

# ---------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------
[[ $# -eq 1 ]] || die "usage: $0 path/to/switchboard"
need_switchboard "$1"
[[ -f "$CLIENT_PY" ]] || die "missing $CLIENT_PY"
for dep in event_fanout.py hold_connections.py; do
    [[ -f "$HERE/../bench/$dep" ]] || die "missing bench/$dep (call_latency.py imports it)"
done
command -v python3 >/dev/null || die "python3 is required"
command -v timeout >/dev/null || die "timeout (coreutils) is required"
need_positive_ints PAIRS DURATION CONNS CLIENT_MAX
need_nonneg_int WARMUP
need_positive_number RATE

# ---------------------------------------------------------------------------
# Cleanup: everything we start is recorded here and stopped on exit.
# ---------------------------------------------------------------------------
SERVER_PID=""
CLIENT_PID=""
BENCH_STOP_ON_EXIT=(CLIENT_PID SERVER_PID)
bench_init_tmp switchboard-bench-calls.XXXXXX
BENCH_FAILURE_LOGS=("$TMP/server.err" "$TMP/server.out")

# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------

# (log, die, wait_port, fig, ... come from bench-lib.sh)

# ---------------------------------------------------------------------------
# 1. Limits
# ---------------------------------------------------------------------------
raise_nofile "$NOFILE_WANTED"

BUILD="$(build_type "$SWITCHBOARD")"

# ---------------------------------------------------------------------------
# 2. Switchboard
# ---------------------------------------------------------------------------
log "starting $SWITCHBOARD ($BUILD build)"
# Cheap password hashes (scrypt N = 2^10) so hundreds of registrations take
# seconds; room for every long poll plus the caller connections.
start_switchboard SWITCHBOARD_PASSWORD_SCRYPT_LOG_N=15 SWITCHBOARD_LIMIT_REGISTRATIONS_PER_ADDRESS=1000000/3600 SWITCHBOARD_LIMIT_CALLS_PER_CALLER=1000000/60 SWITCHBOARD_LIMIT_CALLS_PER_CALLEE=1000000/60 SWITCHBOARD_LIMIT_RINGS_PER_DEVICE=1000000/60 SWITCHBOARD_LIMIT_MESSAGES_PER_USER=1000000/60 SWITCHBOARD_MAX_CONNECTIONS=20000 SWITCHBOARD_MAX_CONNECTIONS_PER_ADDRESS=0 SWITCHBOARD_MAX_STREAMS_PER_USER=0
ADDR="$LISTEN_ADDR"
PORT="$LISTEN_PORT"
log "switchboard listening on $ADDR (pid $SERVER_PID)"

# ---------------------------------------------------------------------------
# 3. The load client (setup, long polls, calls); bounded by `timeout`
# ---------------------------------------------------------------------------
# Its progress goes to stderr and its results to stdout, both straight
# through; its figures go to figures.json for the summary below. It runs in
# the background so that the INT/TERM traps can stop it.
log "running bench/call_latency.py: $PAIRS pairs, ${RATE} calls/s for ${DURATION}s, $WARMUP warm-up calls (at most ${CLIENT_MAX}s)"
run_load_client --pairs "$PAIRS" --rate "$RATE" --duration "$DURATION" --warmup "$WARMUP" --conns "$CONNS" --ramp "$RAMP"

# ---------------------------------------------------------------------------
# 4. Stop the server (it should exit 0 on SIGTERM) and summarise
# ---------------------------------------------------------------------------
: >"$TMP/warnings"
stop_switchboard_checked
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

LAT_OK="$(met "$P99" 5)"
# Two transitions per call: created (ringing) and cancelled (ended).
PER_TRANSITION="$(awk -v c="$CPU_MS" -v n="$COUNT" 'BEGIN { if (c == "n/a" || n + 0 == 0) print "n/a"; else printf("%.3f\n", c / n / 2) }')"
TRANSITION_OK="$(met "$PER_TRANSITION" 0.5)"
P50="$(num "$P50" 2)" P99="$(num "$P99" 2)" MAX="$(num "$MAX" 2)"
POST_P50="$(num "$POST_P50" 2)" POST_P99="$(num "$POST_P99" 2)" CPU_MS="$(num "$CPU_MS" 0)" CLIENT_CPU="$(num "$CLIENT_CPU" 0)"

summary_header call
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
echo "call latency: p99 $P99 ms (target <= 5: $LAT_OK)"
echo "server CPU per call transition: $PER_TRANSITION ms ($CPU_MS ms / $COUNT calls / 2 transitions; target <= 0.5: $TRANSITION_OK)"
summary_row "POST /calls -> callee's event p99 ms (${RATE} calls/s)" "$P99" "<= 5" "$LAT_OK"
summary_row "server CPU per call transition, ms" "$PER_TRANSITION" "<= 0.5" "$TRANSITION_OK"
if [[ -n "$RAMP" ]]; then
    CAPACITY="$(fig 'f["capacity"]["calls_per_s"]')"
    STOPPED="$(fig 'f["capacity"]["stopped_by"]')"
    echo "capacity: $(fig '"; ".join("%g/s: p99 %s ms, sent %s/s, server CPU %s %%, client CPU %s %%" % (s["rate"], s["p99_ms"], s["achieved_rate"], s["server_cpu_pct"], s["client_cpu_pct"]) for s in f["capacity"]["steps"])')"
    echo "capacity: $CAPACITY calls/s held ring p99 < 50 ms (SQLite, one instance); stopped by: $STOPPED"
    # Every rate held: the capacity is at least the last one (the load client may be the limit).
    [[ "$STOPPED" == "the last rate tried" ]] && CAPACITY=">= $CAPACITY"
    summary_row "capacity: calls/s with ring p99 < 50 ms (SQLite, 1 instance; tried $RAMP; stopped by: $STOPPED)" "$CAPACITY" "-" "-"
fi
print_debug_note
print_warnings
