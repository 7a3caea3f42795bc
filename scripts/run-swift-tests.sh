#!/usr/bin/env bash
# The Swift tests of `make test`, beside the PostgreSQL cluster of scripts/with-postgres.sh:
#   1. every test target, with the server's tests on SQLite (the embedded default) and the
#      repository contract on both stores;
#   2. the server's tests once more, on PostgreSQL (SWITCHBOARD_TEST_STORE=postgres).
# Each pass is bounded (TEST_TIMEOUT seconds, default 1200): a test that waits for ever ends
# the run with timeout's status 124 instead of holding CI to its limit. timeout signals its
# whole process group, so the test helper process that swift test starts goes too.
# A pass that fails repeats its failures (the ✘ lines and what they recorded) at the end, so
# the last lines of a long log name the test.
#
# Usage: scripts/run-swift-tests.sh [swift test options ...]   (SWIFT: the swift binary)
set -euo pipefail
swift=${SWIFT:-swift}
limit=${TEST_TIMEOUT:-1200}
log=$(mktemp)
trap 'rm -f "$log"' EXIT

pass() {
    local status=0
    timeout --kill-after=30 "$limit" "$@" 2>&1 | tee "$log" || status=$?
    if ((status != 0)); then
        echo "== the failures of this pass (exit $status):"
        grep -E '^(✘|􀢄)|recorded an issue|Expectation failed|Fatal error|error:' "$log" | head -n 60 || true
    fi
    return "$status"
}

pass "$swift" test --skip-build "$@"
echo "== the server's tests on PostgreSQL"
SWITCHBOARD_TEST_STORE=postgres pass "$swift" test --skip-build "$@" --filter SwitchboardServerTests
