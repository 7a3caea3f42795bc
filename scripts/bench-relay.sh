#!/usr/bin/env bash
# The built-in audio relay under load: concurrent 1:1 calls (both audio sockets sending a frame
# every 20 ms), frame loss, added latency and the server's CPU per call; then the WebSocket
# path beside Python's `websockets` echo server (bench/ws_echo_server.py).
#
#   usage: scripts/bench-relay.sh path/to/switchboard path/to/switchboard-dev
#
# Knobs: BENCH_RELAY_CALLS (10,50,100,150,200,300), BENCH_RELAY_SECONDS (10). Figures are printed, never
# asserted; with BENCH_SUMMARY_DIR they also go to bench-relay.tsv for the summary table.
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: $0 path/to/switchboard path/to/switchboard-dev" >&2; exit 2; }
here="$(cd "$(dirname "$0")/.." && pwd)"
out=()
if [[ -n "${BENCH_SUMMARY_DIR:-}" ]]; then
    mkdir -p "$BENCH_SUMMARY_DIR"
    out=(--out "$BENCH_SUMMARY_DIR/bench-relay.tsv")
fi
ulimit -n 65536 2>/dev/null || true
"$2" bench relay --server "$1" --calls "${BENCH_RELAY_CALLS:-10,50,100,150,200,300}" --seconds "${BENCH_RELAY_SECONDS:-10}" \
    --echo-anchor "$here/bench/ws_echo_server.py" "${out[@]}"
