#!/bin/bash
# shard-demo.sh: runs a campaign of the bundled demo (TRIALS=1000, SEED=1,
# strategy pos) once in one process and once split into SHARDS=8 shards on
# a job engine, merges the shards, and compares the two trial for trial:
# every trial's outcome and schedule, the failing trials, the summary
# table and the JSON and JUnit reports. Exits 1 on any difference.
#
# ENGINE=slurm (the default when slurm-wlm and munge are installed) starts
# a private one-node Slurm cluster in a temporary directory (its own
# config, munge key and socket, ports 16817-16818; nothing under /etc is
# touched), runs the shards as an array job (sbatch --array=0-7, the shard
# from SLURM_ARRAY_TASK_ID) and stops the cluster at the end.
# ENGINE=local runs the shards as processes with JOB_COMPLETION_INDEX set,
# as a Kubernetes Indexed Job's pods have it (SHARD_JOBS at a time).
# OUT keeps the results (default: a new /tmp directory). Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
trials=${TRIALS:-1000}
shards=${SHARDS:-8}
seed=${SEED:-1}
strategy=${STRATEGY:-pos}
lockstep=$(realpath "${LOCKSTEP:-bin/lockstep}")
spec=$(realpath testdata/demo/demo.yaml)
out=${OUT:-$(mktemp -d /tmp/lockstep-shard-demo.XXXXXX)}
mkdir -p "$out"
out=$(realpath "$out")
if [ -z "${ENGINE:-}" ]; then
	ENGINE=local
	if command -v sbatch slurmctld slurmd munged >/dev/null; then ENGINE=slurm; fi
fi
[ -x "$lockstep" ] && [ -x testdata/bin/demo/lockserver ] || { echo "run make build testdata first" >&2; exit 2; }
common=(--trials "$trials" --seed "$seed" --strategy "$strategy" --quiet --trace-all)

# A private Slurm cluster of this machine alone.
slurm_up() {
	local d=$out/slurm
	mkdir -p "$d/state" "$d/spool" "$d/log"
	dd if=/dev/urandom of="$d/munge.key" bs=1024 count=1 status=none
	chmod 400 "$d/munge.key"
	cat >"$d/slurm.conf" <<EOF
ClusterName=lockstep-demo
SlurmctldHost=$(hostname -s)(127.0.0.1)
SlurmctldPort=16817
SlurmdPort=16818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$d/munge.sock
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd.log
# lockstep makes its own cgroups: Slurm tracks processes without them.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
NodeName=$(hostname -s) NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=demo Nodes=$(hostname -s) Default=YES MaxTime=INFINITE State=UP
EOF
	export SLURM_CONF=$d/slurm.conf
	munged --force --socket="$d/munge.sock" --key-file="$d/munge.key" --pid-file="$d/munged.pid" \
		--log-file="$d/log/munged.log" --seed-file="$d/munge.seed"
	slurmctld -i
	slurmd
	for _ in $(seq 50); do
		sinfo -h -o %t 2>/dev/null | grep -q idle && return 0
		sleep 0.2
	done
	echo "slurm did not come up: see $d/log" >&2
	return 1
}

slurm_down() {
	local d=$out/slurm
	scontrol shutdown >/dev/null 2>&1 || true
	for p in slurmd slurmctld; do
		[ -f "$d/$p.pid" ] && kill "$(cat "$d/$p.pid")" 2>/dev/null || true
	done
	sleep 0.5
	[ -f "$d/munged.pid" ] && kill "$(cat "$d/munged.pid")" 2>/dev/null || true
}

echo "== one process: $trials trials, seed $seed, $strategy"
t0=$(date +%s.%N)
rc_one=0
"$lockstep" run "$spec" "${common[@]}" -o "$out/one" --json "$out/one.json" --junit "$out/one.xml" >"$out/one.txt" || rc_one=$?
t1=$(date +%s.%N)

echo "== $shards shards on $ENGINE"
rm -rf "$out/shards"
case $ENGINE in
slurm)
	trap slurm_down EXIT
	slurm_up
	sinfo
	cat >"$out/shards.sbatch" <<EOF
