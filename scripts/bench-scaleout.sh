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
#   4. calls (bench/call_latency.py, as scripts/bench-calls.sh runs it on SQLite in the same
#      `make bench`): BENCH_CALL_RATE 1:1 calls/s for BENCH_DURATION s, each callee holding a
#      long poll, on one PostgreSQL instance and on three (callers and callees spread over
#      them, a callee's poll mostly on another instance than its calls are placed on).
# Figures are printed, never asserted. Every process started here is stopped by the
# EXIT trap, even on failure. All traffic stays on loopback (and PostgreSQL's socket).
#
#   5. capacity: after each calls step, call rates BENCH_RAMP (100,200,300,400,600) 5 s each,
#      up to the first whose ring p99 reaches 50 ms (bench/call_latency.py --ramp).
# Environment knobs: BENCH_RATE (200), BENCH_DURATION (10), BENCH_MEMBERS (1000: every
# member's registration hashes a password, and PostgreSQL's setup is not kept between runs),
# BENCH_ROUNDS (3), BENCH_RAMP, BENCH_MAX_SECONDS (600), KEEP_TMP=1.
set -euo pipefail
readonly RATE="${BENCH_RATE:-200}" DURATION="${BENCH_DURATION:-10}" MEMBERS="${BENCH_MEMBERS:-1000}" ROUNDS="${BENCH_ROUNDS:-3}"
readonly CLIENT_MAX="${BENCH_MAX_SECONDS:-600}" CALL_RATE="${BENCH_CALL_RATE:-100}" PAIRS="${BENCH_PAIRS:-200}"
readonly RAMP="${BENCH_RAMP-100,200,300,400,600}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CLIENT_PY="$HERE/../bench/event_fanout.py"
BENCH_NAME=bench-scaleout
# shellcheck source=scripts/bench-lib.sh
. "$(dirname "$0")/bench-lib.sh"

