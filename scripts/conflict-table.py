#!/usr/bin/env python3
"""Table of scripts/conflict-suite.sh's rows: hit ratio per bug and cell
(failures over trials, all seeds together), each "+" cell's ratio to its
base strategy's cell, and the geometric means. A cell that found nothing
counts as half a failure in the ratio, so that a ratio stays finite."""
import collections, math, sys

rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
hits = collections.defaultdict(lambda: [0, 0])  # (bug, cell) -> failures, trials
secs = collections.defaultdict(float)
imm = collections.defaultdict(list)
bugs, cells = [], []
for bug, cell, seed, trials, failures, first, s, released in rows:
    if bug not in bugs:
        bugs.append(bug)
    if cell not in cells:
        cells.append(cell)
    h = hits[bug, cell]
    h[0] += int(failures)
    h[1] += int(trials)
    secs[bug, cell] += float(s)
    if released != "-":
        a, b = released.split("/")
        imm[bug, cell].append(float(a) / max(float(b), 1e-9))


def base(cell):
    return cell.split(":")[0].rstrip("+")


cells.sort(key=lambda c: (base(c), c != base(c), c))


def ratio(bug, cell):
    f, n = hits[bug, cell]
    bf, bn = hits[bug, base(cell)]
    if not n or not bn:
        return None
    return (max(f, 0.5) / n) / (max(bf, 0.5) / bn)


print("| bug | " + " | ".join(cells) + " |")
print("|---|" + "---|" * len(cells))
for bug in bugs:
    out = []
    for c in cells:
        f, n = hits[bug, c]
        s = f"{f}/{n} ({f / n:.3f})" if n else "-"
        r = ratio(bug, c) if c != base(c) else None
        if r is not None:
            s += f" ×{r:.2f}"
        if imm[bug, c]:
            s += f", {100 * sum(imm[bug, c]) / len(imm[bug, c]):.0f}% at once"
        out.append(s)
    print(f"| {bug} | " + " | ".join(out) + " |")
gm = []
for c in cells:
    if c == base(c):
        gm.append("")
        continue
    rs = [ratio(b, c) for b in bugs if ratio(b, c) is not None]
    if not rs:
        gm.append("")
        continue
    g = math.exp(sum(math.log(r) for r in rs) / len(rs))
    gm.append(f"geomean ×{g:.2f}, worst ×{min(rs):.2f}")
print("| **ratio to base** | " + " | ".join(gm) + " |")
