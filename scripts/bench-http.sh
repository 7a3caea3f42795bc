#!/usr/bin/env bash
# HTTP benchmark: Switchboard vs. a reference nginx, both on 127.0.0.1.
#
#   usage: scripts/bench-http.sh path/to/switchboard
#
# Measures (see bench/README.md for how to read the figures):
#   1. throughput and p99 latency of GET /healthz with
#      `wrk -t2 -c64 -d10s --latency`, alternating nginx and ours over BENCH_ROUNDS
#      rounds (never at once), medians reported;
#   2. what broken bodies cost everybody else: p99 of GET /healthz (wrk -t1 -c4)
#      idle, and beside 8 clients posting malformed 1 MiB JSON bodies
#      (bench/malformed_bodies.py), anonymous to /auth/login and signed in to
#      POST /calls, alternating over BENCH_ROUNDS rounds; target within 2x idle;
#   3. resident memory per idle keep-alive connection, by holding 5,000
#      connections open with bench/hold_connections.py and comparing RSS.
#
# Figures are printed, never asserted: exit 0 when every step ran, non-zero
# with a message on stderr when a step failed. All traffic stays on loopback.
# Every process started here is stopped by the EXIT trap, even on failure.
#
# Environment knobs (all optional):
#   BENCH_DURATION  main wrk run length      (default 10s)
#   BENCH_CONNS     wrk connections          (default 64)
#   BENCH_THREADS   wrk threads              (default 2)
#   BENCH_ROUNDS    alternating wrk rounds; medians and spreads are reported (default 5)
#   BENCH_HOLD      idle connections to hold (default 5000)
#   BENCH_STALL     wrk run length beside the malformed bodies (default 5s)
#   KEEP_TMP=1      keep the temp dir (wrk output, logs) for inspection
set -euo pipefail

readonly DURATION="${BENCH_DURATION:-10s}"
readonly CONNS="${BENCH_CONNS:-64}"
readonly THREADS="${BENCH_THREADS:-2}"
readonly ROUNDS="${BENCH_ROUNDS:-5}"
readonly HOLD_COUNT="${BENCH_HOLD:-5000}"
readonly WARMUP="2s"
readonly NOFILE_WANTED=20000

# nginx and friends live in sbin, which a non-login PATH may lack.
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
HOLD_PY="$HERE/../bench/hold_connections.py"
FLOOD_PY="$HERE/../bench/malformed_bodies.py"
readonly STALL="${BENCH_STALL:-5s}"

BENCH_NAME=bench-http
# shellcheck source=scripts/bench-lib.sh
. "$(dirname "$0")/bench-lib.sh"

