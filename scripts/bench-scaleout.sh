#!/usr/bin/env bash
# Scale-out benchmark: two `switchboard serve` instances on one PostgreSQL database, on
# 127.0.0.1. Run it beside a PostgreSQL cluster (make bench runs it through
# scripts/with-postgres.sh, which exports SWITCHBOARD_TEST_POSTGRES_URL).
#
#   usage: scripts/with-postgres.sh scripts/bench-scaleout.sh path/to/switchboard
#
# Measures, with bench/event_fanout.py (Python 3 stdlib only):
#   1. cross-instance wake: 1:1 messages POSTed to instance A at BENCH_RATE/s for
#      BENCH_DURATION s while the receiver's long poll is held on instance B; each latency
#      runs from the POST being written to B's poll answering with that message (the
#      commit's NOTIFY, B's listener, B's re-read of the feed). Target p99 <= 20 ms.
#   2. the same with the poll on A (one instance on PostgreSQL), the anchor of (1): the
#      difference is what crossing instances costs.
#   3. the fan-out of one group message to BENCH_MEMBERS held long polls on PostgreSQL
#      (one instance), with the events committed before anyone is woken.
# Figures are printed, never asserted. Every process started here is stopped by the
# EXIT trap, even on failure. All traffic stays on loopback (and PostgreSQL's socket).
#
# Environment knobs: BENCH_RATE (200), BENCH_DURATION (10), BENCH_MEMBERS (5000),
# BENCH_ROUNDS (3), BENCH_MAX_SECONDS (300), KEEP_TMP=1.
set -euo pipefail
readonly RATE="${BENCH_RATE:-200}" DURATION="${BENCH_DURATION:-10}" MEMBERS="${BENCH_MEMBERS:-5000}" ROUNDS="${BENCH_ROUNDS:-3}"
readonly CLIENT_MAX="${BENCH_MAX_SECONDS:-300}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CLIENT_PY="$HERE/../bench/event_fanout.py"
BENCH_NAME=bench-scaleout
# shellcheck source=scripts/bench-lib.sh
. "$(dirname "$0")/bench-lib.sh"

