#!/usr/bin/env python3
"""The figures of scripts/bench-ab.sh: every summary row of base against ours, round by round.

    python3 bench/ab.py DIR --base TEXT --ours TEXT

DIR holds base-1/, ours-1/, base-2/, ... each with the TSV summary rows the benchmarks wrote
(scripts/bench-lib.sh's summary_row: figure, value, ...). For every figure: base's and ours'
median, the per-round ratios ours / base, their median and spread, and which way is better
(higher for rates — req/s, pushes/s, per GB — lower for everything else). A ratio whose spread
lies wholly on the worse side of 1 is flagged: a regression the rounds agree on.
"""

import argparse
import glob
import os
import re
import statistics

HIGHER_IS_BETTER = re.compile(r"req/s|pushes/s|messages/s|rings/s|per GB|calls/s|sustained|calls at")


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def load(directory):
    """{(round, side): {figure: value}}"""
    figures = {}
    for path in glob.glob(os.path.join(directory, "*-*", "*.tsv")):
        run = os.path.basename(os.path.dirname(path))
        side, rnd = run.rsplit("-", 1)
        bench = os.path.basename(path)[:-4]
        with open(path) as fh:
            for line in fh:
                fields = line.rstrip("\n").split("\t")
                if len(fields) >= 2:
                    figures.setdefault((int(rnd), side), {})[f"{bench}: {fields[0].strip()}"] = number(fields[1])
    return figures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("directory")
    ap.add_argument("--base", default="base")
    ap.add_argument("--ours", default="ours")
    args = ap.parse_args()
    figures = load(args.directory)
    rounds = sorted({r for r, _ in figures})
    names = []
    for r in rounds:
        for side in ("base", "ours"):
            for name in figures.get((r, side), {}):
                if name not in names:
                    names.append(name)
    print(f"\nA/B: base = {args.base}; ours = {args.ours}; {len(rounds)} alternating rounds\n")
    header = f"{'figure':<72} {'base':>10} {'ours':>10} {'ours/base':>9} {'spread':>11}  verdict"
    print(header)
    print("-" * len(header))
    flagged = []
    for name in names:
        pairs = [(figures.get((r, "base"), {}).get(name), figures.get((r, "ours"), {}).get(name)) for r in rounds]
        pairs = [(b, o) for b, o in pairs if b is not None and o is not None]
        if not pairs:
            continue
        base_med = statistics.median(b for b, _ in pairs)
        ours_med = statistics.median(o for _, o in pairs)
        ratios = sorted(o / b for b, o in pairs if b)
        if not ratios:
            print(f"{name[:72]:<72} {base_med:>10.3g} {ours_med:>10.3g} {'n/a':>9}")
            continue
        ratio = statistics.median(ratios)
        spread = f"{ratios[0]:.2f}–{ratios[-1]:.2f}" if len(ratios) > 1 else "-"
        higher = bool(HIGHER_IS_BETTER.search(name))
        worse = (ratios[-1] < 1.0) if higher else (ratios[0] > 1.0)
        better = (ratios[0] > 1.0) if higher else (ratios[-1] < 1.0)
        verdict = "WORSE in every round" if worse else "better in every round" if better else "within noise"
        if worse:
            flagged.append(name)
        print(f"{name[:72]:<72} {base_med:>10.4g} {ours_med:>10.4g} {ratio:>9.2f} {spread:>11}  {verdict}")
    print()
    print("ratio = ours / base per round (median, spread = lowest–highest round); for rates higher is "
          "better, for times, CPU and memory lower is.")
    print(f"worse in every round: {', '.join(flagged)}" if flagged else "no figure is worse in every round")


if __name__ == "__main__":
    main()
