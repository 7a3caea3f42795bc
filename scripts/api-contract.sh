#!/usr/bin/env bash
# The API contract, checked by machine: schemathesis (PyPI, pinned in ensure-python-tools.sh)
# drives the real `switchboard serve` -- on 127.0.0.1, a free port and a fresh database -- from
# openapi.json as the server itself serves it, through the coverage, fuzzing and stateful phases,
# with every check it has (`--checks all`). Any 5xx, any response that violates the document, any
# status the document does not list for the operation, and any schema-valid request that is
# refused fails the run. It stops the server itself and leaves nothing behind.
#
# Usage: scripts/api-contract.sh [path/to/switchboard]     (default .build/debug/switchboard)
#   CONTRACT_SECONDS=S         schemathesis' time budget (default 60): it spreads it over its
#                              phases and keeps fuzzing until it is spent, so a quiet machine
#                              sends thousands of requests and a busy one fewer, never more time
#   CONTRACT_SEED=N|random     data generation seed (default: a fixed one)
#   CONTRACT_EXAMPLES=N        fuzzed requests per operation in each fuzzing round (default 40)
#   CONTRACT_VERBOSE=1         print schemathesis' whole report (warnings too), not only its summary
#   CONTRACT_HAR=FILE          also record every request and response there (HAR), to see what ran
#   CONTRACT_ADMIN=off         run the server without an adminKey (the admin API off: its routes
#                              answer 401 without credentials, 403 ADMIN_DISABLED with a key);
#                              default on
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
binary=$(realpath "${1:-.build/debug/switchboard}")
seed=${CONTRACT_SEED:-20261201}
examples=${CONTRACT_EXAMPLES:-40}
budget=${CONTRACT_SECONDS:-60}
# The hard limit, in case schemathesis overruns its budget (a hung request, a long shrink).
time_limit=$((budget + 120))
[[ -x $binary ]] || { echo "api contract: no server binary at $binary (run swift build first)" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/api-contract.XXXXXX")
server_pid= fuzzer_pid=
stop() {  # stop <pid>: SIGTERM, up to 10 s to exit, then SIGKILL
    [[ -n $1 ]] || return 0
    kill -TERM "$1" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}
trap 'stop "$fuzzer_pid"; stop "$server_pid"; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

# Secrets for this run only: the admin key enables GET /admin/push/status, so it is tested too.
admin_key=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
password=$(python3 -c 'import secrets; print(secrets.token_urlsafe(18))')
data_encryption_key=$(python3 -c 'import base64, secrets; print(base64.b64encode(secrets.token_bytes(32)).decode())')
mkdir "$work/data"
server_admin_key=$admin_key
[[ ${CONTRACT_ADMIN:-on} == off ]] && server_admin_key=
SWITCHBOARD_ADMIN_KEY=$server_admin_key \
SWITCHBOARD_DATA_ENCRYPTION_KEY=$data_encryption_key \
SWITCHBOARD_PASSWORD_SCRYPT_LOG_N=15 \
SWITCHBOARD_LIMIT_REGISTRATIONS_PER_ADDRESS=1000000/3600 \
SWITCHBOARD_LIMIT_CALLS_PER_CALLER=1000000/60 \
SWITCHBOARD_LIMIT_CALLS_PER_CALLEE=1000000/60 \
SWITCHBOARD_LIMIT_MESSAGES_PER_USER=1000000/60 \
SWITCHBOARD_LIMIT_CALL_DIRECTORY_CHANGES_PER_USER=1000000/60 \
SWITCHBOARD_LIMIT_LIVE_LOCATION_UPDATES_PER_USER=1000000/60 \
SWITCHBOARD_EVENT_HEARTBEAT_SECONDS=1 \
SWITCHBOARD_TRUSTED_PROXIES=127.0.0.1 \
SWITCHBOARD_RING_TIMEOUT_SECONDS=5 \
SWITCHBOARD_LOG_LEVEL=warning \
    "$binary" serve --listen 127.0.0.1:0 --data-dir "$work/data" >"$work/server.log" 2>&1 &
server_pid=$!

address=
for _ in $(seq 200); do
    address=$(head -n 1 "$work/server.log" | sed -n 's/.*"msg":"listening".*"address":"\([^"]*\)".*/\1/p')
    [[ -n $address ]] && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
done
if [[ -z $address ]]; then
    cat "$work/server.log" >&2
    echo "api contract: the server did not start" >&2
    exit 1
fi
base="http://$address"

python3 "$here/api-contract/seed.py" "$base" contract "$password" >"$work/seeded.json"

if [[ $seed == random ]]; then seed=$(python3 -c 'import secrets; print(secrets.randbits(63))'); fi
started=$SECONDS
(
    cd "$work"  # hypothesis and schemathesis keep their caches in the working directory
    export CONTRACT_BASE_URL=$base CONTRACT_USERNAME=contract CONTRACT_PASSWORD=$password CONTRACT_ADMIN_KEY=$admin_key
    export CONTRACT_SEEDED="$work/seeded.json" PYTHONPATH="$here/api-contract" SCHEMATHESIS_HOOKS=contract_hooks
    export PYTHONDONTWRITEBYTECODE=1
    exec timeout --kill-after=5 "$time_limit" python3 -m schemathesis.cli \
        --config-file "$here/api-contract/schemathesis.toml" \
        run "$base/openapi.json" --checks all --max-time "$budget" --max-examples "$examples" --seed "$seed" \
        --generation-database none --no-color ${CONTRACT_HAR:+--report har --report-har-path "$CONTRACT_HAR"}
) >"$work/schemathesis.txt" 2>&1 &
fuzzer_pid=$!
status=0
wait "$fuzzer_pid" || status=$?
fuzzer_pid=
elapsed=$((SECONDS - started))
stop "$server_pid"
server_pid=

summary=$(sed -n '/^=* SUMMARY =*$/,$p' "$work/schemathesis.txt")
failed=0
((status == 0)) && [[ -n $summary ]] || failed=1
if ((failed)) || [[ ${CONTRACT_VERBOSE:-0} == 1 ]]; then
    cat "$work/schemathesis.txt"
    if grep -q '"level":"error"' "$work/server.log"; then
        echo "--- server errors ---"
        grep '"level":"error"' "$work/server.log" | tail -20
    fi
fi
if ((failed)); then
    if ((status == 124 || status == 137)); then
        echo "api contract: FAILED: schemathesis did not finish within ${time_limit}s" >&2
    else
        echo "api contract: FAILED (schemathesis exit $status after ${elapsed}s, seed $seed); see above" >&2
    fi
    exit 1
fi
[[ ${CONTRACT_VERBOSE:-0} == 1 ]] || echo "$summary"
echo "api contract: OK: openapi.json matches the server, admin API ${CONTRACT_ADMIN:-on} ($(grep -o '[0-9]\+ generated' <<<"$summary" | head -1) test cases in ${elapsed}s, seed $seed)"
