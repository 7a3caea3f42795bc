#!/usr/bin/env bash
# Usage: scripts/bench-summary.sh DIR [--write FILE]
#
# The one table `make bench` ends with (bench/summary.py): every figure the benchmarks
# wrote to DIR, its target, the anchor measured in the same run, the ratio, medians over
# the rounds with their spread. With --write FILE it also rewrites FILE's generated section
# (between <!-- bench:begin --> and <!-- bench:end -->): `make bench` keeps
# docs/benchmarks.md true that way, never by hand. Exits 1 when DIR holds no figures.
set -euo pipefail
[[ $# -ge 1 ]] || { echo "usage: $0 DIR [--write FILE]" >&2; exit 2; }
exec python3 "$(dirname "$0")/../bench/summary.py" "$@"