# ---------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------
[[ $# -eq 1 ]] || die "usage: $0 path/to/switchboard"
need_switchboard "$1"
[[ -f "$HOLD_PY" ]] || die "missing $HOLD_PY"
command -v python3 >/dev/null || die "python3 is required"

# ---------------------------------------------------------------------------
# Cleanup: everything we start is recorded here and stopped on exit.
# ---------------------------------------------------------------------------
SERVER_PID=""
NGINX_PID=""
HOLD_PID=""
FLOOD_PID=""
HOLD_FD_OPEN=0
# The holder's stdin FIFO (fd 7) is closed first, so that it exits on EOF.
close_hold_fd() { if [[ $HOLD_FD_OPEN -eq 1 ]]; then exec 7>&-; fi; }
BENCH_CLEANUP_HOOK=close_hold_fd
# TERM = nginx fast shutdown; the master stops its workers itself (":tree":
# a SIGKILLed master's workers are killed too).
BENCH_STOP_ON_EXIT=(HOLD_PID FLOOD_PID SERVER_PID NGINX_PID:tree)
bench_init_tmp switchboard-bench.XXXXXX
BENCH_FAILURE_LOGS=("$TMP/server.err" "$TMP/server.out" "$TMP/nginx/error.log" "$TMP/hold.err" "$TMP/flood.err")

# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------

# (free_port, child_pids, rss_kb, wait_port, ... come from bench-lib.sh)

# Run wrk; store its full output in $TMP/wrk-NAME.txt.
run_wrk() {
    local name="$1" url="$2" duration="$3" out="$TMP/wrk-$1.txt"
    wrk -t"$THREADS" -c"$CONNS" -d"$duration" --latency "$url" >"$out" 2>&1 \
        || die "wrk against $name failed: $(tail -n 3 "$out")"
}

# Parse a wrk --latency output file: prints "REQ_PER_SEC P99_MS".
parse_wrk() {
    awk '
        # "99%  1.23ms" in the Latency Distribution block; unit us|ms|s.
        $1 == "99%" {
            v = $2
            if (v ~ /us$/)      { sub(/us$/, "", v); p99 = v / 1000 }
            else if (v ~ /ms$/) { sub(/ms$/, "", v); p99 = v }
            else if (v ~ /m$/)  { sub(/m$/, "", v);  p99 = v * 60000 }
            else if (v ~ /s$/)  { sub(/s$/, "", v);  p99 = v * 1000 }
        }
        $1 == "Requests/sec:" { rps = $2 }
        END {
            if (rps == "" || p99 == "") exit 1
            printf "%.0f %.3f\n", rps, p99
        }' "$1"
}

# Warn about socket errors / non-2xx responses, which invalidate figures.
wrk_warnings() {
    local name="$1" f="$TMP/wrk-$1.txt" line
    line="$(grep -E 'Socket errors|Non-2xx' "$f" || true)"
    if [[ -n "$line" ]]; then
        warn_from "$name" "$(echo "$line" | tr -s ' ' | tr '\n' ';')"
    fi
}

# ---------------------------------------------------------------------------
# 1. Tools and limits
# ---------------------------------------------------------------------------
command -v wrk >/dev/null || apt_install wrk || die "could not install wrk"
command -v nginx >/dev/null || apt_install nginx-light || apt_install nginx \
    || die "could not install nginx"
command -v wrk >/dev/null || die "wrk still not on PATH after install"
command -v nginx >/dev/null || die "nginx still not on PATH after install"

raise_nofile "$NOFILE_WANTED"
# nginx's worker_rlimit_nofile cannot exceed our hard limit (it would only log
# a setrlimit alert), so use 30000 when allowed, else the hard limit.
NGINX_RLIMIT=$(( NOFILE < 30000 ? NOFILE : 30000 ))

BUILD="$(build_type "$SWITCHBOARD")"

# ---------------------------------------------------------------------------
# 2. nginx reference server
# ---------------------------------------------------------------------------
start_nginx "$TMP/nginx" "$NGINX_RLIMIT" "        default_type application/json;
        location = /healthz { return 200 '{\"status\":\"ok\"}'; }"
NGINX_URL="http://127.0.0.1:$NGINX_PORT/healthz"

# ---------------------------------------------------------------------------
# 3. Switchboard
# ---------------------------------------------------------------------------
log "starting $SWITCHBOARD ($BUILD build)"
# Thousands of connections come from this one address: no per-address cap here.
start_switchboard SWITCHBOARD_MAX_CONNECTIONS_PER_ADDRESS=0 SWITCHBOARD_PASSWORD_SCRYPT_LOG_N=15
OURS_ADDR="$LISTEN_ADDR"
OURS_PORT="$LISTEN_PORT"
OURS_URL="http://$OURS_ADDR/healthz"
log "switchboard listening on $OURS_ADDR"

# ---------------------------------------------------------------------------
# 4. Throughput / latency (sequential)
# ---------------------------------------------------------------------------
log "warm-up: wrk $WARMUP against nginx, then switchboard"
run_wrk warmup-nginx "$NGINX_URL" "$WARMUP"
run_wrk warmup-switchboard "$OURS_URL" "$WARMUP"

# The machine is shared and noisy, so one run each would put drift into the
# ratio: run ROUNDS rounds, flipping the order every round, and take medians.
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "n/a"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
NGINX_ALL=() OURS_ALL=() NGINX_P99S=() OURS_P99S=() ROUND_RATIOS=()
for round in $(seq 1 "$ROUNDS"); do
    if (( round % 2 )); then order=(nginx switchboard); else order=(switchboard nginx); fi
    for name in "${order[@]}"; do
        if [[ $name == nginx ]]; then url="$NGINX_URL"; else url="$OURS_URL"; fi
        log "round $round/$ROUNDS: wrk -t$THREADS -c$CONNS -d$DURATION --latency against $name"
        run_wrk "$name-$round" "$url" "$DURATION"
        wrk_warnings "$name-$round"
    done
    read -r n_rps n_p99 < <(parse_wrk "$TMP/wrk-nginx-$round.txt") \
        || die "could not parse wrk output for nginx: $(cat "$TMP/wrk-nginx-$round.txt")"
    read -r o_rps o_p99 < <(parse_wrk "$TMP/wrk-switchboard-$round.txt") \
        || die "could not parse wrk output for switchboard: $(cat "$TMP/wrk-switchboard-$round.txt")"
    NGINX_ALL+=("$n_rps") OURS_ALL+=("$o_rps") NGINX_P99S+=("$n_p99") OURS_P99S+=("$o_p99")
    ROUND_RATIOS+=("$(ratio_of "$o_rps" "$n_rps")")
done
NGINX_RPS="$(printf '%s\n' "${NGINX_ALL[@]}" | median)"
OURS_RPS="$(printf '%s\n' "${OURS_ALL[@]}" | median)"
NGINX_P99="$(printf '%s\n' "${NGINX_P99S[@]}" | median)"
OURS_P99="$(printf '%s\n' "${OURS_P99S[@]}" | median)"
# Judged on the distribution: the median of the per-round ratios, with their spread.
RPS_RATIO="$(median_of "${ROUND_RATIOS[@]}")"
RPS_SPREAD="$(spread_of 2 "${ROUND_RATIOS[@]}")"
P99_RATIOS=($(ratios_of "${OURS_P99S[*]}" "${NGINX_P99S[*]}"))
P99_RATIO="$(median_of "${P99_RATIOS[@]}")"
RPS_OK="$(awk -v r="$RPS_RATIO" 'BEGIN { print (r != "n/a" && r >= 0.7) ? "met" : "NOT met" }')"

echo
echo "Throughput: wrk -t$THREADS -c$CONNS -d$DURATION --latency GET /healthz, median of $ROUNDS alternating rounds"
printf '  %-12s %12s %10s %14s\n' "server" "req/s" "p99 ms" "req/s ratio"
printf '  %-12s %12s %10s %14s\n' "nginx" "$NGINX_RPS" "$NGINX_P99" "1.00"
printf '  %-12s %12s %10s %14s\n' "switchboard" "$OURS_RPS" "$OURS_P99" "$RPS_RATIO"
echo "  per round (req/s nginx / switchboard = ratio):"
for i in "${!ROUND_RATIOS[@]}"; do
    echo "    round $((i + 1)): ${NGINX_ALL[$i]} / ${OURS_ALL[$i]} = ${ROUND_RATIOS[$i]}"
done
echo "  target: ratio (switchboard/nginx req/s) >= 0.7 -> $RPS_OK"

# ---------------------------------------------------------------------------
# 4b. What broken bodies cost everybody else
# ---------------------------------------------------------------------------
# A few connections, so p99 is the loop's latency, not a queue of our own.
stall_wrk() {
    local name="$1" out="$TMP/wrk-$1.txt"
    wrk -t1 -c4 -d"$STALL" --latency "$OURS_URL" >"$out" 2>&1 || die "wrk ($name) failed: $(tail -n 3 "$out")"
    wrk_warnings "$name"
    parse_wrk "$out" | awk '{ print $2 }'
}
# flood_p99 NAME PATH [TOKEN]: p99 of GET /healthz while 8 clients post malformed 1 MiB bodies.
flood_p99() {
    local name="$1" path="$2" token="${3:-}" i p99
    : >"$TMP/flood-$name.out"
    python3 "$FLOOD_PY" --port "$OURS_PORT" --path "$path" --token "$token" --clients 8 --max-seconds 120 \
        </dev/null >"$TMP/flood-$name.out" 2>"$TMP/flood.err" &
    FLOOD_PID=$!
    for ((i = 0; i < 100; i++)); do
        grep -q '^started' "$TMP/flood-$name.out" && break
        sleep 0.1
    done
    sleep 1   # the clients are posting
    p99="$(stall_wrk "$name")"
    stop_pid "$FLOOD_PID"
    FLOOD_PID=""
    grep '^done' "$TMP/flood-$name.out" | sed "s/^/  $name: /" >&2 || true
    echo "$p99"
}
TOKEN="$(curl -sS -X POST "http://$OURS_ADDR/auth/register" -H 'Content-Type: application/json' \
    -d '{"username":"bench","password":"long enough","displayName":"Bench"}' | sed -n 's/.*"token":"\([^"]*\)".*/\1/p')"
[[ -n "$TOKEN" ]] || die "could not register the signed-in flood's user"
IDLE_P99S=() ANON_P99S=() SIGNED_P99S=()
for round in $(seq 1 "$ROUNDS"); do
    log "round $round/$ROUNDS: /healthz p99 idle, beside anonymous and signed-in malformed 1 MiB bodies"
    IDLE_P99S+=("$(stall_wrk "idle-$round")")
    ANON_P99S+=("$(flood_p99 "anonymous-$round" /auth/login)")
    SIGNED_P99S+=("$(flood_p99 "signed-in-$round" /calls "$TOKEN")")
done
IDLE_P99="$(printf '%s\n' "${IDLE_P99S[@]}" | median)"
ANON_P99="$(printf '%s\n' "${ANON_P99S[@]}" | median)"
SIGNED_P99="$(printf '%s\n' "${SIGNED_P99S[@]}" | median)"
ANON_RATIOS=($(ratios_of "${ANON_P99S[*]}" "${IDLE_P99S[*]}"))
SIGNED_RATIOS=($(ratios_of "${SIGNED_P99S[*]}" "${IDLE_P99S[*]}"))
ANON_RATIO="$(median_of "${ANON_RATIOS[@]}")"
SIGNED_RATIO="$(median_of "${SIGNED_RATIOS[@]}")"
within2() { awk -v r="$1" 'BEGIN { print (r != "n/a" && r <= 2) ? "met" : "NOT met" }'; }
ANON_OK="$(within2 "$ANON_RATIO")" SIGNED_OK="$(within2 "$SIGNED_RATIO")"

echo
echo "Loop stalls: GET /healthz p99 (wrk -t1 -c4 -d$STALL), median of $ROUNDS rounds, beside 8 clients posting malformed 1 MiB JSON"
printf '  %-44s %10s %12s\n' "while" "p99 ms" "x idle"
printf '  %-44s %10s %12s\n' "idle" "$IDLE_P99" "1.00"
printf '  %-44s %10s %12s\n' "anonymous, POST /auth/login (8 KiB limit)" "$ANON_P99" "$ANON_RATIO"
printf '  %-44s %10s %12s\n' "signed in, POST /calls (read and decoded)" "$SIGNED_P99" "$SIGNED_RATIO"
echo "  per round (idle / anonymous / signed in):"
for i in "${!IDLE_P99S[@]}"; do
    echo "    round $((i + 1)): ${IDLE_P99S[$i]} / ${ANON_P99S[$i]} / ${SIGNED_P99S[$i]}"
done
echo "  target: within 2x idle -> anonymous $ANON_OK, signed in $SIGNED_OK"

# ---------------------------------------------------------------------------
# 5. Idle keep-alive memory
# ---------------------------------------------------------------------------
# hold_memory NAME PORT PID...: sets HM_BEFORE / HM_AFTER (RSS in KB summed
# over the given PIDs, before and while holding), HM_HELD (connections held)
# (a warning is recorded when the server closed held connections).
# Runs in this shell so the EXIT trap knows HOLD_PID.
hold_memory() {
    local name="$1" port="$2" i held="" before after done_line closed
    shift 2
    sleep 1   # let the server settle after the wrk runs
    before="$(rss_kb "$@")"

    # The holder waits for EOF on stdin; feed it from a FIFO whose write end
    # (fd 7) we keep open until the measurement is taken.
    rm -f "$TMP/hold.in" && mkfifo "$TMP/hold.in"
    # Created here, not by the background job's redirection: the loop below may read it first.
    : >"$TMP/hold-$name.out"
    python3 "$HOLD_PY" --host 127.0.0.1 --port "$port" --count "$HOLD_COUNT" \
        <"$TMP/hold.in" >"$TMP/hold-$name.out" 2>"$TMP/hold.err" &
    HOLD_PID=$!
    exec 7>"$TMP/hold.in"
    HOLD_FD_OPEN=1

    for ((i = 0; i < 900; i++)); do   # 900 x 0.1 s = 90 s
        held="$(awk '$1 == "held" {print $2; exit}' "$TMP/hold-$name.out")"
        [[ -n "$held" ]] && break
        kill -0 "$HOLD_PID" 2>/dev/null || die "hold_connections.py exited early against $name: $(cat "$TMP/hold.err")"
        sleep 0.1
    done
    [[ -n "$held" ]] || die "hold_connections.py did not report within 90 s against $name"
    ((held > 0)) || die "hold_connections.py could not hold any connection to $name: $(cat "$TMP/hold.err")"
    if ((held != HOLD_COUNT)); then
        warn_from "$name" "held only $held of $HOLD_COUNT connections"
    fi

    sleep 1   # settle: let the server finish any per-connection allocation
    after="$(rss_kb "$@")"

    # Release the connections (EOF on stdin), bounded wait for the holder.
    exec 7>&-
    HOLD_FD_OPEN=0
    for ((i = 0; i < 100; i++)); do   # holder exits on EOF; 10 s at most
        kill -0 "$HOLD_PID" 2>/dev/null || break
        sleep 0.1
    done
    stop_pid "$HOLD_PID"
    HOLD_PID=""
    done_line="$(grep '^done ' "$TMP/hold-$name.out" || true)"
    closed="$(sed -n 's/.*closed_by_peer=\([0-9]*\).*/\1/p' <<<"$done_line")"
    closed="${closed:-?}"
    if [[ "$closed" != 0 ]]; then
        log "WARNING ($name): $closed held connections were closed by the server during the hold"
        echo "$name: $closed held connections closed by the server during the hold" >>"$TMP/warnings"
    fi
    if [[ -s "$TMP/hold.err" ]]; then   # e.g. failed connects, non-200 statuses
        warn_from "$name" "hold_connections.py: $(tr '\n' ' ' <"$TMP/hold.err")"
    fi
    HM_BEFORE="$before" HM_AFTER="$after" HM_HELD="$held"
}

log "holding $HOLD_COUNT idle keep-alive connections to switchboard"
hold_memory switchboard "$OURS_PORT" "$SERVER_PID"
OURS_BEFORE="$HM_BEFORE" OURS_AFTER="$HM_AFTER" OURS_HELD="$HM_HELD"

NGINX_WORKERS="$(child_pids "$NGINX_PID" | tr '\n' ' ')"
[[ -n "${NGINX_WORKERS// /}" ]] || die "found no nginx worker processes under pid $NGINX_PID"
log "holding $HOLD_COUNT idle keep-alive connections to nginx (workers: $NGINX_WORKERS)"
# shellcheck disable=SC2086  # word-splitting the worker pid list is intended
hold_memory nginx "$NGINX_PORT" $NGINX_WORKERS
NGINX_BEFORE="$HM_BEFORE" NGINX_AFTER="$HM_AFTER" NGINX_HELD="$HM_HELD"

per_conn() { awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN { printf "%.2f\n", (b - a) / n }'; }
OURS_PER="$(per_conn "$OURS_BEFORE" "$OURS_AFTER" "$OURS_HELD")"
NGINX_PER="$(per_conn "$NGINX_BEFORE" "$NGINX_AFTER" "$NGINX_HELD")"
MEM_OK="$(awk -v k="$OURS_PER" 'BEGIN { print (k <= 4) ? "met" : "NOT met" }')"

echo
echo "Idle keep-alive memory: $HOLD_COUNT connections, one GET /healthz each, then idle"
printf '  %-12s %12s %14s %8s %12s\n' "server" "RSS before" "RSS held" "held" "KB/conn"
printf '  %-12s %9s KB %11s KB %8s %12s\n' "switchboard" "$OURS_BEFORE" "$OURS_AFTER" "$OURS_HELD" "$OURS_PER"
printf '  %-12s %9s KB %11s KB %8s %12s\n' "nginx (wkrs)" "$NGINX_BEFORE" "$NGINX_AFTER" "$NGINX_HELD" "$NGINX_PER"
echo "  target: <= 4 KB per held connection (switchboard) -> $MEM_OK"

# ---------------------------------------------------------------------------
# 6. Stop the server (it should exit 0 on SIGTERM) and summarise
# ---------------------------------------------------------------------------
stop_pid "$SERVER_PID"
SERVER_EXIT="$STOP_STATUS"
SERVER_PID=""
if [[ "$SERVER_EXIT" != 0 ]]; then
    log "WARNING: switchboard exit status on SIGTERM was $SERVER_EXIT (expected 0)"
    echo "switchboard: exit status on SIGTERM was $SERVER_EXIT (expected 0)" >>"$TMP/warnings"
fi

summary_header HTTP
echo "wrk -t$THREADS -c$CONNS -d$DURATION --latency GET /healthz; $HOLD_COUNT idle keep-alive connections held; nginx $(nginx -v 2>&1 | sed 's|.*nginx/||') with worker_processes 2"
echo
echo "| server      |   req/s | p99 ms | idle KB per held conn |"
echo "|-------------|--------:|-------:|----------------------:|"
printf '| %-11s | %7s | %6s | %21s |\n' "switchboard" "$OURS_RPS" "$OURS_P99" "$OURS_PER"
printf '| %-11s | %7s | %6s | %21s |\n' "nginx" "$NGINX_RPS" "$NGINX_P99" "$NGINX_PER"
echo
echo "req/s ratio switchboard/nginx: $RPS_RATIO (target >= 0.7: $RPS_OK)"
summary_row "GET /healthz req/s (wrk, $CONNS connections)" "$OURS_RPS" ">= 0.7 x nginx" "$RPS_OK" "nginx return 200" "$NGINX_RPS" "$RPS_RATIO" "$RPS_SPREAD" "$ROUNDS"
summary_row "GET /healthz p99 ms" "$OURS_P99" "-" "-" "nginx return 200" "$NGINX_P99" "$P99_RATIO" "$(spread_of 2 "${P99_RATIOS[@]}")" "$ROUNDS"
summary_row "GET /healthz p99 ms beside 8 anonymous malformed 1 MiB posters" "$ANON_P99" "<= 2 x idle" "$ANON_OK" "idle (wrk -c4)" "$IDLE_P99" "$ANON_RATIO" "$(spread_of 2 "${ANON_RATIOS[@]}")" "$ROUNDS"
summary_row "GET /healthz p99 ms beside 8 signed-in malformed 1 MiB posters" "$SIGNED_P99" "<= 2 x idle" "$SIGNED_OK" "idle (wrk -c4)" "$IDLE_P99" "$SIGNED_RATIO" "$(spread_of 2 "${SIGNED_RATIOS[@]}")" "$ROUNDS"
# Memory is one hold each: a second hold in the same process reuses the first one's pages.
summary_row "idle keep-alive connection, KB each" "$OURS_PER" "<= 4" "$MEM_OK" "nginx" "$NGINX_PER" "$(ratio_of "$OURS_PER" "$NGINX_PER")" "-" 1
echo "switchboard RSS: $OURS_BEFORE KB idle -> $OURS_AFTER KB with $OURS_HELD held = $OURS_PER KB/conn (target <= 4: $MEM_OK)"
print_debug_note
print_warnings
