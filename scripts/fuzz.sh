#!/usr/bin/env bash
# Builds the parser fuzz targets with libFuzzer + AddressSanitizer and runs each in turn:
# the HTTP/1.1 request parser, then the WebSocket frame parser and protocol machine.
# Usage: scripts/fuzz.sh [SECONDS]   (each target; default 300)
#        scripts/fuzz.sh --smoke     (a short bounded pass of each, as `make test` runs it)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-300}
websocket_seconds=$seconds
if [[ "$seconds" == "--smoke" ]]; then seconds=15; websocket_seconds=10; fi
build=Fuzz/build
mkdir -p "$build"
# The Swift backtracer would spend minutes symbolicating a found crash; libFuzzer reports it.
export SWIFT_BACKTRACE=enable=no

# fuzz NAME SECONDS MAX_LEN SEED_CORPUS SOURCES...
fuzz() {
    local name=$1 time=$2 max_len=$3 seeds=$4
    shift 4
    local run_corpus="Fuzz/corpus-run/$name"
    mkdir -p "$run_corpus"
    # (gold's "Cannot export local symbol '__asan_…'" notes are noise of the sanitizer runtime.)
    swiftc -O -sanitize=fuzzer,address -parse-as-library -module-name "${name//-/_}" "$@" -o "$build/$name" \
        2> >(grep -v "Cannot export local symbol" >&2)
    cp -n "$seeds"/* "$run_corpus"/ 2>/dev/null || true
    echo "fuzzing $name for ${time}s"
    set +e
    "$build/$name" "$run_corpus" -max_total_time="$time" -timeout=5 -rss_limit_mb=2048 \
        -max_len="$max_len" -print_final_stats=1 -artifact_prefix="$build/$name-" > "$build/$name.log" 2>&1
    local status=$?
    set -e
    tail -n 12 "$build/$name.log"
    if [[ $status -ne 0 ]]; then
        echo "fuzz: $name FAILED (exit $status); the crashing input is in $build/" >&2
        exit "$status"
    fi
    echo "fuzz: $name: no crash, hang or over-limit memory in ${time}s"
}

fuzz http-parser "$seconds" 8192 Fuzz/corpus \
    Sources/SwitchboardHTTP/Parsing/*.swift Fuzz/HTTPParserFuzz.swift
fuzz websocket "$websocket_seconds" 4096 Fuzz/corpus-websocket \
    Sources/SwitchboardHTTP/WebSocket/WebSocketFrameParser.swift Sources/SwitchboardHTTP/WebSocket/WebSocketProtocol.swift \
    Fuzz/WebSocketFuzz.swift
