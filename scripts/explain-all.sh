#!/usr/bin/env bash
# Runs `lockstep explain` on the failing traces of every spec it is given
# (issue 46: "0 tool errors"), and writes one TSV row per failing trace, or
# one per spec that did not fail within its cap, for
# scripts/explain-all-table.py.
#
#   scripts/explain-all.sh BINARY OUTDIR [SPEC[:CAP]...]
#
# Without specs: every spec under testdata/specs but testdata/specs/bad
# (invalid on purpose). Per spec, campaigns (POS unless STRATEGY says) of
# seeds 1..$FAILS, each stopping at its first failure, of at most CAP
# trials (default: the spec's trials, within [20, 100]; 5 for hostile/ and
# limits/, whose trials run into their real-time limits). Seed 2 runs only
# if seed 1 failed. Each failing trace is replayed (`lockstep replay`), each that
# replays explained (--continuations 0: the curve is not what is checked
# here), and explain's minimized trace replayed in turn.
#   FAILS    campaigns (failures) per spec, default 2
#   BUDGET   explain's budget, default 3m
#   STRATEGY the campaigns' strategy, default pos (explore: the traces of
#            its branches, whose aimed holds a replay makes up)
#
# Columns of OUTDIR/explain-all.tsv: spec cap seed trials errors trial
# kind ops replay replay_s explain_rc decisions kept one_minimal runs
# explain_s trial_s min_ops min_replays_explain min_replays_cli message.
# replay: same | diverged | error; explain_rc: 0 explained, else the
# exit status (message: its last line of stderr).
set -uo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "$1"); out=$(realpath -m "$2"); shift 2
fails=${FAILS:-2}; budget=${BUDGET:-3m}; strategy=${STRATEGY:-pos}
mkdir -p "$out"
tsv=$out/explain-all.tsv
[ -s "$tsv" ] || printf 'spec\tcap\tseed\ttrials\terrors\ttrial\tkind\tops\treplay\treplay_s\texplain_rc\tdecisions\tkept\tone_minimal\truns\texplain_s\ttrial_s\tmin_ops\tmin_replays_explain\tmin_replays_cli\tmessage\n' >"$tsv"

