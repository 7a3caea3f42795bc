#!/usr/bin/env bash
# `switchboard-dev demo` as a user runs it: every scenario must end as expected (exit 0) and the
# timeline must show the push path and the end reasons. Run after the Swift tests, alone, so
# its five phones do not compete with them for the two cores.
set -euo pipefail
binary=${1:-.build/debug/switchboard-dev}
output=$(mktemp)
trap 'rm -f "$output"' EXIT
if ! timeout 180 "$binary" demo --ring-timeout 5 >"$output" 2>&1; then
    tail -40 "$output"
    echo "demo smoke: switchboard-dev demo failed" >&2
    exit 1
fi
for expected in "All eight scenarios ended as expected." "woken by push" "(answeredElsewhere)" "(unanswered)" \
    "woken by FCM" "woken by xiaomi push" 'replaced by "Missed call from Alice"' \
    "✓ scenario 1 " "✓ scenario 2 " "✓ scenario 3 " "✓ scenario 4 " "✓ scenario 5 " "✓ scenario 6 " "✓ scenario 7 " \
    "✓ scenario 8 " "audio good " "audio poor_4g "; do
    if ! grep -qF -- "$expected" "$output"; then
        tail -40 "$output"
        echo "demo smoke: missing '$expected' in the demo's timeline" >&2
        exit 1
    fi
done
echo "demo smoke: 8 scenarios passed"
grep -F "audio " "$output" | grep -F "mouth to ear" || true
