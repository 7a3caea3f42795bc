#!/usr/bin/env bash
# Usage: scripts/bench-ab-calls.sh BINARY_A BINARY_B
#
# Before/after figure for a change to the call path: starts both server builds on
# 127.0.0.1 (fresh data directories, cheap password hashes) and runs
# bench/ab_calls.py, which paces the same create + cancel calls against each in
# alternating turns and prints each one's server CPU per call transition and the
# ratio B / A. Alternating turns cancel out the drift of a shared machine, which
# moves the call benchmark's absolute figure by a third from one hour to the next.
# Run a build against itself to see the noise floor (B/A within a few percent).
# AB_CALLS (1000), AB_BLOCKS (20) and AB_PAUSE (0.005 s) override the defaults.
# Figures are printed, never asserted.
set -euo pipefail
BENCH_NAME=bench-ab-calls
. "$(dirname "$0")/bench-lib.sh"
[[ $# -eq 2 ]] || die "usage: scripts/bench-ab-calls.sh BINARY_A BINARY_B"
A_BIN="$(abs_path "$1")"; B_BIN="$(abs_path "$2")"
[[ -x "$A_BIN" && -x "$B_BIN" ]] || die "both arguments must be switchboard binaries"
SERVER_A=""; SERVER_B=""
BENCH_STOP_ON_EXIT=(SERVER_A SERVER_B)
bench_init_tmp switchboard-ab.XXXXXX
start_one() {   # start_one BINARY NAME: sets STARTED_PID and STARTED_PORT
    mkdir -p "$TMP/$2"
    SWITCHBOARD_PASSWORD_SCRYPT_LOG_N=15 SWITCHBOARD_LIMIT_REGISTRATIONS_PER_ADDRESS=1000000/3600 SWITCHBOARD_LIMIT_CALLS_PER_CALLER=1000000/60 SWITCHBOARD_LIMIT_CALLS_PER_CALLEE=1000000/60 SWITCHBOARD_LIMIT_RINGS_PER_DEVICE=1000000/60 SWITCHBOARD_LIMIT_MESSAGES_PER_USER=1000000/60 "$1" serve --listen 127.0.0.1:0 --data-dir "$TMP/$2/data" --log-level warning \
        </dev/null >"$TMP/$2/server.out" 2>"$TMP/$2/server.err" &
    STARTED_PID=$!
    wait_listening "$STARTED_PID" "$TMP/$2/server.out" "server $2" "server $2's"
    wait_port "$LISTEN_PORT" "$STARTED_PID" "server $2"
    STARTED_PORT="$LISTEN_PORT"
}
start_one "$A_BIN" A; SERVER_A=$STARTED_PID; PORT_A=$STARTED_PORT
start_one "$B_BIN" B; SERVER_B=$STARTED_PID; PORT_B=$STARTED_PORT
log "A: $A_BIN on port $PORT_A; B: $B_BIN on port $PORT_B"
python3 "$(dirname "$0")/../bench/ab_calls.py" --ports "$PORT_A,$PORT_B" --pids "$SERVER_A,$SERVER_B" \
    --calls "${AB_CALLS:-1000}" --blocks "${AB_BLOCKS:-20}" --pause "${AB_PAUSE:-0.005}"
