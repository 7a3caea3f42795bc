#!/usr/bin/env bash
# Checks deploy/systemd/switchboard.service with `systemd-analyze verify` (where systemd's
# tools exist), against the binary built here: the unit's ExecStart names the installed
# /usr/local/bin/switchboard, which a build machine need not have.
#
# Usage: scripts/check-systemd-unit.sh path/to/switchboard
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
binary=$(realpath "${1:?usage: $0 path/to/switchboard}")
if ! command -v systemd-analyze >/dev/null; then
    echo "systemd unit: not checked (no systemd-analyze here)"
    exit 0
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/switchboard-unit.XXXXXX")
trap 'rm -rf "$work"' EXIT
sed "s|/usr/local/bin/switchboard|$binary|" "$here/deploy/systemd/switchboard.service" >"$work/switchboard.service"
if ! output=$(systemd-analyze verify "$work/switchboard.service" 2>&1) || [[ -n $output ]]; then
    echo "$output" >&2
    echo "systemd unit: FAILED: systemd-analyze verify found problems in deploy/systemd/switchboard.service" >&2
    exit 1
fi
echo "systemd unit: OK (systemd-analyze verify)"
