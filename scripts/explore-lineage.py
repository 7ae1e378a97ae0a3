#!/usr/bin/env python3
"""What an exploring campaign's trials were and what each kind did.

Reads DIR/<bug>-<seed>.log (`lockstep run -s explore --log-level info`,
stderr: a line per trial with its plan and outcome) and DIR/<bug>-<seed>.json
(`--json`: the coverage curve, features after each trial), and puts every
trial from the second generation on (trial 8 on) in one class: a fresh
draw, a branch of a trial that failed, or a branch of a trial that passed
by where its prefix ends (quarters of the parent's decisions). Prints, per
class, the share of trials that failed, that showed a feature first, and
the new features per trial; then failures per bug and class.

    scripts/explore-lineage.py DIR [POS-ROWS.tsv]

POS-ROWS is scripts/explore-suite.sh's rows with HIT=1 (a `pos` column).
"""
import collections
import glob
import json
import os
import re
import sys

PLAN = re.compile(r'msg=explore trial=(\d+) plan="?(.*?)"? outcome=(\S+)$')
BRANCH = re.compile(r'trial (\d+) to decision (\d+) of (\d+), then (\w+)')


def trials(log):
    out = {}
    for line in open(log):
        m = PLAN.search(line.strip())
        if m:
            out[int(m.group(1))] = (m.group(2), m.group(3))
    return out


def kind(out, plan):
    m = BRANCH.match(plan)
    if not m:
        return 'fresh'
    if out[int(m.group(1))][1] != 'pass':
        return 'branch of a failing trial'
    q = min(3, int(4 * int(m.group(2)) / max(1, int(m.group(3)))))
    return 'branch of a passing trial, prefix %d-%d %%' % (25 * q, 25 * q + 25)


def main():
    d = sys.argv[1]
    cls = collections.defaultdict(lambda: [0, 0, 0, 0])
    bugs = collections.defaultdict(collections.Counter)
    for log in sorted(glob.glob(os.path.join(d, '*-[0-9]*.log'))):
        out = trials(log)
        curve = json.load(open(log[:-4] + '.json'))['coverage']['Curve']
        bug = re.sub(r'-\d+\.log$', '', os.path.basename(log))
        for t, (plan, outcome) in sorted(out.items()):
            k = kind(out, plan)
            failed = outcome != 'pass'
            short = k.split(',')[0]
            bugs[bug][short + ' n'] += 1
            bugs[bug][short + ' f'] += failed
            if t < 8 or t >= len(curve):
                continue
            new = curve[t] - curve[t - 1]
            c = cls[k]
            c[0] += 1
            c[1] += failed
            c[2] += new > 0
            c[3] += new
    print('| trials (8 on) | trials | failing | novel | new features per trial |')
    print('|---|---|---|---|---|')
    for k in sorted(cls):
        n, f, nv, nf = cls[k]
        print(f'| {k} | {n} | {f / n:.3f} | {nv / n:.3f} | {nf / n:.2f} |')
    pos = collections.Counter()
    if len(sys.argv) > 2:
        for line in open(sys.argv[2]):
            x = line.rstrip('\n').split('\t')
            if len(x) >= 7 and x[1] == 'pos':
                pos[x[0] + ' n'] += int(x[4])
                pos[x[0] + ' f'] += int(x[6])
    print()
    print('| bug | POS | explore | fresh | branch of a passing trial | branch of a failing trial |')
    print('|---|---|---|---|---|---|')
    tot = collections.Counter()

    def cell(f, n):
        return f'{f}/{n}' + (f' ({f / n:.2f})' if n else '')
    for bug, c in sorted(bugs.items()):
        ks = ['fresh', 'branch of a passing trial', 'branch of a failing trial']
        f = sum(c[k + ' f'] for k in ks)
        n = sum(c[k + ' n'] for k in ks)
        print(f'| {bug} | {cell(pos[bug + " f"], pos[bug + " n"])} | {cell(f, n)} | '
              + ' | '.join(cell(c[k + ' f'], c[k + ' n']) for k in ks) + ' |')
        for k in ks:
            tot[k + ' f'] += c[k + ' f']
            tot[k + ' n'] += c[k + ' n']
        tot['pos f'] += pos[bug + ' f']
        tot['pos n'] += pos[bug + ' n']
    ks = ['fresh', 'branch of a passing trial', 'branch of a failing trial']
    print(f'| all | {cell(tot["pos f"], tot["pos n"])} | '
          f'{cell(sum(tot[k + " f"] for k in ks), sum(tot[k + " n"] for k in ks))} | '
          + ' | '.join(cell(tot[k + ' f'], tot[k + ' n']) for k in ks) + ' |')


if __name__ == '__main__':
    main()
