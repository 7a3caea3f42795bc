#!/usr/bin/env bash
# Builds the HTTP parser fuzz target with libFuzzer + AddressSanitizer and runs it.
# Usage: scripts/fuzz.sh [SECONDS]   (default 300)
#        scripts/fuzz.sh --smoke     (a short bounded pass, as `make test` runs it)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-300}
if [[ "$seconds" == "--smoke" ]]; then seconds=20; fi
build=Fuzz/build
mkdir -p "$build" Fuzz/corpus-run
# The Swift backtracer would spend minutes symbolicating a found crash; libFuzzer reports it.
export SWIFT_BACKTRACE=enable=no
swiftc -O -sanitize=fuzzer,address -parse-as-library -module-name ParserFuzz \
    Sources/SwitchboardHTTP/Parsing/*.swift Fuzz/HTTPParserFuzz.swift -o "$build/http-parser-fuzz"
cp -n Fuzz/corpus/* Fuzz/corpus-run/ 2>/dev/null || true
echo "fuzzing the HTTP parser for ${seconds}s"
set +e
"$build/http-parser-fuzz" Fuzz/corpus-run -max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 \
    -max_len=8192 -print_final_stats=1 -artifact_prefix="$build/" > "$build/last-run.log" 2>&1
status=$?
set -e
tail -n 12 "$build/last-run.log"
if [[ $status -ne 0 ]]; then
    echo "fuzz: FAILED (exit $status); the crashing input is in $build/" >&2
    exit "$status"
fi
echo "fuzz: no crash, hang or over-limit memory in ${seconds}s"
