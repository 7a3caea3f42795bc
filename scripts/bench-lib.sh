# shellcheck shell=bash
# Shared helpers of the benchmark scripts (scripts/bench-*.sh). Source it
# right after `set -euo pipefail`:
#
#   BENCH_NAME=bench-foo
#   . "$(dirname "$0")/bench-lib.sh"
#
# Defines functions and two globals (STOP_STATUS, APT_UPDATED) only; it runs
# nothing and installs no trap until the script calls bench_init_tmp.
#
# Script-level variables the helpers read (set them before the call):
#   BENCH_NAME           prefix of die's messages ("bench-http")  [die]
#   TMP                  the temp dir (bench_init_tmp sets it)     [most]
#   BENCH_STOP_ON_EXIT   array of names of variables holding PIDs, stopped in
#                        this order by the EXIT trap; "NAME:tree" also kills
#                        the direct children if the process had to be SIGKILLed
#                        (an nginx master's workers)               [bench_cleanup]
#   BENCH_FAILURE_LOGS   array of files whose last lines are shown on failure
#                                                                  [bench_cleanup]
#   BENCH_CLEANUP_HOOK   optional function run first by the EXIT trap
#   SWITCHBOARD          absolute path of the server binary        [start_switchboard]
#   BENCH_LOG_LEVEL      the server's --log-level (default warning) [start_switchboard]
#   BUILD                "release" or "debug"                      [print_debug_note]
#   CLIENT_PY, CLIENT_MAX, PORT, SERVER_PID                        [run_load_client]

# ---------------------------------------------------------------------------
# Messages
# ---------------------------------------------------------------------------

# log MSG...: progress line on stderr.
log() { printf '==> %s\n' "$*" >&2; }

# die MSG...: "$BENCH_NAME: error: MSG" on stderr, exit 1 (the EXIT trap cleans up).
die() { printf '%s: error: %s\n' "${BENCH_NAME:-bench}" "$*" >&2; exit 1; }

# warn MSG...: log a warning and record it in $TMP/warnings for the summary.
warn() { log "WARNING: $*"; echo "$*" >>"$TMP/warnings"; }

# warn_from NAME MSG...: like warn, attributed to NAME: logs
# "WARNING (NAME): MSG", records "NAME: MSG".
warn_from() {
    local name="$1"
    shift
    log "WARNING ($name): $*"
    echo "$name: $*" >>"$TMP/warnings"
}

# ---------------------------------------------------------------------------
# Arguments and checks
# ---------------------------------------------------------------------------

# abs_path PATH: PATH with its directory made absolute.
abs_path() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }

# need_switchboard PATH: sets SWITCHBOARD to the absolute path of the server
# binary PATH, or dies when it is not an executable file.
need_switchboard() {
    SWITCHBOARD="$1"
    [[ -x "$SWITCHBOARD" ]] || die "server binary '$SWITCHBOARD' not found or not executable (build it first)"
    SWITCHBOARD="$(abs_path "$SWITCHBOARD")"
}

# need_positive_ints VAR...: dies unless each variable holds a positive
# integer (reported as the knob BENCH_VAR).
need_positive_ints() {
    local knob
    for knob in "$@"; do
        [[ "${!knob}" =~ ^[1-9][0-9]*$ ]] || die "BENCH_$knob must be a positive integer, got '${!knob}'"
    done
}

# need_nonneg_int VAR: dies unless the variable holds an integer >= 0.
need_nonneg_int() {
    [[ "${!1}" =~ ^[0-9]+$ ]] || die "BENCH_$1 must be a non-negative integer, got '${!1}'"
}

# need_positive_number VAR: dies unless the variable holds a number > 0
# (digits, optionally a decimal fraction).
need_positive_number() {
    if ! [[ "${!1}" =~ ^[0-9]+([.][0-9]+)?$ ]] || ! awk -v r="${!1}" 'BEGIN { exit !(r > 0) }'; then
        die "BENCH_$1 must be a positive number, got '${!1}'"
    fi
}

