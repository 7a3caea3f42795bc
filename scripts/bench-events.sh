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
#      resident memory per held long poll; beside nginx + nchan doing the same
#      fan-out, its rounds alternating with ours (bench/turns.py), so the
#      ratio is judged on the per-round ratios' median and spread;
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
#   BENCH_ROUNDS     alternating fan-out rounds, for Switchboard and for nchan; medians reported  (default 7)
#   BENCH_RATE       1:1 messages per second           (default 200)
#   BENCH_DURATION   seconds of 1:1 messages           (default 10)
#   BENCH_MAX_SECONDS cap on the load clients' run     (default 1800: a first setup hashes every password)
#   BENCH_SEED_CACHE where the set-up users and data are kept for the next run of
#                    the same binary and member count (default .build/bench-seed;
#                    "none": set up every time). Registering 5,000 users hashes
#                    5,000 passwords (minutes); a reused setup reads only cursors.
#   BENCH_SEED_SOURCES the source tree the binary was built from: a kept setup
#                    is then filed under its schema sources, so builds of one
#                    schema share it (make bench and bench-ab.sh pass it);
#                    without it, under the binary's own hash
#   KEEP_TMP=1       keep the temp dir (logs, figures JSON) for inspection
set -euo pipefail

readonly MEMBERS="${BENCH_MEMBERS:-5000}"
readonly ROUNDS="${BENCH_ROUNDS:-7}"
readonly RATE="${BENCH_RATE:-200}"
readonly DURATION="${BENCH_DURATION:-10}"
readonly CLIENT_MAX="${BENCH_MAX_SECONDS:-1800}"
readonly NOFILE_WANTED=$((MEMBERS + 1024))

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CLIENT_PY="$HERE/../bench/event_fanout.py"

BENCH_NAME=bench-events
# shellcheck source=scripts/bench-lib.sh
. "$(dirname "$0")/bench-lib.sh"

