#!/usr/bin/env bash
# Type-checks the README's app test (Tests/SwitchboardKitTests/AppTestExampleTests.swift) as an
# app outside this package would compile it: against the built modules under another package
# name, so the SDK's `package` symbols are hidden and only its public API is left.
# usage: scripts/check-public-testing-api.sh [BUILD_DIR]   (default .build/debug, after a build)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-.build/debug}
FILE=Tests/SwitchboardKitTests/AppTestExampleTests.swift
[ -d "$BUILD/Modules" ] || { echo "check-public-testing-api: no modules in $BUILD (build first)" >&2; exit 2; }
if ! swiftc -typecheck -package-name an_app -I "$BUILD/Modules" "$FILE"; then
    echo "check-public-testing-api: $FILE needs more than the public API (see above)" >&2
    exit 1
fi
# The README shows the same test: the two must not drift apart.
python3 - "$FILE" <<'PY'
import re, sys
test = open(sys.argv[1]).read()
readme = open("README.md").read()
block = re.search(r"<!-- app-test:begin -->\n```swift\n(.*?)```\n<!-- app-test:end -->", readme, re.S)
if not block:
    sys.exit("check-public-testing-api: README.md has no app-test block")
body = test[test.index("import Foundation"):]
if block.group(1) != body:
    sys.exit("check-public-testing-api: README.md's app test differs from " + sys.argv[1])
PY
echo "check-public-testing-api: the app test compiles against the public API only"