specs=("$@")
if [ ${#specs[@]} -eq 0 ]; then
  mapfile -t specs < <(find testdata/specs -name '*.yaml' -not -path '*/bad/*' | sort)
fi

# capOf is the trial cap of a spec given without one.
capOf() {
  case $1 in
    */hostile/*|*/limits/*) echo 5; return ;;
  esac
  local n
  n=$(sed -n 's/^trials: *\([0-9]*\).*/\1/p' "$1")
  n=${n:-20}
  ((n < 20)) && n=20
  ((n > 100)) && n=100
  echo "$n"
}

# field prints a top-level field of a JSON file, or "-".
field() {
  python3 - "$1" "$2" <<'EOF'
import json, sys
try:
    v = json.load(open(sys.argv[1])).get(sys.argv[2], "-")
except Exception:
    v = "-"
if isinstance(v, bool):
    v = "yes" if v else "no"
print(v)
EOF
}

# oneLine is a file's last non-empty line, tabs and newlines out.
oneLine() { grep -v '^\s*$' "$1" 2>/dev/null | tail -1 | tr '\t' ' ' | cut -c1-300; }

now() { date +%s.%N; }
secs() { python3 -c "print(f'{$2-$1:.2f}')"; }

# explainTrace replays, explains and replays the minimized trace of one
# failing trace; it prints the row's columns from trial on.
explainTrace() {
  local trace=$1 dir=$2 trial=$3 kind=$4 ops=$5
  local t0 t1 rrc replay=same erc
  t0=$(now)
  "$bin" replay -o "$dir/replay" "$trace" >"$dir/replay.txt" 2>&1; rrc=$?
  t1=$(now)
  if ! grep -q '^same outcome' "$dir/replay.txt"; then
    replay=diverged; ((rrc == 2)) || ((rrc == 1)) || replay=error
    printf '%s\t%s\t%s\t%s\t%s\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t%s\n' "$trial" "$kind" "$ops" "$replay" "$(secs "$t0" "$t1")" "$(oneLine "$dir/replay.txt")"
    return
  fi
  local rs; rs=$(secs "$t0" "$t1")
  "$bin" explain --continuations 0 --budget "$budget" -o "$dir/explain" --json "$dir/explain.json" "$trace" >"$dir/explain.txt" 2>"$dir/explain.err"; erc=$?
  if ((erc != 0)); then
    printf '%s\t%s\t%s\t%s\t%s\t%s\t-\t-\t-\t-\t-\t-\t-\t-\t-\t%s\n' "$trial" "$kind" "$ops" "$replay" "$rs" "$erc" "$(oneLine "$dir/explain.err")"
    return
  fi
  local j=$dir/explain.json kept mtrace mcli=no msg=""
  kept=$(python3 -c "import json;print(len(json.load(open('$j')).get('races') or []))")
  mtrace=$(field "$j" minimized_trace)
  if [ "$mtrace" != "-" ] && [ -f "$mtrace" ]; then
    "$bin" replay -o "$dir/mreplay" "$mtrace" >"$dir/mreplay.txt" 2>&1
    if grep -q '^same outcome' "$dir/mreplay.txt"; then mcli=yes; else msg="minimized: $(oneLine "$dir/mreplay.txt")"; fi
  else
    mcli=none
  fi
  [ "$(field "$j" minimized_replays)" = yes ] || msg="${msg:+$msg; }explain: $(field "$j" minimized_diverged)"
  printf '%s\t%s\t%s\t%s\t%s\t0\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$trial" "$kind" "$ops" "$replay" "$rs" \
    "$(field "$j" decisions)" "$kept" "$(field "$j" one_minimal)" "$(field "$j" runs)" \
    "$(python3 -c "import json;print(f\"{json.load(open('$j'))['elapsed']/1e9:.2f}\")")" \
    "$(python3 -c "import json;print(f\"{json.load(open('$j'))['trial_time']/1e9:.3f}\")")" \
    "$(field "$j" minimized_ops)" "$(field "$j" minimized_replays)" "$mcli" "$msg"
}

for arg in "${specs[@]}"; do
  sp=${arg%%:*}; cap=${arg#*:}; [ "$cap" = "$arg" ] && cap=$(capOf "$sp")
  name=${sp#testdata/specs/}; name=${name%.yaml}; name=${name//\//-}
  echo "== $sp (cap $cap)" >&2
  for seed in $(seq 1 "$fails"); do
    d=$out/$name/seed$seed
    mkdir -p "$d"
    "$bin" run -q -s "$strategy" --seed "$seed" -n "$cap" --stop-on-first --verify=false --replace \
      -o "$d/run" --json "$d/summary.json" "$sp" >"$d/run.txt" 2>&1
    rc=$?
    pre=$(printf '%s\t%s\t%s\t%s\t%s' "$sp" "$cap" "$seed" "$(field "$d/summary.json" trials)" "$(field "$d/summary.json" errors)")
    if ((rc == 0)); then
      printf '%s\tnone\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t\n' "$pre" >>"$tsv"
      break
    elif ((rc != 1)); then
      printf '%s\trun-error\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t%s\n' "$pre" "$(oneLine "$d/run.txt")" >>"$tsv"
      break
    fi
    read -r trial kind ops trace < <(python3 -c "
import json; f=json.load(open('$d/summary.json'))['first_failure']
print(f['trial'], f['kind'], f['steps'], f['trace'])")
    printf '%s\t%s\n' "$pre" "$(explainTrace "$trace" "$d" "$trial" "$kind" "$ops")" >>"$tsv"
    tail -1 "$tsv" >&2
  done
done
