#!/usr/bin/env bash
# Usage: scripts/bench-summary.sh DIR
#
# The one table `make bench` ends with: every figure the benchmarks wrote to DIR
# (bench-http.tsv, bench-events.tsv, bench-calls.tsv, bench-push.tsv; one row per
# line: figure, value, target, verdict, anchor, anchor's value, ratio), its
# target, the anchor measured in the same run and the ratio. The README's
# performance section is copied from this table. Exits 1 when DIR holds no
# figures; a benchmark that did not run is named.
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 DIR" >&2; exit 2; }
python3 - "$1" <<'PY'
import os, sys, time
directory = sys.argv[1]
order = [("bench-http", "HTTP"), ("bench-events", "events"), ("bench-calls", "calls"), ("bench-push", "push"), ("bench-scaleout", "scale-out"), ("bench-relay", "relay")]
rows, missing = [], []
for name, title in order:
    path = os.path.join(directory, name + ".tsv")
    if not os.path.exists(path):
        missing.append(name)
        continue
    for line in open(path):
        fields = line.rstrip("\n").split("\t")
        if len(fields) == 7:
            rows.append([title] + fields)
if not rows:
    print(f"bench-summary: no figures in {directory}", file=sys.stderr)
    sys.exit(1)
print()
print(f"==== Switchboard benchmarks, {time.strftime('%Y-%m-%d', time.gmtime())}, {os.cpu_count()} cores: one run, anchors measured in it ====")
print()
header = ["bench", "figure", "Switchboard", "target", "met", "anchor (same run)", "anchor's figure", "ratio"]
widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
def line(cells):
    return "| " + " | ".join(str(c).ljust(w) if i in (0, 1, 3, 4, 5) else str(c).rjust(w)
                             for i, (c, w) in enumerate(zip(cells, widths))) + " |"
print(line(header))
print("|" + "|".join(("-" * (w + 2)) if i in (0, 1, 3, 4, 5) else ("-" * (w + 1) + ":") for i, w in enumerate(widths)) + "|")
for r in rows:
    print(line(r))
print()
print("ratio = Switchboard's figure / the anchor's (for req/s and pushes/s higher is better; for times and KB lower is).")
unmet = [r[1].strip() for r in rows if r[4] == "NOT met"]
print(f"targets not met: {', '.join(unmet)}" if unmet else "every target met")
if missing:
    print(f"no figures from: {', '.join(missing)}")
PY