# ---------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------
[[ $# -eq 1 ]] || die "usage: $0 path/to/switchboard"
need_switchboard "$1"
[[ -f "$CLIENT_PY" ]] || die "missing $CLIENT_PY"
[[ -f "$HERE/../bench/hold_connections.py" ]] || die "missing bench/hold_connections.py (event_fanout.py imports it)"
command -v python3 >/dev/null || die "python3 is required"
command -v timeout >/dev/null || die "timeout (coreutils) is required"
need_positive_ints MEMBERS ROUNDS DURATION CLIENT_MAX
need_positive_number RATE

# ---------------------------------------------------------------------------
# Cleanup: everything we start is recorded here and stopped on exit.
# ---------------------------------------------------------------------------
SERVER_PID=""
CLIENT_PID=""
NGINX_PID=""
NCHAN_CLIENT_PID=""
BENCH_STOP_ON_EXIT=(CLIENT_PID NCHAN_CLIENT_PID SERVER_PID NGINX_PID:tree)
bench_init_tmp switchboard-bench-events.XXXXXX
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
# A setup done before by this binary (or one of the same schema: BENCH_SEED_SOURCES)
# for this many members is reused: its data directory copied, its users read
# from its state file.
SEED=""
if [[ "${BENCH_SEED_CACHE:-}" != none ]]; then
    if [[ -n "${BENCH_SEED_SOURCES:-}" ]]; then key="schema-$(schema_key "$BENCH_SEED_SOURCES")"
    else key="$(sha1sum "$SWITCHBOARD" | cut -c1-12)"; fi
    SEED="${BENCH_SEED_CACHE:-$HERE/../.build/bench-seed}/events-$MEMBERS-$key"
    if [[ -s "$SEED/state.json" && -d "$SEED/data" ]]; then
        log "reusing the setup in $SEED"
        mkdir -p "$TMP/data" && cp -a "$SEED/data/." "$TMP/data/" && cp "$SEED/state.json" "$TMP/state.json" \
            || die "could not copy the setup in $SEED"
    fi
fi
SEED_IS_NEW=0
[[ -n "$SEED" && ! -s "$TMP/state.json" ]] && SEED_IS_NEW=1
log "starting $SWITCHBOARD ($BUILD build)"
# Cheap password hashes (scrypt N = 2^10) so thousands of registrations take
# seconds; room for every long poll plus the setup connections.
start_switchboard SWITCHBOARD_PASSWORD_SCRYPT_LOG_N=15 SWITCHBOARD_LIMIT_REGISTRATIONS_PER_ADDRESS=1000000/3600 SWITCHBOARD_LIMIT_CALLS_PER_CALLER=1000000/60 SWITCHBOARD_LIMIT_CALLS_PER_CALLEE=1000000/60 SWITCHBOARD_LIMIT_RINGS_PER_DEVICE=1000000/60 SWITCHBOARD_LIMIT_MESSAGES_PER_USER=1000000/60 SWITCHBOARD_MAX_CONNECTIONS=20000 SWITCHBOARD_MAX_CONNECTIONS_PER_ADDRESS=0 SWITCHBOARD_MAX_STREAMS_PER_USER=0
ADDR="$LISTEN_ADDR"
PORT="$LISTEN_PORT"
log "switchboard listening on $ADDR (pid $SERVER_PID)"

# ---------------------------------------------------------------------------
# 3. The anchor, in the same run: nginx + nchan, the same fan-out. Its client
#    takes turns with ours (bench/turns.py): ours, nchan, ours, ... one round
#    each, the other side idle, so the two never share the CPU and the drift of
#    a shared machine falls on both alike.
# ---------------------------------------------------------------------------
command -v nginx >/dev/null || apt_install nginx || die "could not install nginx"
NCHAN_MODULE=/usr/lib/nginx/modules/ngx_nchan_module.so
[[ -f "$NCHAN_MODULE" ]] || apt_install libnginx-mod-nchan || die "could not install libnginx-mod-nchan"
[[ -f "$NCHAN_MODULE" ]] || die "libnginx-mod-nchan installed no $NCHAN_MODULE"
start_nginx "$TMP/nchan" "$(( NOFILE < 30000 ? NOFILE : 30000 ))" \
    "        location = /sub { nchan_subscriber longpoll; nchan_channel_id group; nchan_subscriber_timeout 60s; }
        location = /pub { nchan_publisher; nchan_channel_id group; nchan_store_messages off; }
        location = /status { nchan_stub_status; }" \
    "load_module $NCHAN_MODULE;"
NCHAN_WORKERS="$(child_pids "$NGINX_PID" | paste -sd, -)"
[[ -n "$NCHAN_WORKERS" ]] || die "found no nginx worker processes under pid $NGINX_PID"
echo "ours 1" >"$TMP/turns"
log "starting bench/nchan_fanout.py: $MEMBERS subscribers, $ROUNDS rounds taking turns with ours (nchan workers $NCHAN_WORKERS)"
timeout -k 5 "$CLIENT_MAX" python3 "$HERE/../bench/nchan_fanout.py" --port "$NGINX_PORT" --worker-pids "$NCHAN_WORKERS" \
    --members "$MEMBERS" --rounds "$ROUNDS" --turns "$TMP/turns" --max-seconds "$CLIENT_MAX" \
    --json-out "$TMP/nchan.json" </dev/null &
NCHAN_CLIENT_PID=$!

# ---------------------------------------------------------------------------
# 4. The load client (setup, fan-out, latency); bounded by `timeout`
# ---------------------------------------------------------------------------
# Its progress goes to stderr and its result tables to stdout, both straight
# through; its figures go to figures.json for the summary below. It runs in
# the background so that the INT/TERM traps can stop it.
log "running bench/event_fanout.py: $MEMBERS members, $ROUNDS fan-out rounds, ${RATE}/s for ${DURATION}s (at most ${CLIENT_MAX}s)"
run_load_client --members "$MEMBERS" --rounds "$ROUNDS" --rate "$RATE" --duration "$DURATION" --turns "$TMP/turns" \
    ${SEED:+--state "$TMP/state.json"}
rc=0
wait "$NCHAN_CLIENT_PID" || rc=$?
NCHAN_CLIENT_PID=""
[[ $rc == 0 ]] || die "bench/nchan_fanout.py failed (status $rc)"

# ---------------------------------------------------------------------------
# 5. Stop the servers (ours should exit 0 on SIGTERM) and summarise
# ---------------------------------------------------------------------------
: >"$TMP/warnings"
stop_switchboard_checked
# A new setup is kept (the server stopped, so its files are consistent).
if [[ $SEED_IS_NEW == 1 && -s "$TMP/state.json" ]]; then
    rm -rf "$SEED" && mkdir -p "$SEED" && cp -a "$TMP/data" "$SEED/data" && cp "$TMP/state.json" "$SEED/state.json" \
        && log "kept the setup in $SEED for the next run of this binary" || warn "could not keep the setup in $SEED"
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

stop_pid_tree "$NGINX_PID"
NGINX_PID=""
# Judged on the distribution: each round's ratio (ours / nchan, the rounds taken in turns).
ROUND_RATIOS=($(python3 - "$TMP/figures.json" "$TMP/nchan.json" <<'PY'
import json, sys
ours, nchan = json.load(open(sys.argv[1]))["fanout"]["rounds"], json.load(open(sys.argv[2]))["rounds"]
for a, b in zip(ours, nchan):
    print("n/a" if a["last_ms"] is None or not b["last_ms"] else "%.2f" % (a["last_ms"] / b["last_ms"]))
PY
))
nfig() { python3 -c 'import json, sys; f = json.load(open(sys.argv[1])); v = eval(sys.argv[2]); print("n/a" if v is None else v)' "$TMP/nchan.json" "$1"; }
NCHAN_LAST="$(nfig 'f["median_last_ms"]')"
NCHAN_LASTS="$(nfig '", ".join("n/a" if r["last_ms"] is None else "%.1f" % r["last_ms"] for r in f["rounds"])')"
NCHAN_CPU="$(nfig 'f["median_server_cpu_ms"]')"
NCHAN_KB="$(nfig 'f["kb_per_poll"]')"
NCHAN_OK="$(nfig 'f["all_answered"]')"
[[ "$NCHAN_OK" == True ]] || warn "nchan: not every subscriber got the message in every round"

N="$(fig 'f["fanout"]["members"]')"
LAST="$(fig 'f["fanout"]["median_last_ms"]')"
P50="$(fig 'f["fanout"]["median_p50_ms"]')"
P99="$(fig 'f["fanout"]["median_p99_ms"]')"
ALL_ANSWERED="$(fig 'f["fanout"]["all_answered"]')"
CPU="$(fig 'f["fanout"]["median_client_cpu_ms"]')"
SERVER_CPU="$(fig 'sorted(r["server_cpu_ms"] for r in f["fanout"]["rounds"])[len(f["fanout"]["rounds"]) // 2]')"
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

FAN_OK="$(met "$LAST" 250)"
RATIO="$(median_of "${ROUND_RATIOS[@]}")"
RATIO_SPREAD="$(spread_of 2 "${ROUND_RATIOS[@]}")"
CPU_RATIOS=($(python3 - "$TMP/figures.json" "$TMP/nchan.json" <<'PY'
import json, sys
ours, nchan = json.load(open(sys.argv[1]))["fanout"]["rounds"], json.load(open(sys.argv[2]))["rounds"]
for a, b in zip(ours, nchan):
    print("n/a" if not b["server_cpu_ms"] else "%.2f" % (a["server_cpu_ms"] / b["server_cpu_ms"]))
PY
))
RATIO_OK="$(met "$RATIO" 1.5)"
[[ "$ALL_ANSWERED" == True && "$NCHAN_OK" == True ]] || RATIO_OK="NOT met"
[[ "$ALL_ANSWERED" == True ]] || FAN_OK="NOT met"
MEM_OK="$(met "$KB" 8)"
LAT_OK="$(met "$LAT_P99" 5)"
LAST="$(num "$LAST" 1)" P50="$(num "$P50" 1)" P99="$(num "$P99" 1)" CPU="$(num "$CPU" 1)"
LAT_P50="$(num "$LAT_P50" 2)" LAT_P99="$(num "$LAT_P99" 2)" LAT_MAX="$(num "$LAT_MAX" 2)"

summary_header event
echo "$N group members, one long poll each (GET /events wait=25), one group message, $ROUNDS rounds (medians); 1:1 messages at ${RATE}/s for ${DURATION}s; Python client (bench/event_fanout.py), setup ${SETUP_S} s"
echo
echo "| figure                                         |      value |"
echo "|------------------------------------------------|-----------:|"
printf '| %-46s | %10s |\n' "fan-out: last of $N answered, ms (median)" "$LAST"
printf '| %-46s | %10s |\n' "fan-out: per-connection p50 ms (median)" "$P50"
printf '| %-46s | %10s |\n' "fan-out: per-connection p99 ms (median)" "$P99"
printf '| %-46s | %10s |\n' "fan-out: client CPU ms per round (median)" "$CPU"
printf '| %-46s | %10s |\n' "fan-out: server CPU ms per round (median)" "$(num "$SERVER_CPU" 1)"
printf '| %-46s | %10s |\n' "nchan: last of $N answered, ms (median)" "$(num "$NCHAN_LAST" 1)"
printf '| %-46s | %10s |\n' "nchan: workers' CPU ms per round (median)" "$(num "$NCHAN_CPU" 1)"
printf '| %-46s | %10s |\n' "nchan: KB per held long-poll" "$NCHAN_KB"
printf '| %-46s | %10s |\n' "memory: KB per held long-poll" "$KB"
printf '| %-46s | %10s |\n' "1:1 message send->seen p50 ms" "$LAT_P50"
printf '| %-46s | %10s |\n' "1:1 message send->seen p99 ms" "$LAT_P99"
printf '| %-46s | %10s |\n' "1:1 message send->seen max ms" "$LAT_MAX"
echo
echo "fan-out: last answer per round: $ROUND_LASTS ms -> median $LAST ms (target: all $N answered within 250 ms: $FAN_OK)"
echo "nchan: last answer per round: $NCHAN_LASTS ms; ratio per round: ${ROUND_RATIOS[*]}"
echo "fan-out vs nchan in this run: median of the per-round ratios $RATIO (spread $RATIO_SPREAD; target <= 1.5: $RATIO_OK). Switchboard's figure includes writing $N event rows in one committed transaction before anyone is woken and each member's own feed; nchan's, one in-memory message on one shared channel, nothing stored."
summary_row "$N long polls woken by one group message, last answer ms" "$LAST" "<= 1.5 x nchan" "$RATIO_OK" "nginx + nchan" "$(num "$NCHAN_LAST" 1)" "$RATIO" "$RATIO_SPREAD" "$ROUNDS"
summary_row "  the same, server CPU ms" "$(num "$SERVER_CPU" 1)" "-" "-" "nginx + nchan" "$(num "$NCHAN_CPU" 1)" "$(median_of "${CPU_RATIOS[@]}")" "$(spread_of 2 "${CPU_RATIOS[@]}")" "$ROUNDS"
summary_row "held long poll, KB each" "$KB" "<= 8" "$MEM_OK" "nginx + nchan" "$NCHAN_KB" "$(ratio_of "$KB" "$NCHAN_KB")" "-" 1
summary_row "held long polls per GB of RSS" "$(awk -v k="$KB" 'BEGIN { if (k + 0 > 0) printf "%d\n", 1048576 / k; else print "n/a" }')" "-" "-" "nginx + nchan" "$(awk -v k="$NCHAN_KB" 'BEGIN { if (k + 0 > 0) printf "%d\n", 1048576 / k; else print "n/a" }')" "$(ratio_of "$NCHAN_KB" "$KB")" "-" 1
summary_row "1:1 message send -> seen p99 ms (${RATE}/s)" "$LAT_P99" "<= 5" "$LAT_OK"
echo "switchboard RSS: $RSS_BEFORE KB before -> $RSS_HELD KB with $N long polls held = $KB KB/poll (target <= 8: $MEM_OK); $RSS_END KB at the end"
echo "1:1 latency: $LAT_SEEN/$LAT_COUNT messages seen at $LAT_RATE msg/s; p99 $LAT_P99 ms (target <= 5: $LAT_OK)"
print_debug_note
print_warnings