#!/bin/bash
#SBATCH --job-name=lockstep-demo
#SBATCH --array=0-$((shards - 1))
#SBATCH --cpus-per-task=1
#SBATCH --output=$out/slurm-%A_%a.out
exec "$lockstep" run "$spec" ${common[*]} --shard $shards --shard-index-env SLURM_ARRAY_TASK_ID -o "$out/shards"
EOF
	cat "$out/shards.sbatch"
	t2=$(date +%s.%N)
	sbatch --wait "$out/shards.sbatch"
	t3=$(date +%s.%N)
	cat "$out"/slurm-*.out
	;;
local)
	t2=$(date +%s.%N)
	pids=()
	for i in $(seq 0 $((shards - 1))); do
		JOB_COMPLETION_INDEX=$i "$lockstep" run "$spec" "${common[@]}" --shard "$shards" -o "$out/shards" >"$out/shard-$i.out" &
		pids+=($!)
		if [ $(((i + 1) % ${SHARD_JOBS:-$(nproc)})) = 0 ]; then
			for p in "${pids[@]}"; do wait "$p"; done
			pids=()
		fi
	done
	for p in "${pids[@]}"; do wait "$p"; done
	t3=$(date +%s.%N)
	cat "$out"/shard-*.out
	;;
*)
	echo "ENGINE=$ENGINE: want slurm or local" >&2
	exit 2
	;;
esac

echo "== merge"
rc_merged=0
"$lockstep" merge "$out/shards" --json "$out/merged.json" --junit "$out/merged.xml" >"$out/merged.txt" || rc_merged=$?
cat "$out/merged.txt"

echo "== compare"
differ=0
# Every trial: its outcome line and its schedule (records without the
# syscall results, which may depend on timing) and whether its trace is
# the same byte for byte.
same_bytes=0
for d in "$out"/one/trials/*/; do
	t=$(basename "$d")
	s=$(find "$out"/shards/shard-*-of-"$shards"/trials -maxdepth 1 -name "$t" | head -n 1)
	a=$d/trace.jsonl b=$s/trace.jsonl
	if [ -z "$s" ] || [ ! -f "$b" ]; then
		echo "trial $t: missing from the shards"
		differ=$((differ + 1))
		continue
	fi
	if cmp -s "$a" "$b"; then
		same_bytes=$((same_bytes + 1))
		continue
	fi
	if ! cmp -s <(grep -v '"record"' "$a") <(grep -v '"record"' "$b") ||
		! cmp -s <(grep '"record"' "$a" | sed 's/"result":[^,}]*//') <(grep '"record"' "$b" | sed 's/"result":[^,}]*//'); then
		echo "trial $t: outcome or schedule differs"
		differ=$((differ + 1))
	fi
done
n_one=$(find "$out/one/trials" -mindepth 1 -maxdepth 1 | wc -l)
n_sh=$(find "$out"/shards/shard-*/trials -mindepth 1 -maxdepth 1 | wc -l)
echo "trials: $n_one in one process, $n_sh in the shards; $same_bytes traces identical byte for byte, $differ differ in outcome or schedule"
[ "$n_one" = "$trials" ] && [ "$n_sh" = "$trials" ] || differ=$((differ + 1))

failing() { jq -r '.failing[]? | "trial \(.trial) \(.kind): \(.detail) (step \(.steps))"' "$1"; }
echo "failing trials (one process | merged):"
paste -d'|' <(failing "$out/one.json") <(failing "$out/merged.json") | sed 's/|/  |  /'
# The reports, but for real time and where the trials' directories are.
norm() { sed -E -e "s#$out/(one|shards/shard-[0-9]+-of-[0-9]+)#OUT#g" -e '/ trials in |duration_s|time="/d' "$1"; }
for f in txt json xml; do
	if ! diff <(norm "$out/one.$f") <(norm "$out/merged.$f") >"$out/diff.$f"; then
		echo "the $f reports differ:"
		cat "$out/diff.$f"
		differ=$((differ + 1))
	fi
done
if [ "$rc_one" != "$rc_merged" ]; then
	echo "exit status: one process $rc_one, merge $rc_merged"
	differ=$((differ + 1))
fi
printf 'real time: one process %.1fs; %d shards on %s %.1fs (%d CPUs)\n' \
	"$(echo "$t1 - $t0" | bc)" "$shards" "$ENGINE" "$(echo "$t3 - $t2" | bc)" "$(nproc)"
if [ "$differ" = 0 ]; then
	echo "same trials, same failing trials, same table and reports ($out)"
else
	echo "$differ difference(s) ($out)"
	exit 1
fi
