#!/usr/bin/env bash
# Writes every trace of the bug suite (POS, 100 trials, seed 1) with one
# binary, for scripts/compare-traces.py: the same seed must give the same
# schedule across a change that is not meant to move one.
#   scripts/suite-traces.sh BINARY OUTDIR [bug...]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "$1"); out=$2; shift 2
mkdir -p "$out"
bugs=("$@"); [ ${#bugs[@]} -eq 0 ] && bugs=($(ls testdata/bugs | grep -v common))
for b in "${bugs[@]}"; do
  "$bin" run -q -n 100 -s pos --seed 1 -j 1 --trace-all --replace -o "$out/$b" "testdata/bugs/$b/spec.yaml" >"$out/$b.txt" 2>&1 || true
done
