#!/usr/bin/env python3
"""Usage: stale-wins.py OUT [OUT ...]

For each campaign output directory OUT (lockstep run -o OUT; every trial's
node output is under OUT/trials), lists the trials in which a member
printed `election won: term=X` strictly after (in virtual time) another
member had printed a win of a newer term, and says which kind it was:

  legal    the late winner printed `peer has newer term` at the same
           instant: its term was the old one, and it stepped down;
  SUSPECT  it did not: it led in the newer term on an older term's grants,
           hashicorp/raft#695's shape (two leaders in one term).

hashicorp/raft prints the term of the vote that completed the tally, not
the term the member then leads in, so a `unique` property over these lines
cannot tell the two apart (README.md, "One leader per term")."""
import glob
import os
import re
import sys

LINE = re.compile(r'^(\S+) \[\w+\]\s+raft-(n\d+): (.*)')
WON = re.compile(r'election won: term=(\d+)')


def lines_of(trial):
    """The members' log lines, (time, file, index, member, message), in
    time order (ties by file and line)."""
    out = []
    for path in sorted(glob.glob(os.path.join(trial, 'n*.err'))):
        with open(path, errors='replace') as f:
            for i, line in enumerate(f):
                m = LINE.match(line)
                if m:
                    out.append((m.group(1), os.path.basename(path), i, m.group(2), m.group(3)))
    out.sort()
    return out


def stale_wins(trial):
    lines = lines_of(trial)
    wins = []
    for k, (ts, _, _, member, msg) in enumerate(lines):
        m = WON.match(msg)
        if m:
            wins.append((ts, member, int(m.group(1)), k))
    found = []
    for ts, member, term, k in wins:
        newer = [t for ts2, other, t, _ in wins if other != member and t > term and ts2 < ts]
        if not newer:
            continue
        heard = any(x[3] == member and x[0] == ts and 'peer has newer term' in x[4] for x in lines[k + 1:])
        found.append((ts, member, term, max(newer), 'legal' if heard else 'SUSPECT'))
    return found


def main(outs):
    if not outs:
        sys.exit(__doc__)
    for out in outs:
        trials = sorted(glob.glob(os.path.join(out, 'trials', '*')))
        hits = 0
        for trial in trials:
            found = stale_wins(trial)
            hits += bool(found)
            for ts, member, term, newer, kind in found:
                print(f'{out} trial {os.path.basename(trial)}: {member} won term {term} at {ts}, '
                      f'after a win of term {newer}: {kind}')
        print(f'{out}: {hits} of {len(trials)} trials')


if __name__ == '__main__':
    main(sys.argv[1:])
