#!/usr/bin/env python3
"""Table of trials to first failure per bug and strategy (rows from
explore-suite.sh), with the geometric mean ratio of each strategy to the
first one. A trial index i found means i+1 trials; not found: cap+1.
With a third argument "hit", the table gives each campaign's failures of
its trials (hit ratio) instead, and the ratio of the mean hit ratios."""
import math
import sys
from collections import defaultdict

rows, cap = sys.argv[1], int(sys.argv[2])
hit = len(sys.argv) > 3 and sys.argv[3] == "hit"
runs = defaultdict(dict)  # (bug) -> {(strategy, seed): trials}
failures = defaultdict(dict)
order = []
for line in open(rows):
    f = line.rstrip("\n").split("\t")
    bug, st, seed, first, ran, secs = f[:6]
    n = int(first) + 1 if first != "-" else cap + 1
    runs[bug][(st, seed)] = (n, int(ran), float(secs))
    failures[bug][(st, seed)] = int(f[6]) if len(f) > 6 else 0
    if st not in order:
        order.append(st)
if hit:
    print(f"Failing trials of {cap}, per seed (hit ratio: their mean over {cap})\n")
    print("| bug | " + " | ".join(order) + " | ratio |")
    print("|---|" + "---|" * (len(order) + 1))
    logs = defaultdict(list)
    for bug in sorted(runs):
        cells, means = [], {}
        for st in order:
            fs = [v for (s, _), v in sorted(failures[bug].items()) if s == st]
            cells.append(" ".join(map(str, fs)))
            means[st] = (sum(fs) + 0.5) / (len(fs) * cap)  # +0.5: a bug never hit still has a ratio
        ratios = []
        for st in order[1:]:
            r = means[st] / means[order[0]]
            logs[st].append(math.log(r))
            ratios.append(f"{r:.2f}")
        print(f"| {bug} | " + " | ".join(cells) + " | " + " ".join(ratios) + " |")
    print()
    for st in order[1:]:
        print(f"geometric mean of per-bug hit-ratio ratios, {st} / {order[0]}: {math.exp(sum(logs[st]) / len(logs[st])):.2f}")
    sys.exit(0)
print(f"Trials to first failure (at most {cap}; '>{cap}' not found), per seed\n")
print("| bug | " + " | ".join(order) + " | ratio |")
print("|---|" + "---|" * (len(order) + 1))
logs = defaultdict(list)
for bug in sorted(runs):
    cells = []
    means = {}
    for st in order:
        ns = [v[0] for (s, _), v in sorted(runs[bug].items()) if s == st]
        cells.append(" ".join(str(n) if n <= cap else f">{cap}" for n in ns))
        means[st] = math.exp(sum(math.log(n) for n in ns) / len(ns)) if ns else float("nan")
    base = order[0]
    ratios = []
    for st in order[1:]:
        r = means[st] / means[base]
        logs[st].append(math.log(r))
        ratios.append(f"{r:.2f}")
    print(f"| {bug} | " + " | ".join(cells) + " | " + " ".join(ratios) + " |")
print()
for st in order[1:]:
    g = math.exp(sum(logs[st]) / len(logs[st]))
    print(f"geometric mean of per-bug ratios, {st} / {order[0]}: {g:.2f}")
rates = defaultdict(lambda: [0, 0.0])
for bug in runs:
    for (st, _), (n, ran, secs) in runs[bug].items():
        rates[st][0] += ran
        rates[st][1] += secs
print()
for st in order:
    t, s = rates[st]
    print(f"{st}: {t} trials in {s:.0f} s ({60 * t / s:.1f} trials/min, wall clock, machine shared)")
