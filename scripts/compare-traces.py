#!/usr/bin/env python3
"""Compares two runs of scripts/suite-traces.sh trace by trace.

    scripts/compare-traces.py BASE OTHER [bug...]

Every record of every trial's trace must be equal, the header's spec path,
digest and version and the outcome's message text aside (IGNORE_SITE=1 also
sets call sites and signatures aside, for a change that rebuilt the
programs; IGNORE_CALLER=1 sets the program's frame above a library site
aside, for a change that names more callers). Prints a line per bug and the first differing line of up to two
trials; exits 1 when any trace differs."""
import json, os, sys
base, other = sys.argv[1], sys.argv[2]
bugs = sys.argv[3:] or sorted(d for d in os.listdir(base) if os.path.isdir(os.path.join(base, d)))
bad = 0
def load(p):
    out = []
    for line in open(p):
        j = json.loads(line)
        if 'header' in j:
            h = j['header']; h.pop('spec', None); h.pop('spec_digest', None); h.pop('version', None)
        if os.environ.get('IGNORE_SITE') and 'record' in j:
            op = j['record'].get('op') or {}
            op.pop('site', None); op.pop('signature', None)
        if os.environ.get('IGNORE_CALLER') and 'record' in j:
            (j['record'].get('op') or {}).pop('caller', None)
        if 'outcome' in j:
            o = j['outcome']; o.pop('detail', None); o.pop('message', None)
        out.append(json.dumps(j, sort_keys=True))
    return out
for b in bugs:
    td = os.path.join(base, b, 'trials'); od = os.path.join(other, b, 'trials')
    if not os.path.isdir(od):
        print(f"{b}: missing in {other}"); bad += 1; continue
    trials = sorted(os.listdir(td)); diff = []
    for t in trials:
        p, q = os.path.join(td, t, 'trace.jsonl'), os.path.join(od, t, 'trace.jsonl')
        if not os.path.exists(q): diff.append((t, 'missing')); continue
        a, c = load(p), load(q)
        if a != c:
            i = next((i for i in range(min(len(a), len(c))) if a[i] != c[i]), min(len(a), len(c)))
            diff.append((t, f"line {i+1}: {a[i][:300] if i < len(a) else 'EOF'} <> {c[i][:300] if i < len(c) else 'EOF'}"))
    fails = lambda d: sum(1 for t in trials if os.path.exists(os.path.join(d, t, 'trace.jsonl')) and '"pass"' not in open(os.path.join(d, t, 'trace.jsonl')).readlines()[-1])
    print(f"{b}: {len(trials)} trials, failures {fails(td)} vs {fails(od)}, differing {len(diff)}")
    for t, m in diff[:2]: print(f"   {t}: {m}")
    bad += len(diff)
sys.exit(1 if bad else 0)