[[ $# -eq 1 ]] || die "usage: $0 path/to/switchboard"
need_switchboard "$1"
[[ -n "${SWITCHBOARD_TEST_POSTGRES_URL:-}" ]] || die "no PostgreSQL: run it through scripts/with-postgres.sh"
command -v psql >/dev/null || die "psql is required (postgresql-client-15)"
SERVER_PID="" OTHER_PID="" THIRD_PID="" INSTANCE_PID="" CLIENT_PID=""
# INSTANCE_PID: an instance still starting when a step fails.
BENCH_STOP_ON_EXIT=(CLIENT_PID SERVER_PID OTHER_PID THIRD_PID INSTANCE_PID)
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
STARTS=0
start_instance() {
    # Files of their own per start: a stopped instance may still hold its old ones open.
    STARTS=$((STARTS + 1))
    local out="$TMP/$1.$STARTS.out"
    env -u SWITCHBOARD_TEST_POSTGRES_URL -u SWITCHBOARD_REQUIRE_POSTGRES \
        SWITCHBOARD_DATABASE=postgres SWITCHBOARD_POSTGRES_URL="$DB_URL" SWITCHBOARD_PASSWORD_SCRYPT_LOG_N=15 SWITCHBOARD_LIMIT_REGISTRATIONS_PER_ADDRESS=1000000/3600 SWITCHBOARD_LIMIT_CALLS_PER_CALLER=1000000/60 SWITCHBOARD_LIMIT_CALLS_PER_CALLEE=1000000/60 SWITCHBOARD_LIMIT_RINGS_PER_DEVICE=1000000/60 SWITCHBOARD_LIMIT_MESSAGES_PER_USER=1000000/60 \
        SWITCHBOARD_MAX_CONNECTIONS=20000 SWITCHBOARD_MAX_CONNECTIONS_PER_ADDRESS=0 SWITCHBOARD_MAX_STREAMS_PER_USER=0 "$SWITCHBOARD" serve --listen 127.0.0.1:0 --data-dir "$TMP/$1" --log-level warning \
        </dev/null >"$out" 2>"$TMP/$1.$STARTS.err" &
    INSTANCE_PID=$!
    wait_listening "$INSTANCE_PID" "$out" "switchboard $1" "instance $1's"
    INSTANCE_PORT="$LISTEN_PORT"
}

stop_instances() {
    for pid in "$SERVER_PID" "$OTHER_PID" "$THIRD_PID"; do [[ -n "$pid" ]] && stop_pid "$pid"; done
    SERVER_PID="" OTHER_PID="" THIRD_PID="" INSTANCE_PID=""
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

# calls LABEL INSTANCES: the call client on fresh instances (1 or 3).
calls() {
    local label="$1" count="$2" also=""
    fresh_database
    start_instance a; SERVER_PID="$INSTANCE_PID"; PORT="$INSTANCE_PORT"
    if ((count == 3)); then
        start_instance b; OTHER_PID="$INSTANCE_PID"; also="$INSTANCE_PORT"
        start_instance c; THIRD_PID="$INSTANCE_PID"; also="$also,$INSTANCE_PORT"
    fi
    log "$label: $count instance(s), $PAIRS pairs, ${CALL_RATE} calls/s for ${DURATION}s"
    CLIENT_PY="$HERE/../bench/call_latency.py" run_load_client --pairs "$PAIRS" --rate "$CALL_RATE" --duration "$DURATION" --also-ports "$also" --ramp "$RAMP"
    cp "$TMP/figures.json" "$TMP/$label.json"
    stop_instances
}
calls calls1 1
calls calls3 3

value() { python3 -c 'import json,sys; f=json.load(open(sys.argv[1])); v=eval(sys.argv[2],{"f":f}); print("n/a" if v is None else v)' "$TMP/$1.json" "$2" 2>/dev/null || echo n/a; }
CROSS_P50="$(num "$(value cross 'f["latency"]["p50_ms"]')" 2)" CROSS_P99="$(num "$(value cross 'f["latency"]["p99_ms"]')" 2)"
SAME_P50="$(num "$(value same 'f["latency"]["p50_ms"]')" 2)" SAME_P99="$(num "$(value same 'f["latency"]["p99_ms"]')" 2)"
CROSS_SEEN="$(value cross 'f["latency"]["seen"]')/$(value cross 'f["latency"]["messages"]')"
FAN_MS="$(num "$(value fanout 'f["fanout"]["median_last_ms"]')" 1)"
RATIO="$(awk -v a="$CROSS_P99" -v b="$SAME_P99" 'BEGIN { if (a == "n/a" || b == "n/a" || b + 0 == 0) print "-"; else printf("%.2f\n", a / b) }')"

C1_P99="$(num "$(value calls1 'f["calls"]["p99_ms"]')" 2)" C3_P99="$(num "$(value calls3 'f["calls"]["p99_ms"]')" 2)"
C1_RATE="$(value calls1 'f["calls"]["achieved_rate"]')" C3_RATE="$(value calls3 'f["calls"]["achieved_rate"]')"
C1_SEEN="$(value calls1 'f["calls"]["seen"]')/$(value calls1 'f["calls"]["calls"]')"
C3_SEEN="$(value calls3 'f["calls"]["seen"]')/$(value calls3 'f["calls"]["calls"]')"

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
printf '| %-51s | %10s |\n' "calls, 1 instance: POST -> callee's event p99 ms" "$C1_P99"
printf '| %-51s | %10s |\n' "calls, 1 instance: achieved calls/s, seen/sent" "$C1_RATE $C1_SEEN"
printf '| %-51s | %10s |\n' "calls, 3 instances: POST -> callee's event p99 ms" "$C3_P99"
printf '| %-51s | %10s |\n' "calls, 3 instances: achieved calls/s, seen/sent" "$C3_RATE $C3_SEEN"
echo
summary_row "PostgreSQL: wake across instances p99 ms" "$CROSS_P99" "<= 20" "$(met "$CROSS_P99" 20)" "same instance" "$SAME_P99" "$RATIO"
summary_row "PostgreSQL: wake across instances p50 ms" "$CROSS_P50" "-" "-"
summary_row "PostgreSQL: $MEMBERS-poll fan-out ms (1 instance)" "$FAN_MS" "-" "-"
summary_row "PostgreSQL, 1 instance: call -> callee p99 ms (${CALL_RATE}/s)" "$C1_P99" "<= 5" "$(met "$C1_P99" 5)"
summary_row "PostgreSQL, 3 instances: call -> callee p99 ms (${CALL_RATE}/s)" "$C3_P99" "<= 10" "$(met "$C3_P99" 10)"
if [[ -n "$RAMP" ]]; then
    for n in 1 3; do
        echo "capacity, $n instance(s): $(value "calls$n" '"; ".join("%g/s: p99 %s ms, sent %s/s" % (s["rate"], s["p99_ms"], s["achieved_rate"]) for s in f["capacity"]["steps"])')"
        stopped="$(value "calls$n" 'f["capacity"]["stopped_by"]')" capacity="$(value "calls$n" 'f["capacity"]["calls_per_s"]')"
        [[ "$stopped" == "the last rate tried" ]] && capacity=">= $capacity"
        summary_row "capacity: calls/s with ring p99 < 50 ms (PostgreSQL, $n instance(s); tried $RAMP; stopped by: $stopped)" \
            "$capacity" "-" "-"
    done
fi
print_debug_note
