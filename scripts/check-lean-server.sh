#!/usr/bin/env bash
# The production server links no test double and no developer tool: `switchboard` holds no
# symbol of SwitchboardKitTesting (simulated CallKit and phones, the manual clock),
# SwitchboardDemo, SwitchboardNetSim (the weak-network proxy), SwitchboardAPNsEmulator, the
# client SDK or the test support. The same search must find the first five in
# `switchboard-dev`, so a search that could never match cannot pass for a clean server.
# Usage: scripts/check-lean-server.sh path/to/switchboard path/to/switchboard-dev
set -euo pipefail
if [[ $# -ne 2 ]]; then
    echo "usage: $0 path/to/switchboard path/to/switchboard-dev" >&2
    exit 2
fi
server=$1 dev=$2
command -v nm >/dev/null || "$(dirname "$0")/ensure-deps.sh" binutils
in_dev=(SwitchboardKitTesting SwitchboardDemo SwitchboardNetSim SwitchboardAPNsEmulator SwitchboardKit)
never_in_server=("${in_dev[@]}" SwitchboardTesting SwitchboardCallKit AppleFrameworkStubs)

for binary in "$server" "$dev"; do
    if [[ ! -x "$binary" ]]; then
        echo "lean server: '$binary' not found or not executable (build both products first)" >&2
        exit 2
    fi
done
symbols=$(mktemp -d)
trap 'rm -rf "$symbols"' EXIT
nm "$server" >"$symbols/server" 2>/dev/null || true
nm "$dev" >"$symbols/dev" 2>/dev/null || true

# count server|dev MODULE: how many of the binary's symbols name MODULE. Every symbol a Swift
# module defines begins with the module's name spelled out as its length and name
# ($s21SwitchboardKitTesting11ManualClockC...; later mentions in a symbol may be abbreviated), so
# a module linked in cannot hide, and SwitchboardKit is not mistaken for SwitchboardKitTesting.
count() {
    grep -c "${#2}$2" "$symbols/$1" || true
}

failed=0
if (($(count server SwitchboardServer) == 0)); then
    echo "lean server: no SwitchboardServer symbol in $server (stripped?): nothing can be proven" >&2
    exit 1
fi
for module in "${never_in_server[@]}"; do
    found=$(count server "$module")
    if ((found > 0)); then
        echo "lean server: $server links $module ($found symbols), e.g.:" >&2
        grep -m 3 "${#module}$module" "$symbols/server" >&2
        failed=1
    fi
done
for module in "${in_dev[@]}"; do
    if (($(count dev "$module") == 0)); then
        echo "lean server: the search finds no $module in $dev, so it proves nothing about $server" >&2
        failed=1
    fi
done
if ((failed)); then
    exit 1
fi
echo "lean server: $server links none of ${never_in_server[*]}; $dev links the developer tools"
