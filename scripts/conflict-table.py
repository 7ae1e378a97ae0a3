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

# With the campaigns' logs (--stats) as a second argument: the diagnosis,
# per bug and "+" cell, means over seeds.
if len(sys.argv) > 2:
    import glob, os, re

    diag = collections.defaultdict(list)
    for path in glob.glob(os.path.join(sys.argv[2], "*.txt")):
        text = open(path).read()
        m = re.search(r"^  ops ([\d.]+)  conflicting ([\d.]+)  false negatives ([\d.]+)", text, re.M)
        r = re.search(r"released at once ([\d.]+) of [\d.]+ ops per trial \(\d+%\), of them conflicting [\d.]+; not conflicting but signed like ops that did ([\d.]+)", text)
        g = re.search(r"signatures: (?:after 10 trials (\d+) \(\d+ conflicted\), )?.*at the end (\d+) \((\d+) conflicted\)", text)
        top = re.search(r"released at once\):\n +([\d.]+) +(\S+) +(\S+)  (.*)", text)
        s = re.search(r"^spec (\S+), strategy (\S+):", text, re.M)
        if not (m and r and g and s):
            continue
        sch = re.search(r"--scheme (\S+)", text)
        name = os.path.basename(path)[:-4]
        bug = s.group(1)
        c = re.search(r"^cell: (\S+)", text, re.M)
        cell = c.group(1) if c else name[len(bug) + 1:].rsplit("-", 1)[0]
        diag[bug, cell].append((float(m.group(1)), float(m.group(2)), float(m.group(3)), float(r.group(1)), float(r.group(2)),
                                int(g.group(2)), int(g.group(3)), top.group(4) if top else "", top.group(2) if top else ""))
    print()
    print("| bug | cell | ops per trial | conflicting | released at once | of them conflicting | held back, signed like a conflicting op | signatures (conflicted) | the most ops |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (bug, cell), vs in sorted(diag.items()):
        n = len(vs)
        mean = lambda k: sum(v[k] for v in vs) / n
        print(f"| {bug} | {cell} | {mean(0):.1f} | {mean(1):.1f} | {mean(3):.1f} | {mean(2):.2f} | {mean(4):.1f} | {vs[0][5]} ({vs[0][6]}) | `{vs[0][7]}` ({vs[0][8]} conflicting) |")
