#!/usr/bin/env bash
# Usage: scripts/profile-http.sh [path/to/switchboard] [URL path, default /healthz] [log level, default warning]
#
# Where a request's time goes: starts the release server on 127.0.0.1, loads it with
# wrk (-t1 -c32), samples it with `perf record -e cpu-clock -g` for 8 s and prints
# the share of samples per library and the top inclusive symbols of our code.
# cpu-clock is a software clock, so it works in VMs without a PMU. (valgrind
# 3.19, Debian 12's, cannot run Swift 6.3 binaries: it aborts in libdispatch
# even with --tool=none, so no callgrind instruction counts.) Installs perf and
# wrk with apt-get when missing. Figures are printed, never asserted.
set -euo pipefail
BIN="${1:-.build/release/switchboard}"
URL_PATH="${2:-/healthz}"
LEVEL="${3:-warning}"
BENCH_NAME=profile-http
. "$(dirname "$0")/bench-lib.sh"
need_switchboard "$BIN"
command -v wrk >/dev/null || apt_install wrk || die "could not install wrk"
command -v perf >/dev/null || apt_install linux-perf || die "could not install perf"
SERVER_PID=""
BENCH_STOP_ON_EXIT=(SERVER_PID)
bench_init_tmp switchboard-profile.XXXXXX
BUILD="$(build_type "$SWITCHBOARD")"
BENCH_LOG_LEVEL="$LEVEL" start_switchboard
log "switchboard ($BUILD build) on $LISTEN_ADDR, log level $LEVEL; warming up"
wrk -t1 -c32 -d2s "http://$LISTEN_ADDR$URL_PATH" >/dev/null
log "perf record for 8 s under wrk -t1 -c32 GET $URL_PATH"
perf record -F 2000 -e cpu-clock -g -p "$SERVER_PID" -o "$TMP/perf.data" -- sleep 8 >/dev/null 2>&1 &
PERF_PID=$!
wrk -t1 -c32 -d8s "http://$LISTEN_ADDR$URL_PATH" | grep -E "Requests/sec" || true
wait "$PERF_PID" || true
echo
echo "Samples by library (self):"
perf report -i "$TMP/perf.data" --stdio --no-children --sort dso -g none 2>/dev/null | grep -E "^ +[0-9]" | head -8
echo
echo "Top inclusive symbols of Switchboard's own code (share of all samples):"
perf report -i "$TMP/perf.data" --stdio --children --sort symbol -g none 2>/dev/null | grep -E "^ +[0-9]" \
    | grep -E 'Switchboard|Foundation[A-Za-z]*[0-9]' | awk '{ $2 = ""; $3 = ""; print }' | cut -c1-150 | head -25
