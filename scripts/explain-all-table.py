#!/usr/bin/env python3
"""Markdown tables of scripts/explain-all.sh's TSV files.

    scripts/explain-all-table.py TSV...

One table of the failing traces (replayed, explained, minimized trace
replayed, explain's time over one replay measured in the same process),
the specs that did not fail within their cap, the campaigns that ended in
lockstep errors, and the totals; every explain error and every minimized
trace that did not replay, with its message.
"""
import csv
import sys


def rows(paths):
    for path in paths:
        with open(path, newline="") as f:
            yield from csv.DictReader(f, delimiter="\t")


def ratio(row):
    try:
        return f"{float(row['explain_s']) / float(row['trial_s']):.0f}×"
    except (ValueError, ZeroDivisionError):
        return "-"


def main(paths):
    failing, quiet, runErrors, errors = [], [], [], []
    for r in rows(paths):
        if r["trial"] == "none":
            quiet.append(r)
        elif r["trial"] == "run-error":
            runErrors.append(r)
        else:
            failing.append(r)
    failed = {r["spec"] for r in failing}
    print("| spec | seed | trial | failure | steps | replays | explained | decisions → kept | runs | explain / one replay | minimized ops | minimized replays (explain / `replay`) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in failing:
        explained = {"-": "-", "0": "yes"}.get(r["explain_rc"], f"**error ({r['explain_rc']})**")
        print(f"| {r['spec']} | {r['seed']} | {r['trial']} | {r['kind']} | {r['ops']} | {r['replay']} | {explained} "
              f"| {r['decisions']} → {r['kept']}{'' if r['one_minimal'] in ('yes', '-') else ' (not shown 1-minimal)'} | {r['runs']} | {ratio(r)} | {r['min_ops']} "
              f"| {r['min_replays_explain']} / {r['min_replays_cli']} |")
        if r["replay"] == "same" and r["explain_rc"] != "0":
            errors.append((r["spec"], "explain", r["message"]))
        elif r["explain_rc"] == "0" and (r["min_replays_explain"] != "yes" or r["min_replays_cli"] != "yes"):
            errors.append((r["spec"], "minimized trace", r["message"]))
    print()
    never = [r for r in quiet if r["spec"] not in failed]
    print("No failure within the cap (seed 1):", ", ".join(f"{r['spec']} ({r['trials']} trials)" for r in never) or "none")
    print()
    if runErrors:
        print("Campaigns that ended in lockstep errors (no failing trace):")
        for r in runErrors:
            print(f"- {r['spec']}, seed {r['seed']}: {r['errors']} of {r['trials']} trials: {r['message']}")
        print()
    replayed = [r for r in failing if r["replay"] == "same"]
    explained = [r for r in replayed if r["explain_rc"] == "0"]
    minimized = [r for r in explained if r["min_replays_explain"] == "yes" and r["min_replays_cli"] == "yes"]
    specs = {r["spec"] for r in failing}
    print(f"Totals: {len(failing)} failing traces of {len(specs)} specs; {len(replayed)} replayed; "
          f"{len(explained)} explained; {len(minimized)} minimized traces replayed "
          f"(by explain and by `lockstep replay`); {len(errors)} tool errors.")
    if len(errors) == 0:
        return
    for spec, where, msg in errors:
        print(f"- {spec} ({where}): {msg}")


if __name__ == "__main__":
    main(sys.argv[1:])
