#!/usr/bin/env bash
# HTTP benchmark: Switchboard vs. a reference nginx, both on 127.0.0.1.
#
#   usage: scripts/bench-http.sh path/to/switchboard
#
# Measures (see bench/README.md for how to read the figures):
#   1. throughput and p99 latency of GET /healthz with
#      `wrk -t2 -c64 -d10s --latency`, alternating nginx and ours over BENCH_ROUNDS
#      rounds (never at once), medians reported;
#   2. resident memory per idle keep-alive connection, by holding 5,000
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
#   BENCH_ROUNDS    alternating wrk rounds; medians are reported (default 3)
#   BENCH_HOLD      idle connections to hold (default 5000)
#   KEEP_TMP=1      keep the temp dir (wrk output, logs) for inspection
set -euo pipefail

readonly DURATION="${BENCH_DURATION:-10s}"
readonly CONNS="${BENCH_CONNS:-64}"
readonly THREADS="${BENCH_THREADS:-2}"
readonly ROUNDS="${BENCH_ROUNDS:-3}"
readonly HOLD_COUNT="${BENCH_HOLD:-5000}"
readonly WARMUP="2s"
readonly NOFILE_WANTED=20000

# nginx and friends live in sbin, which a non-login PATH may lack.
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
HOLD_PY="$HERE/../bench/hold_connections.py"

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'bench-http: error: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------
[[ $# -eq 1 ]] || die "usage: $0 path/to/switchboard"
SWITCHBOARD="$1"
[[ -x "$SWITCHBOARD" ]] || die "server binary '$SWITCHBOARD' not found or not executable (build it first)"
SWITCHBOARD="$(cd "$(dirname "$SWITCHBOARD")" && pwd)/$(basename "$SWITCHBOARD")"
[[ -f "$HOLD_PY" ]] || die "missing $HOLD_PY"
command -v python3 >/dev/null || die "python3 is required"

# ---------------------------------------------------------------------------
# Cleanup: everything we start is recorded here and stopped on exit.
# ---------------------------------------------------------------------------
TMP="$(mktemp -d -t switchboard-bench.XXXXXX)"
SERVER_PID=""
NGINX_PID=""
HOLD_PID=""
HOLD_FD_OPEN=0

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
    local rc=$? workers
    trap - EXIT INT TERM
    set +e
    if [[ $HOLD_FD_OPEN -eq 1 ]]; then exec 7>&-; fi
    [[ -n "$HOLD_PID" ]] && stop_pid "$HOLD_PID"
    [[ -n "$SERVER_PID" ]] && stop_pid "$SERVER_PID"
    if [[ -n "$NGINX_PID" ]]; then
        workers="$(child_pids "$NGINX_PID")"
        # TERM = nginx fast shutdown; the master stops its workers itself.
        stop_pid "$NGINX_PID"
        if [[ "$STOP_STATUS" == killed ]]; then
            # A SIGKILLed master leaves its workers behind: stop them too.
            for w in $workers; do kill -KILL "$w" 2>/dev/null; done
        fi
    fi
    if [[ $rc -ne 0 ]]; then
        for f in "$TMP/server.err" "$TMP/server.out" "$TMP/nginx/error.log" "$TMP/hold.err"; do
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

# A free TCP port on 127.0.0.1 (bind port 0, read it back, close).
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# Direct children of PID (nginx workers of the master), from /proc.
child_pids() {
    local parent="$1" st pid ppid
    for st in /proc/[0-9]*/status; do
        ppid="$(awk '/^PPid:/ {print $2; exit}' "$st" 2>/dev/null)" || continue
        if [[ "$ppid" == "$parent" ]]; then
            pid="${st#/proc/}"
            echo "${pid%/status}"
        fi
    done
}

# VmRSS in KB of each given PID, summed.
rss_kb() {
    local total=0 pid kb
    for pid in "$@"; do
        kb="$(awk '/^VmRSS:/ {print $2; exit}' "/proc/$pid/status" 2>/dev/null)" || kb=""
        [[ -n "$kb" ]] || die "cannot read VmRSS of pid $pid (process gone?)"
        total=$((total + kb))
    done
    echo "$total"
}

# Wait (bounded) until HOST:PORT accepts TCP connections.
wait_port() {
    local port="$1" pid="$2" name="$3" i
    for ((i = 0; i < 100; i++)); do
        kill -0 "$pid" 2>/dev/null || die "$name exited during startup"
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    die "$name did not accept connections on 127.0.0.1:$port within 10 s"
}

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
        log "WARNING ($name): $(echo "$line" | tr -s ' ' | tr '\n' ';')"
        echo "$name: $(echo "$line" | tr -s ' ' | tr '\n' ';')" >>"$TMP/warnings"
    fi
}

# ratio A B: A/B with 2 decimals ("n/a" when B is 0).
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0) print "n/a"; else printf "%.2f\n", a / b }'; }

