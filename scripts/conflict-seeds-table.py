#!/usr/bin/env python3
"""Per bug and seed, the hit ratios of scripts/conflict-suite.sh's cells
side by side, then per cell the geometric mean of its ratio to the base
strategy (failures of all seeds together) over groups of bugs, its worst
bug, and the ratio of two "+" cells with its standard error.

  conflict-seeds-table.py ROWS.tsv... --cells CELL... [--group NAME=BUG,BUG ...]
                          [--versus CELL_A/CELL_B ...] [--seeds S ...]

The first CELL is the base. A cell that found nothing counts as half a
failure, so a ratio stays finite (as in conflict-table.py). The standard
error of a log ratio is the binomial one, (1-p)/(n p) per hit ratio,
summed; a geometric mean's is the root of the sum over its bugs over
their count: the sampling noise of the trials, not the spread between
bugs."""
import argparse, collections, math, sys

ap = argparse.ArgumentParser()
ap.add_argument("rows", nargs="+")
ap.add_argument("--cells", nargs="+", required=True)
ap.add_argument("--group", action="append", default=[])
ap.add_argument("--versus", action="append", default=[])
ap.add_argument("--seeds", nargs="+", help="only these seeds' rows")
a = ap.parse_args()

hits = collections.defaultdict(lambda: [0, 0])  # (bug, cell, seed) -> failures, trials
bugs, seeds = [], []
for path in a.rows:
    for line in open(path):
        if not line.strip():
            continue
        bug, cell, seed, trials, failures = line.rstrip("\n").split("\t")[:5]
        if cell not in a.cells or a.seeds and seed not in a.seeds:
            continue
        if bug not in bugs:
            bugs.append(bug)
        if seed not in seeds:
            seeds.append(seed)
        h = hits[bug, cell, seed]
        h[0] += int(failures)
        h[1] += int(trials)
seeds.sort(key=int)


def pooled(bug, cell, only=None):
    """Failures and trials over the seeds every cell of only has for bug."""
    f = n = 0
    for s in seeds:
        if only and any(hits[bug, c, s][1] == 0 for c in only):
            continue
        h = hits[bug, cell, s]
        f, n = f + h[0], n + h[1]
    return f, n


def logratio(bug, num, den):
    """log(num's hit ratio / den's) over the seeds both have, and its variance."""
    fa, na = pooled(bug, num, [num, den])
    fb, nb = pooled(bug, den, [num, den])
    if not na or not nb:
        return None
    pa, pb = max(fa, 0.5) / na, max(fb, 0.5) / nb
    var = (1 - pa) / (na * pa) + (1 - pb) / (nb * pb)
    return math.log(pa / pb), var


base = a.cells[0]
print("| bug | seed | " + " | ".join(a.cells) + " |")
print("|---|---|" + "---|" * len(a.cells))
for bug in bugs:
    for s in seeds + ["all"]:
        out = []
        for c in a.cells:
            f, n = pooled(bug, c) if s == "all" else hits[bug, c, s]
            out.append(f"{f}/{n} ({f / n:.3f})" if n else "-")
        if all(o == "-" for o in out) or s == "all" and sum(1 for x in seeds if hits[bug, base, x][1]) < 2:
            continue
        print(f"| {bug} | {s} | " + " | ".join(out) + " |")

groups = [(g.split("=")[0], g.split("=")[1].split(",")) for g in a.group] + [("all", bugs)]
print()
print("| ratio | " + " | ".join(f"{g} ({len([b for b in bs if b in bugs])})" for g, bs in groups) + " |")
print("|---|" + "---|" * len(groups))
pairs = [(c, base) for c in a.cells[1:]] + [tuple(v.split("/")) for v in a.versus]
for num, den in pairs:
    out = []
    for _, bs in groups:
        lr = [(b, logratio(b, num, den)) for b in bs if b in bugs]
        lr = [(b, x) for b, x in lr if x is not None]
        if not lr:
            out.append("-")
            continue
        m = sum(x[0] for _, x in lr) / len(lr)
        se = math.sqrt(sum(x[1] for _, x in lr)) / len(lr)
        wb, wx = min(lr, key=lambda t: t[1][0])
        out.append(f"×{math.exp(m):.2f} (±SE ×{math.exp(m - se):.2f}–{math.exp(m + se):.2f}), worst {wb} ×{math.exp(wx[0]):.2f}")
    print(f"| {num} / {den} | " + " | ".join(out) + " |")