# build_type PATH...: "debug" when any PATH lies under a debug/ directory,
# else "release".
build_type() {
    case "$*" in
        */debug/*) echo debug ;;
        *) echo release ;;
    esac
}

# ---------------------------------------------------------------------------
# Processes and cleanup
# ---------------------------------------------------------------------------

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

# stop_pid_tree PID: stop_pid, and when PID had to be SIGKILLed also SIGKILL
# its direct children (a SIGKILLed nginx master leaves its workers behind;
# on TERM the master stops them itself).
stop_pid_tree() {
    local pid="$1" children w
    children="$(child_pids "$pid")"
    stop_pid "$pid"
    if [[ "$STOP_STATUS" == killed ]]; then
        for w in $children; do kill -KILL "$w" 2>/dev/null; done
    fi
    return 0
}

# child_pids PID: the direct children of PID, from /proc.
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

# bench_cleanup: the EXIT trap. Runs BENCH_CLEANUP_HOOK, stops every PID
# named in BENCH_STOP_ON_EXIT, shows the tails of BENCH_FAILURE_LOGS when the
# script failed, removes $TMP (unless KEEP_TMP=1) and exits with the
# script's status.
bench_cleanup() {
    local rc=$? entry var f
    trap - EXIT INT TERM
    set +e
    if [[ -n "${BENCH_CLEANUP_HOOK:-}" ]]; then "$BENCH_CLEANUP_HOOK"; fi
    for entry in ${BENCH_STOP_ON_EXIT[@]+"${BENCH_STOP_ON_EXIT[@]}"}; do
        var="${entry%:tree}"
        [[ -n "${!var:-}" ]] || continue
        if [[ "$entry" == *:tree ]]; then stop_pid_tree "${!var}"; else stop_pid "${!var}"; fi
    done
    if [[ $rc -ne 0 ]]; then
        for f in ${BENCH_FAILURE_LOGS[@]+"${BENCH_FAILURE_LOGS[@]}"}; do
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

# bench_init_tmp TEMPLATE: creates the temp dir TMP (mktemp -d -t TEMPLATE)
# and installs the EXIT (bench_cleanup), INT and TERM traps.
bench_init_tmp() {
    TMP="$(mktemp -d -t "$1")"
    trap bench_cleanup EXIT
    trap 'log "interrupted"; exit 130' INT
    trap 'log "terminated"; exit 143' TERM
}

# ---------------------------------------------------------------------------
# Ports, memory, limits
# ---------------------------------------------------------------------------

# free_port: a free TCP port on 127.0.0.1 (bind port 0, read it back, close).
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# wait_port PORT PID NAME: wait (bounded, 10 s) until 127.0.0.1:PORT accepts
# TCP connections; dies when PID exits first or on timeout.
wait_port() {
    local port="$1" pid="$2" name="$3" i
    for ((i = 0; i < 100; i++)); do
        kill -0 "$pid" 2>/dev/null || die "$name exited during startup"
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    die "$name did not accept connections on 127.0.0.1:$port within 10 s"
}

# vmrss_kb PID: VmRSS of PID in KB (fails when /proc/PID is gone).
vmrss_kb() { awk '/^VmRSS:/ {print $2; exit}' "/proc/$1/status" 2>/dev/null; }

# rss_kb PID...: VmRSS in KB of each given PID, summed; dies if one is gone.
rss_kb() {
    local total=0 pid kb
    for pid in "$@"; do
        kb="$(vmrss_kb "$pid")" || kb=""
        [[ -n "$kb" ]] || die "cannot read VmRSS of pid $pid (process gone?)"
        total=$((total + kb))
    done
    echo "$total"
}

# raise_nofile WANTED: raise the open-file limit of this shell (and all it
# starts) to at least WANTED, or die. Tries a higher hard limit first (needs
# privilege), then lifts the soft limit to it. Sets NOFILE.
raise_nofile() {
    local wanted="$1" hard_nofile
    ulimit -Hn 30000 2>/dev/null || true
    hard_nofile="$(ulimit -Hn)"
    if [[ "$hard_nofile" == unlimited ]] || ((hard_nofile >= wanted)); then
        ulimit -n "$( [[ "$hard_nofile" == unlimited ]] && echo 30000 || echo "$hard_nofile")"
    fi
    NOFILE="$(ulimit -n)"
    ((NOFILE >= wanted)) || die "open-file limit is $NOFILE (hard $hard_nofile); need >= $wanted"
    log "open-file limit: $NOFILE"
}

# start_nginx DIR RLIMIT SERVER_BODY [MAIN_EXTRA]: writes DIR/nginx.conf (2
# workers, to match Switchboard's 2 event loops; no access log; temp paths
# under DIR) with one server on a free 127.0.0.1 port whose body is
# SERVER_BODY, starts nginx in the foreground of a background job and waits
# for the port. MAIN_EXTRA goes at the top (load_module lines). Sets
# NGINX_PID and NGINX_PORT; the caller stops it (stop_pid_tree).
start_nginx() {
    local dir="$1" rlimit="$2" body="$3" main_extra="${4:-}" extra_temp="" nginx_v
    NGINX_PORT="$(free_port)"
    mkdir -p "$dir"
    # scgi/uwsgi/fastcgi/proxy temp paths only when compiled in (nginx-light may lack them).
    nginx_v="$(nginx -V 2>&1)"
    [[ "$nginx_v" == *without-http_scgi_module* ]] || extra_temp+="    scgi_temp_path $dir/scgi;"$'\n'
    [[ "$nginx_v" == *without-http_uwsgi_module* ]] || extra_temp+="    uwsgi_temp_path $dir/uwsgi;"$'\n'
    [[ "$nginx_v" == *without-http_fastcgi_module* ]] || extra_temp+="    fastcgi_temp_path $dir/fastcgi;"$'\n'
    [[ "$nginx_v" == *without-http_proxy_module* ]] || extra_temp+="    proxy_temp_path $dir/proxy;"$'\n'
    cat >"$dir/nginx.conf" <<NGINXCONF
# Generated by scripts/bench-lib.sh (start_nginx); a reference server for the benchmarks.
$main_extra
daemon off;
master_process on;
worker_processes 2;             # matches Switchboard's 2 event-loop threads
worker_rlimit_nofile $rlimit;
pid $dir/nginx.pid;
error_log $dir/error.log warn;

events {
    worker_connections 20000;
}

http {
    access_log off;
    keepalive_requests 1000000;
    keepalive_timeout 120s;
    client_body_temp_path $dir/body;
$extra_temp
    server {
        listen 127.0.0.1:$NGINX_PORT backlog=4096;
$body
    }
}
NGINXCONF
    log "starting nginx on 127.0.0.1:$NGINX_PORT ($dir)"
    nginx -t -q -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf" 2>"$dir/check.err" \
        || die "nginx rejected the generated config: $(cat "$dir/check.err")"
    nginx -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf" </dev/null >"$dir/stdout.log" 2>&1 &
    NGINX_PID=$!
    wait_port "$NGINX_PORT" "$NGINX_PID" nginx
}

# ---------------------------------------------------------------------------
# Installing tools
# ---------------------------------------------------------------------------

# apt_install PKG...: apt-get install (apt-get update once per run).
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

# pip_module MODULE [PACKAGE] [WHY]: true when python3 can import MODULE,
# pip-installing PACKAGE (default MODULE) first if needed.
pip_module() {
    local module="$1" package="${2:-$1}" why="${3:-}"
    python3 -c "import $module" >/dev/null 2>&1 && return 0
    log "pip install $package${why:+ ($why)}"
    python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore "$package" >&2 || true
    python3 -c "import $module" >/dev/null 2>&1
}

# ---------------------------------------------------------------------------
# Servers
# ---------------------------------------------------------------------------

# wait_listening PID OUT NAME WHOSE [MODE LABEL]: wait (30 s) for the first,
# complete stdout line (in file OUT) of the server PID, the JSON "listening"
# record, and check it names 127.0.0.1:PORT (and "mode": MODE when given;
# LABEL describes that record in the error). NAME and WHOSE name the server
# in messages ("switchboard" / "the server's"). Sets LISTEN_ADDR, LISTEN_PORT.
wait_listening() {
    local pid="$1" out="$2" name="$3" whose="$4" mode="${5:-}" label="${6:-}" i
    LISTEN_ADDR=""
    for ((i = 0; i < 300; i++)); do   # 300 x 0.1 s = 30 s
        # Only look at a complete (newline-terminated) first line.
        if [[ -s "$out" ]] && [[ "$(head -c 65536 "$out" | wc -l)" -ge 1 ]]; then
            LISTEN_ADDR="$(head -n 1 "$out" | python3 -c '
import json, sys
mode, label = sys.argv[1], sys.argv[2]
try:
    rec = json.loads(sys.stdin.readline())
except ValueError:
    sys.exit("first stdout line is not JSON")
if rec.get("msg") != "listening" or not rec.get("address") or (mode and rec.get("mode") != mode):
    what = label + " " if label else ""
    sys.exit(f"first stdout line is not a {what}listening record with an address")
print(rec["address"])
' "$mode" "$label")" || die "could not parse $whose first stdout line: $(head -n 1 "$out")"
            break
        fi
        kill -0 "$pid" 2>/dev/null || die "$name exited during startup"
        sleep 0.1
    done
    [[ -n "$LISTEN_ADDR" ]] || die "$name printed no listening line within 30 s"
    [[ "$LISTEN_ADDR" == 127.0.0.1:* ]] || die "$name listens on '$LISTEN_ADDR', expected 127.0.0.1:PORT"
    LISTEN_PORT="${LISTEN_ADDR##*:}"
}

# start_switchboard [VAR=VALUE...]: start `$SWITCHBOARD serve` on
# 127.0.0.1:0 with data in $TMP/data and the given environment; stdout goes
# to $TMP/server.out (never a pipe it could block on), stderr to
# $TMP/server.err. Waits until it accepts connections. Sets SERVER_PID,
# LISTEN_ADDR, LISTEN_PORT.
start_switchboard() {
    mkdir -p "$TMP/data"
    env "$@" "$SWITCHBOARD" serve --listen 127.0.0.1:0 --data-dir "$TMP/data" --log-level "${BENCH_LOG_LEVEL:-warning}" \
        </dev/null >"$TMP/server.out" 2>"$TMP/server.err" &
    SERVER_PID=$!
    wait_listening "$SERVER_PID" "$TMP/server.out" switchboard "the server's"
    wait_port "$LISTEN_PORT" "$SERVER_PID" switchboard
}

# stop_switchboard_checked: stop the server (it should exit 0 on SIGTERM) and
# warn about a bad exit status and anything it logged at warning level or
# above. Sets RSS_END (its last RSS in KB, "?" if unknown) and SERVER_EXIT.
stop_switchboard_checked() {
    # shellcheck disable=SC2034  # RSS_END is read by the calling script
    RSS_END="$(vmrss_kb "$SERVER_PID" || echo "?")"
    stop_pid "$SERVER_PID"
    SERVER_EXIT="$STOP_STATUS"
    SERVER_PID=""
    [[ "$SERVER_EXIT" == 0 ]] || warn "switchboard: exit status on SIGTERM was $SERVER_EXIT (expected 0)"
    if [[ -s "$TMP/server.err" ]]; then
        warn "switchboard wrote $(wc -l <"$TMP/server.err") line(s) to stderr at log level ${BENCH_LOG_LEVEL:-warning}; first: $(head -n 1 "$TMP/server.err" | cut -c1-300)"
    fi
    # Lines after the first on stdout are warnings/errors (info is filtered out).
    if [[ "$(wc -l <"$TMP/server.out")" -gt 1 ]]; then
        warn "switchboard logged $(($(wc -l <"$TMP/server.out") - 1)) line(s) at warning level or above; first: $(sed -n 2p "$TMP/server.out" | cut -c1-300)"
    fi
}

# run_load_client ARG...: run the Python load client $CLIENT_PY against
# 127.0.0.1:$PORT (server $SERVER_PID) with ARG..., bounded by `timeout
# $CLIENT_MAX`, its figures to $TMP/figures.json. Runs in the background in
# this shell (CLIENT_PID) so the INT/TERM traps can stop it; dies when it
# fails, times out or writes no figures, or when the server died.
# shellcheck disable=SC2153  # CLIENT_PY and PORT are the script's
run_load_client() {
    local name rc=0
    name="bench/$(basename "$CLIENT_PY")"
    timeout -k 5 "$CLIENT_MAX" python3 "$CLIENT_PY" --host 127.0.0.1 --port "$PORT" \
        --server-pid "$SERVER_PID" "$@" \
        --max-seconds "$((CLIENT_MAX - 60 > 30 ? CLIENT_MAX - 60 : 30))" \
        --json-out "$TMP/figures.json" </dev/null &
    CLIENT_PID=$!
    wait "$CLIENT_PID" || rc=$?
    CLIENT_PID=""
    kill -0 "$SERVER_PID" 2>/dev/null || die "switchboard exited during the benchmark (status: see its log below)"
    case "$rc" in
        0) ;;
        124|137) die "$name did not finish within ${CLIENT_MAX} s (BENCH_MAX_SECONDS)" ;;
        *) die "$name failed (exit $rc); see its message above" ;;
    esac
    [[ -s "$TMP/figures.json" ]] || die "$name wrote no figures"
}

# schema_key DIR: a short hash of the database schema sources in the source tree
# DIR (every *Schema*.swift under DIR/Sources): builds with the same key read and
# write the same database, so a kept benchmark setup serves them all.
schema_key() {
    find "$1/Sources" -name '*Schema*.swift' | sort | xargs cat | sha1sum | cut -c1-12
}

# ---------------------------------------------------------------------------
# Summary
# ---------------------------------------------------------------------------

# fig EXPR: a value from the client's figures JSON ($TMP/figures.json), as
# text ("n/a" if missing). EXPR indexes the decoded object `f`, e.g.
# 'f["fanout"]["kb_per_poll"]'.
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

# num VALUE DECIMALS: VALUE rounded for the summary ("n/a" stays).
num() { awk -v v="$1" -v d="$2" 'BEGIN { if (v == "n/a" || v == "") print "n/a"; else printf("%." d "f\n", v) }'; }

# met VALUE LIMIT: "met" when VALUE <= LIMIT, else "NOT met" (also for n/a).
met() { awk -v v="$1" -v lim="$2" 'BEGIN { print (v != "n/a" && v + 0 <= lim + 0) ? "met" : "NOT met" }'; }

# summary_row FIGURE VALUE TARGET VERDICT [ANCHOR ANCHOR_VALUE RATIO [SPREAD [ROUNDS]]]: one row
# of the `make bench` summary (bench/summary.py), appended to
# $BENCH_SUMMARY_DIR/$BENCH_NAME.tsv when BENCH_SUMMARY_DIR is set. TARGET and
# VERDICT may be "-" (a figure shown for context); the anchor is the reference
# measured in the same run. VALUE and RATIO are medians over ROUNDS rounds; SPREAD
# is the lowest and highest round (spread_of), of the ratio when there is an anchor.
summary_row() {
    [[ -n "${BENCH_SUMMARY_DIR:-}" ]] || return 0
    mkdir -p "$BENCH_SUMMARY_DIR"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "${5:--}" "${6:--}" "${7:--}" "${8:--}" "${9:-1}" \
        >>"$BENCH_SUMMARY_DIR/${BENCH_NAME:-bench}.tsv"
}

# median_of VALUE...: the median (n/a values are skipped; n/a when none is left).
median_of() {
    printf '%s\n' "$@" | awk '$1 != "n/a" && $1 != ""' | sort -g \
        | awk '{ v[NR] = $1 } END { if (NR == 0) print "n/a"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# spread_of DECIMALS VALUE...: "lowest–highest" of the values, rounded ("-" for fewer than two).
spread_of() {
    local decimals="$1"
    shift
    printf '%s\n' "$@" | awk '$1 != "n/a" && $1 != ""' | sort -g \
        | awk -v d="$decimals" '{ v[NR] = $1 } END { if (NR < 2) print "-"; else printf("%." d "f–%." d "f\n", v[1], v[NR]) }'
}

# ratios_of A_VALUES B_VALUES: the per-round ratios A[i] / B[i] of two space-separated lists.
ratios_of() {
    local -a a b
    read -r -a a <<<"$1"
    read -r -a b <<<"$2"
    local i
    for i in "${!a[@]}"; do ratio_of "${a[$i]}" "${b[$i]:-n/a}"; done
}

# ratio_of A B: A / B with two decimals, n/a when either is missing or B is 0.
ratio_of() {
    awk -v a="$1" -v b="$2" 'BEGIN { if (a == "n/a" || b == "n/a" || a == "" || b == "" || b + 0 == 0) print "n/a"; else printf("%.2f\n", a / b) }'
}

# summary_header KIND: the start of the paste-ready summary.
summary_header() {
    echo
    echo "---- summary (paste-ready) ----"
    echo "Switchboard $1 benchmark, $(date -u +%Y-%m-%d), $(nproc) cores, $BUILD build, loopback"
}

# print_debug_note: the debug-build caveat, for a $BUILD of debug.
print_debug_note() {
    if [[ "$BUILD" == debug ]]; then
        echo "NOTE: debug build - these figures are a functional check only and mean nothing."
    fi
}

# print_warnings: the recorded warnings ($TMP/warnings), if any.
print_warnings() {
    if [[ -s "$TMP/warnings" ]]; then
        echo "warnings:"
        sed 's/^/  - /' "$TMP/warnings"
    fi
}
