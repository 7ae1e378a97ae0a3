#!/usr/bin/env bash
# lockstep's main job on the bundled example (testdata/demo): a lock server,
# a starter and a writer on three nodes. A message delayed in flight makes
# the server abort; a plain run practically never shows it.
#   1. run 200 trials with POS and stop at the first failure;
#   2. show the failing interleaving;
#   3. replay the trace and check it fails the same way;
#   4. run the fixed variant for 200 trials: no failure.
set -euo pipefail
cd "$(dirname "$0")/.."
LS=./bin/lockstep
OUT=$(mktemp -d /tmp/lockstep-demo.XXXXXX)

echo "== natively, without lockstep: 200 plain runs"
bash testdata/demo/native.sh 200 || true

echo
echo "== lockstep run (POS, up to 200 trials, stop at the first failure)"
set +e
$LS run --stop-on-first -o "$OUT/buggy" testdata/demo/demo.yaml
rc=$?
set -e
if [ $rc -ne 1 ]; then
  echo "demo: expected lockstep to find the bug (exit 1), got exit $rc" >&2
  exit 1
fi
TRACE=$(ls "$OUT"/buggy/trials/*/trace.jsonl | head -1)

echo
echo "== lockstep show $TRACE"
$LS show "$TRACE"

echo
echo "== lockstep replay (3 times)"
for i in 1 2 3; do
  set +e
  $LS replay "$TRACE"
  rc=$?
  set -e
  [ $rc -eq 1 ] || { echo "demo: replay did not reproduce the failure (exit $rc)" >&2; exit 1; }
done

echo
echo "== the fixed lock server: 200 trials of POS"
$LS run -q -o "$OUT/fixed" testdata/demo/demo-fixed.yaml
echo
echo "demo: done; outputs in $OUT"