# ---------------------------------------------------------------------------
# 1. Tools and limits
# ---------------------------------------------------------------------------
APT_UPDATED=0
apt_install() {
    command -v apt-get >/dev/null || die "'$1' missing and apt-get not available"
    if [[ $APT_UPDATED -eq 0 ]]; then
        log "apt-get update"
        DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || die "apt-get update failed"
        APT_UPDATED=1
    fi
    log "apt-get install -y $*"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >&2
}
command -v wrk >/dev/null || apt_install wrk || die "could not install wrk"
command -v nginx >/dev/null || apt_install nginx-light || apt_install nginx \
    || die "could not install nginx"
command -v wrk >/dev/null || die "wrk still not on PATH after install"
command -v nginx >/dev/null || die "nginx still not on PATH after install"

# Raise the open-file limit for this shell and everything it starts. Try a
# higher hard limit first (needs privilege), then lift the soft limit to it.
ulimit -Hn 30000 2>/dev/null || true
hard_nofile="$(ulimit -Hn)"
if [[ "$hard_nofile" == unlimited ]] || ((hard_nofile >= NOFILE_WANTED)); then
    ulimit -n "$( [[ "$hard_nofile" == unlimited ]] && echo 30000 || echo "$hard_nofile")"
fi
NOFILE="$(ulimit -n)"
((NOFILE >= NOFILE_WANTED)) || die "open-file limit is $NOFILE (hard $hard_nofile); need >= $NOFILE_WANTED"
# nginx's worker_rlimit_nofile cannot exceed our hard limit (it would only log
# a setrlimit alert), so use 30000 when allowed, else the hard limit.
NGINX_RLIMIT=$(( NOFILE < 30000 ? NOFILE : 30000 ))
log "open-file limit: $NOFILE"

