#!/usr/bin/env python3
"""Trims a real lockstep trace into a small fixture (see README.md).

Keeps the header, the outcome, every connect, accept and fault record, and
of the deliveries the first PER of each (serving port, first two bytes or
a text's first 24, length in 32-byte steps) between two fault records, in
step order: enough of each protocol's messages, with their real bytes,
to tell kinds apart, in a file small enough to commit.

usage: trim.py TRACE PER > FIXTURE
"""
import base64, collections, json, sys

trace, per = sys.argv[1], int(sys.argv[2])
listen = set()
entries = [json.loads(l) for l in open(trace)]
for e in entries:
    obj = e.get("record", {}).get("op", {}).get("object", "")
    if obj.startswith("listen:"):
        listen.add(obj[len("listen:"):])
seen = collections.Counter()
phase = 0  # fault records so far: each stretch between them is sampled
for e in entries:
    r = e.get("record")
    if r is None:
        print(json.dumps(e, separators=(",", ":")))
        continue
    op = r["op"]
    kind = op["kind"]
    if op.get("lpid") == "fault":
        phase += 1
    if kind in ("connect", "accept") or op.get("lpid") == "fault":
        print(json.dumps(e, separators=(",", ":")))
        continue
    if kind != "deliver" or "data" not in r:
        continue
    src, _, dst = op.get("conn", "").partition(">")
    port = dst if dst in listen else src if src in listen else min(src, dst)
    data = base64.b64decode(r["data"])
    head = data.split(b"\n")[0][:24] if data[:1].isalpha() else data[:2]
    key = (phase, port.rsplit(":", 1)[-1], head, op.get("bytes", 0) // 32)
    seen[key] += 1
    if seen[key] <= per:
        print(json.dumps(e, separators=(",", ":")))