[[ $# -eq 1 ]] || die "usage: $0 path/to/switchboard"
need_switchboard "$1"
[[ -n "${SWITCHBOARD_TEST_POSTGRES_URL:-}" ]] || die "no PostgreSQL: run it through scripts/with-postgres.sh"
command -v psql >/dev/null || die "psql is required (postgresql-client-15)"
SERVER_PID="" OTHER_PID="" CLIENT_PID=""
BENCH_STOP_ON_EXIT=(CLIENT_PID SERVER_PID OTHER_PID)
bench_init_tmp switchboard-bench-scaleout.XXXXXX
raise_nofile "$((MEMBERS + 1024))"
BUILD="$(build_type "$SWITCHBOARD")"

# A fresh database per measurement, so each starts from the same state.
fresh_database() {
    local name="bench_$(date +%s)_$RANDOM"
    psql -q "$SWITCHBOARD_TEST_POSTGRES_URL" -c "CREATE DATABASE $name" >/dev/null || die "could not create a database"
    DB_URL="${SWITCHBOARD_TEST_POSTGRES_URL/\/postgres\?/\/$name?}"
}

# start_instance NAME: a server on $DB_URL; sets INSTANCE_PID and INSTANCE_PORT.
start_instance() {
    local out="$TMP/$1.out"
    env SWITCHBOARD_DATABASE=postgres SWITCHBOARD_POSTGRES_URL="$DB_URL" SWITCHBOARD_PASSWORD_SCRYPT_LOG_N=10 \
        SWITCHBOARD_MAX_CONNECTIONS=20000 "$SWITCHBOARD" serve --listen 127.0.0.1:0 --data-dir "$TMP/$1" --log-level warning \
        </dev/null >"$out" 2>"$TMP/$1.err" &
    INSTANCE_PID=$!
    wait_listening "$INSTANCE_PID" "$out" "switchboard $1" "instance $1's"
    INSTANCE_PORT="$LISTEN_PORT"
}

stop_instances() {
    for pid in "$SERVER_PID" "$OTHER_PID"; do [[ -n "$pid" ]] && stop_pid "$pid"; done
    SERVER_PID="" OTHER_PID=""
}

# measure LABEL POLL_PORT_OF(a|b) MEMBERS ROUNDS: one client run on fresh instances.
measure() {
    local label="$1" poll="$2" members="$3" rounds="$4" poll_port
    fresh_database
    start_instance a; SERVER_PID="$INSTANCE_PID"; PORT="$INSTANCE_PORT"
    start_instance b; OTHER_PID="$INSTANCE_PID"; local b_port="$INSTANCE_PORT"
    poll_port="$PORT"; [[ "$poll" == b ]] && poll_port="$b_port"
    log "$label: instances on ports $PORT and $b_port; $members member(s), poll on instance $poll"
    run_load_client --members "$members" --rounds "$rounds" --rate "$RATE" --duration "$DURATION" --poll-port "$poll_port"
    cp "$TMP/figures.json" "$TMP/$label.json"
    stop_instances
}

measure cross b 10 1
measure same a 10 1
measure fanout a "$MEMBERS" "$ROUNDS"

value() { python3 -c 'import json,sys; f=json.load(open(sys.argv[1])); v=eval(sys.argv[2],{"f":f}); print("n/a" if v is None else v)' "$TMP/$1.json" "$2" 2>/dev/null || echo n/a; }
CROSS_P50="$(num "$(value cross 'f["latency"]["p50_ms"]')" 2)" CROSS_P99="$(num "$(value cross 'f["latency"]["p99_ms"]')" 2)"
SAME_P50="$(num "$(value same 'f["latency"]["p50_ms"]')" 2)" SAME_P99="$(num "$(value same 'f["latency"]["p99_ms"]')" 2)"
CROSS_SEEN="$(value cross 'f["latency"]["seen"]')/$(value cross 'f["latency"]["messages"]')"
FAN_MS="$(num "$(value fanout 'f["fanout"]["median_last_ms"]')" 1)"
RATIO="$(awk -v a="$CROSS_P99" -v b="$SAME_P99" 'BEGIN { if (a == "n/a" || b == "n/a" || b + 0 == 0) print "-"; else printf("%.2f\n", a / b) }')"

summary_header scale-out
echo "two instances on one PostgreSQL 15 database (fsync off: a test cluster); 1:1 messages at ${RATE}/s for ${DURATION}s; Python client (bench/event_fanout.py)"
echo
echo "| figure                                              |      value |"
echo "|-----------------------------------------------------|-----------:|"
printf '| %-51s | %10s |\n' "POST on A -> poll on B, p50 ms" "$CROSS_P50"
printf '| %-51s | %10s |\n' "POST on A -> poll on B, p99 ms" "$CROSS_P99"
printf '| %-51s | %10s |\n' "messages seen / sent (across instances)" "$CROSS_SEEN"
printf '| %-51s | %10s |\n' "POST on A -> poll on A, p50 ms" "$SAME_P50"
printf '| %-51s | %10s |\n' "POST on A -> poll on A, p99 ms" "$SAME_P99"
printf '| %-51s | %10s |\n' "group message -> $MEMBERS polls woken, ms (median)" "$FAN_MS"
echo
summary_row "PostgreSQL: wake across instances p99 ms" "$CROSS_P99" "<= 20" "$(met "$CROSS_P99" 20)" "same instance" "$SAME_P99" "$RATIO"
summary_row "PostgreSQL: wake across instances p50 ms" "$CROSS_P50" "-" "-"
summary_row "PostgreSQL: $MEMBERS-poll fan-out ms (1 instance)" "$FAN_MS" "-" "-"
print_debug_note
