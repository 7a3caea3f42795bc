#!/usr/bin/env bash
# The browser client: its JSDoc types checked by Debian's TypeScript, then in a real browser:
# Debian's chromium and chromium-driver, headless, with
# fake microphones fed from WAV files, driven by Selenium (Tests/Browser/*_test.py). Each test
# starts its own server (127.0.0.1, a free port, a fresh database) from the given binary and
# stops it and its browsers whatever happens. Screenshots and server logs go to OUT_DIR.
# usage: scripts/browser-tests.sh SWITCHBOARD_BINARY [OUT_DIR]   (default .build/browser)
set -euo pipefail
cd "$(dirname "$0")/.."
BINARY=${1:?usage: scripts/browser-tests.sh SWITCHBOARD_BINARY [OUT_DIR]}
OUT=${2:-.build/browser}
scripts/ensure-deps.sh chromium chromium-driver espeak-ng sox openssl node-typescript
scripts/ensure-python-tools.sh
mkdir -p "$OUT"
# The JSDoc types of the SDK and the pages, checked by Debian's TypeScript (nothing is emitted;
# relay-worklet.js runs in an AudioWorkletGlobalScope, which TypeScript's libraries lack).
echo "== tsc -p scripts/tsconfig.web.json"
tsc -p scripts/tsconfig.web.json
status=0
for test in Tests/Browser/*_test.py; do
    name=$(basename "$test" .py)
    echo "== $name"
    # A hard limit per test: a browser that hangs fails the run instead of holding it.
    if ! timeout --kill-after=10 300 python3 "$test" "$BINARY" "$OUT/$name"; then
        echo "browser-tests: $name failed (screenshots and the server's log in $OUT/$name)" >&2
        status=1
    fi
done
exit $status