BUILD="release"
case "$SWITCHBOARD" in
    */debug/*) BUILD="debug" ;;
esac

# ---------------------------------------------------------------------------
# 2. nginx reference server
# ---------------------------------------------------------------------------
NGINX_PORT="$(free_port)"
mkdir -p "$TMP/nginx" "$TMP/data"
# Temp paths are set explicitly so nothing under /var/lib/nginx is needed.
# scgi/uwsgi ones only when compiled in (nginx-light may lack them).
extra_temp=""
nginx_v="$(nginx -V 2>&1)"
[[ "$nginx_v" == *without-http_scgi_module* ]] || extra_temp+="    scgi_temp_path $TMP/nginx/scgi;"$'\n'
[[ "$nginx_v" == *without-http_uwsgi_module* ]] || extra_temp+="    uwsgi_temp_path $TMP/nginx/uwsgi;"$'\n'
[[ "$nginx_v" == *without-http_fastcgi_module* ]] || extra_temp+="    fastcgi_temp_path $TMP/nginx/fastcgi;"$'\n'
[[ "$nginx_v" == *without-http_proxy_module* ]] || extra_temp+="    proxy_temp_path $TMP/nginx/proxy;"$'\n'

cat >"$TMP/nginx/nginx.conf" <<EOF
# Generated by scripts/bench-http.sh; reference server for the benchmark.
daemon off;
master_process on;
worker_processes 2;             # matches Switchboard's 2 event-loop threads
worker_rlimit_nofile $NGINX_RLIMIT;
pid $TMP/nginx/nginx.pid;
error_log $TMP/nginx/error.log warn;

events {
    worker_connections 20000;
}

http {
    access_log off;
    keepalive_requests 1000000;
    keepalive_timeout 120s;
    client_body_temp_path $TMP/nginx/body;
$extra_temp
    server {
        listen 127.0.0.1:$NGINX_PORT backlog=4096;
        default_type application/json;
        location = /healthz { return 200 '{"status":"ok"}'; }
    }
}
EOF

log "starting nginx on 127.0.0.1:$NGINX_PORT"
nginx -t -q -p "$TMP/nginx" -e "$TMP/nginx/error.log" -c "$TMP/nginx/nginx.conf" 2>"$TMP/nginx/check.err" \
    || die "nginx rejected the generated config: $(cat "$TMP/nginx/check.err")"
nginx -p "$TMP/nginx" -e "$TMP/nginx/error.log" -c "$TMP/nginx/nginx.conf" \
    </dev/null >"$TMP/nginx/stdout.log" 2>&1 &
NGINX_PID=$!
wait_port "$NGINX_PORT" "$NGINX_PID" nginx
NGINX_URL="http://127.0.0.1:$NGINX_PORT/healthz"

# ---------------------------------------------------------------------------
# 3. Switchboard
# ---------------------------------------------------------------------------
log "starting $SWITCHBOARD ($BUILD build)"
# stdout goes to a file so the server can never block on a full pipe; its
# first line is the JSON "listening" record with the bound address.
"$SWITCHBOARD" serve --listen 127.0.0.1:0 --data-dir "$TMP/data" --log-level "${BENCH_LOG_LEVEL:-warning}" \
    </dev/null >"$TMP/server.out" 2>"$TMP/server.err" &
SERVER_PID=$!

OURS_ADDR=""
for ((i = 0; i < 300; i++)); do   # 300 x 0.1 s = 30 s
    # Only look at a complete (newline-terminated) first line.
    if [[ -s "$TMP/server.out" ]] && [[ "$(head -c 65536 "$TMP/server.out" | wc -l)" -ge 1 ]]; then
        OURS_ADDR="$(head -n 1 "$TMP/server.out" | python3 -c '
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
[[ -n "$OURS_ADDR" ]] || die "switchboard printed no listening line within 30 s"
[[ "$OURS_ADDR" == 127.0.0.1:* ]] || die "switchboard listens on '$OURS_ADDR', expected 127.0.0.1:PORT"
OURS_PORT="${OURS_ADDR##*:}"
wait_port "$OURS_PORT" "$SERVER_PID" switchboard
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
    ROUND_RATIOS+=("$(ratio "$o_rps" "$n_rps")")
done
NGINX_RPS="$(printf '%s\n' "${NGINX_ALL[@]}" | median)"
OURS_RPS="$(printf '%s\n' "${OURS_ALL[@]}" | median)"
NGINX_P99="$(printf '%s\n' "${NGINX_P99S[@]}" | median)"
OURS_P99="$(printf '%s\n' "${OURS_P99S[@]}" | median)"
RPS_RATIO="$(ratio "$OURS_RPS" "$NGINX_RPS")"
RPS_OK="$(awk -v r="$RPS_RATIO" 'BEGIN { print (r != "n/a" && r >= 0.6) ? "met" : "NOT met" }')"

echo
echo "Throughput: wrk -t$THREADS -c$CONNS -d$DURATION --latency GET /healthz, median of $ROUNDS alternating rounds"
printf '  %-12s %12s %10s %14s\n' "server" "req/s" "p99 ms" "req/s ratio"
printf '  %-12s %12s %10s %14s\n' "nginx" "$NGINX_RPS" "$NGINX_P99" "1.00"
printf '  %-12s %12s %10s %14s\n' "switchboard" "$OURS_RPS" "$OURS_P99" "$RPS_RATIO"
echo "  per round (req/s nginx / switchboard = ratio):"
for i in "${!ROUND_RATIOS[@]}"; do
    echo "    round $((i + 1)): ${NGINX_ALL[$i]} / ${OURS_ALL[$i]} = ${ROUND_RATIOS[$i]}"
done
echo "  target: ratio (switchboard/nginx req/s) >= 0.6 -> $RPS_OK"

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
        log "WARNING ($name): held only $held of $HOLD_COUNT connections"
        echo "$name: held only $held of $HOLD_COUNT connections" >>"$TMP/warnings"
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
        log "WARNING ($name): hold_connections.py: $(tr '\n' ' ' <"$TMP/hold.err")"
        echo "$name: hold_connections.py: $(tr '\n' ' ' <"$TMP/hold.err")" >>"$TMP/warnings"
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

echo
echo "---- summary (paste-ready) ----"
echo "Switchboard HTTP benchmark, $(date -u +%Y-%m-%d), $(nproc) cores, $BUILD build, loopback"
echo "wrk -t$THREADS -c$CONNS -d$DURATION --latency GET /healthz; $HOLD_COUNT idle keep-alive connections held; nginx $(nginx -v 2>&1 | sed 's|.*nginx/||') with worker_processes 2"
echo
echo "| server      |   req/s | p99 ms | idle KB per held conn |"
echo "|-------------|--------:|-------:|----------------------:|"
printf '| %-11s | %7s | %6s | %21s |\n' "switchboard" "$OURS_RPS" "$OURS_P99" "$OURS_PER"
printf '| %-11s | %7s | %6s | %21s |\n' "nginx" "$NGINX_RPS" "$NGINX_P99" "$NGINX_PER"
echo
echo "req/s ratio switchboard/nginx: $RPS_RATIO (target >= 0.6: $RPS_OK)"
echo "switchboard RSS: $OURS_BEFORE KB idle -> $OURS_AFTER KB with $OURS_HELD held = $OURS_PER KB/conn (target <= 4: $MEM_OK)"
if [[ "$BUILD" == debug ]]; then
    echo "NOTE: debug build - these figures are a functional check only and mean nothing."
fi
if [[ -s "$TMP/warnings" ]]; then
    echo "warnings:"
    sed 's/^/  - /' "$TMP/warnings"
fi
