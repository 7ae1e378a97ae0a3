#!/usr/bin/env python3
"""How many trials of one or more campaigns printed each line, and how often.

Reads the node output every trial of a campaign leaves (OUT/trials/NNNNN/<node>.out
and .err) and masks each line roughly as lockstep's log templates do (a leading
timestamp dropped, key=value values, numbers and node names masked). Prints, for
each template, the number of trials that printed it, rarest first: a symptom
line printed by most trials gives --symptom nothing to steer by.

With --count REGEX, prints instead how many times the node that printed a
matching line most printed it in each trial, as a histogram in ranges that
double (0, 1, 2, 3, 4-7, 8-15, ...): whether a repetition (a livelock's) has
a gradient of partial counts in passing trials or comes all at once.

    python3 scripts/line-trials.py OUT1 OUT2 ... [--nodes n1,n2,n3] [--count REGEX]
"""
import argparse
import collections
import os
import re

STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\S+\s+")


def template(line):
    line = STAMP.sub("", line)
    line = re.sub(r"\b(raft-)?n\d+\b", "N", line)
    line = re.sub(r"=\S+", "=X", line)
    line = re.sub(r"\d+", "#", line)
    return line[:120]


def trials(outs):
    for out in outs:
        root = os.path.join(out, "trials")
        for t in sorted(os.listdir(root)):
            yield os.path.join(root, t)


def node_lines(trial, nodes):
    for f in sorted(os.listdir(trial)):
        node, _, ext = f.rpartition(".")
        if ext not in ("out", "err") or nodes and node not in nodes:
            continue
        with open(os.path.join(trial, f), errors="replace") as fh:
            yield node, fh.read().splitlines()


def bucket(n):
    if n < 4:
        return str(n)
    lo = 1 << (n.bit_length() - 1)
    return f"{lo}-{2 * lo - 1}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outs", nargs="+")
    ap.add_argument("--nodes", default="")
    ap.add_argument("--count")
    a = ap.parse_args()
    nodes = set(filter(None, a.nodes.split(",")))
    n = 0
    if a.count:
        pat = re.compile(a.count)
        hist = collections.Counter()
        for t in trials(a.outs):
            n += 1
            most = max((sum(1 for l in lines if pat.search(l)) for _, lines in node_lines(t, nodes)), default=0)
            hist[most] += 1
        by = collections.Counter()
        for k, v in hist.items():
            by[bucket(k)] += v
        order = sorted(by, key=lambda b: int(b.split("-")[0]))
        print(f"{n} trials; the most lines matching {a.count!r} one node printed in a trial:")
        for b in order:
            print(f"  {b:>9}: {by[b]} trials")
        return
    seen = collections.Counter()
    for t in trials(a.outs):
        n += 1
        seen.update({template(l) for _, lines in node_lines(t, nodes) for l in lines})
    print(f"{n} trials")
    for tpl, c in sorted(seen.items(), key=lambda kv: (kv[1], kv[0])):
        print(f"{c:6d}  {c / n:6.1%}  {tpl}")


if __name__ == "__main__":
    main()
