#!/usr/bin/env bash
# Usage: scripts/bench-ab.sh BASE [BENCHES] [ROUNDS]      (make bench-ab BASE=<rev> BENCHES=... ROUNDS=...)
#
# Did a change make things worse? Builds revision BASE (any git revision) in a worktree
# beside this one (.build/bench-ab/<commit>, kept and reused), builds the working tree too
# (release), then runs the chosen benchmarks alternately: base, ours, ours, base, base, ours ...
# (the order flips every round, so neither side always runs first), ROUNDS rounds each (default 5).
# Every figure the benchmarks report (their summary rows) is printed for both, with the median
# of the per-round ratios ours / base and their spread; bench/ab.py says which way is better.
#
# BENCHES is a comma-separated list of: http, events, calls, push, scaleout, relay
# (default events,calls). Both sides are measured by the working tree's scripts and load
# clients, so only the binaries differ. The benchmarks' own knobs (BENCH_MEMBERS,
# BENCH_ROUNDS, ...) apply; AB_INNER_ROUNDS (default 3) sets BENCH_ROUNDS for each run.
# Figures are printed, never asserted; the output goes to .build/bench-ab/last/.
set -euo pipefail
BENCH_NAME=bench-ab
. "$(dirname "$0")/bench-lib.sh"
[[ $# -ge 1 && $# -le 3 ]] || die "usage: scripts/bench-ab.sh BASE [BENCHES] [ROUNDS]"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BASE_REV="$1"
BENCHES="${2:-events,calls}"
ROUNDS="${3:-5}"
need_positive_ints ROUNDS
BASE_SHA="$(git -C "$ROOT" rev-parse --verify --quiet "$BASE_REV^{commit}")" || die "no such revision: $BASE_REV"
IFS=, read -r -a WHICH <<<"$BENCHES"
for b in "${WHICH[@]}"; do
    case "$b" in http|events|calls|push|scaleout|relay) ;; *) die "unknown benchmark '$b' (http, events, calls, push, scaleout, relay)" ;; esac
done
SWIFT="${SWIFT:-swift}"
products=(switchboard)
[[ ",$BENCHES," == *,push,* || ",$BENCHES," == *,relay,* ]] && products+=(switchboard-dev)
[[ ",$BENCHES," == *,push,* ]] && products+=(push-bench)

build_release() {   # build_release DIR: the release products in DIR
    local p
    for p in "${products[@]}"; do
        log "building $p (release) in $1"
        (cd "$1" && "$SWIFT" build -c release --product "$p" >/dev/null) || die "release build of $p failed in $1"
    done
}
OUT="$ROOT/.build/bench-ab"
BASE_DIR="$OUT/$BASE_SHA"
if [[ ! -d "$BASE_DIR" ]]; then
    mkdir -p "$OUT"
    git -C "$ROOT" worktree add --detach "$BASE_DIR" "$BASE_SHA" >/dev/null || die "git worktree add failed"
fi
build_release "$BASE_DIR"
build_release "$ROOT"

run_bench() {   # run_bench NAME DIR SUMMARY_DIR: one benchmark against the binaries in DIR/.build/release
    local bin="$2/.build/release" log_file="$3/$1.log"
    mkdir -p "$3"
    local -a cmd
    case "$1" in
        http) cmd=("$ROOT/scripts/bench-http.sh" "$bin/switchboard") ;;
        events) cmd=("$ROOT/scripts/bench-events.sh" "$bin/switchboard") ;;
        calls) cmd=("$ROOT/scripts/bench-calls.sh" "$bin/switchboard") ;;
        push) cmd=("$ROOT/scripts/bench-push.sh" "$bin/switchboard-dev" "$bin/push-bench") ;;
        scaleout) cmd=("$ROOT/scripts/with-postgres.sh" "$ROOT/scripts/bench-scaleout.sh" "$bin/switchboard") ;;
        relay) cmd=("$ROOT/scripts/bench-relay.sh" "$bin/switchboard" "$bin/switchboard-dev") ;;
    esac
    # Builds of one schema share the events benchmark's kept setup.
    BENCH_SEED_SOURCES="$2" BENCH_ROUNDS="${AB_INNER_ROUNDS:-3}" BENCH_SUMMARY_DIR="$3" "${cmd[@]}" >"$log_file" 2>&1 \
        || die "$1 against $2 failed; see $log_file"
}

rm -rf "$OUT/last" && mkdir -p "$OUT/last"
for round in $(seq 1 "$ROUNDS"); do
    if (( round % 2 )); then order=(base ours); else order=(ours base); fi
    for side in "${order[@]}"; do
        dir="$ROOT"; [[ $side == base ]] && dir="$BASE_DIR"
        for b in "${WHICH[@]}"; do
            log "round $round/$ROUNDS: $b against $side"
            run_bench "$b" "$dir" "$OUT/last/$side-$round"
        done
    done
done
python3 "$ROOT/bench/ab.py" "$OUT/last" --base "$(git -C "$ROOT" log -1 --format='%h %s' "$BASE_SHA" | cut -c1-70)" \
    --ours "$(git -C "$ROOT" log -1 --format='%h' HEAD)$(git -C "$ROOT" diff --quiet HEAD -- Sources Package.swift || echo ' + working tree')"
