#!/usr/bin/env bash
# Runs a command with TMPDIR set to a fresh directory of its own, and removes that directory
# (and whatever the command, SwiftPM or the tests left in it) when the command ends: `make test`
# leaves nothing in the system's temporary directory. The directory is world-traversable (0755)
# so that helpers running as another user (nginx's workers) reach their own subdirectories.
#
# Usage: scripts/with-private-tmp.sh COMMAND [ARGUMENTS...]
set -euo pipefail
private=$(mktemp -d "${TMPDIR:-/tmp}/switchboard-tmp.XXXXXX")
chmod 0755 "$private"
trap 'rm -rf "$private"' EXIT
status=0
TMPDIR=$private "$@" || status=$?
exit "$status"
