#!/bin/bash
# bench-real.sh: lockstep against native on real targets and on the micro
# benchmarks of the performance issue, written to
# bench/results/real-targets-DATE.md with the machine it ran on.
#
#   RUNS=2 scripts/bench-real.sh      (RUNS: native/lockstep pairs per target)
#
# Every ratio is lockstep's time over the native time measured in the same
# run, right before it. Run it on a quiet machine: two busy vCPUs slow each
# other by 40-75 %.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-2}
day=$(date -u +%F)
out=bench/results/real-targets-$day.md
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT

bench() { # package regexp
	go test -count="$runs" -run '^$' -bench "$2" -benchtime 1x -timeout 60m "$1" 2>&1 | tee -a "$raw"
}
bench ./examples/etcd '^BenchmarkEtcdTrial$'
bench ./examples/redis '^BenchmarkRedisTrial$'
bench ./examples/zookeeper '^BenchmarkZooKeeperTrial$'
bench ./tracer '^(BenchmarkRoundTrips|BenchmarkClockRead|BenchmarkBulkTransfer)$'

python3 - "$raw" "$out" "$day" "$runs" <<'PY'
import re, sys, platform, subprocess, statistics
raw, out, day, runs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
rows = {}
for line in open(raw):
    m = re.match(r'^(Benchmark[\w/=.]+)-\d+\s+\d+\s+\d+ ns/op\s+(.*)$', line.strip())
    if not m:
        continue
    metrics = dict((k, float(v)) for v, k in re.findall(r'([0-9.e+-]+) (\S+)', m.group(2)))
    rows.setdefault(m.group(1), []).append(metrics)

def cpu():
    for l in open('/proc/cpuinfo'):
        if l.startswith('model name'):
            return l.split(':', 1)[1].strip()
    return '?'
mem = int(open('/proc/meminfo').readline().split()[1]) // (1024 * 1024)
go = subprocess.run(['go', 'version'], capture_output=True, text=True).stdout.strip()
ncpu = subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()

def col(name, key, fmt='%.2f'):
    v = [r[key] for r in rows.get(name, []) if key in r]
    return ' / '.join(fmt % x for x in v) if v else 'n/a'

with open(out, 'w') as f:
    f.write(f'# lockstep against native: real targets and micro benchmarks, {day}\n\n')
    f.write(f'Machine: {ncpu} vCPUs ({cpu()}), {mem} GiB, kernel {platform.release()}, {go}.\n')
    f.write(f'Produced by `scripts/bench-real.sh` (RUNS={runs}); each figure is one run, runs separated by " / ".\n')
    f.write('Ratios are lockstep over native, both measured in the same run. A trial runs its nodes on one CPU,\n')
    f.write('and they use it while lockstep waits for quiescence; the last column is what is left of that wait\n')
    f.write('once the nodes\' CPU time (their cgroups\' usage) is taken out: lockstep\'s own share of the trial.\n\n')
    f.write('## Real clusters (one trial of each example)\n\n')
    f.write('| target | native s | lockstep s | ratio | stops | clock-read stops | quiescence share | nodes\' CPU s | quiescence without the nodes\' CPU |\n|---|---|---|---|---|---|---|---|---|\n')
    for name, label in (('BenchmarkEtcdTrial', 'etcd 3.4, 3 members + client'),
                        ('BenchmarkRedisTrial', 'Redis 7, primary + 2 replicas + 3 Sentinels + clients'),
                        ('BenchmarkZooKeeperTrial', 'ZooKeeper 3.8, 3 members + client (4 JVMs)')):
        f.write(f"| {label} | {col(name, 'native-s')} | {col(name, 'lockstep-s')} | {col(name, 'ratio')} | "
                f"{col(name, 'stops', '%.0f')} | {col(name, 'clock-read-stops', '%.0f')} | {col(name, 'quiescence-share')} | "
                f"{col(name, 'nodes-cpu-s')} | {col(name, 'own-quiescence-share')} |\n")
    f.write('\n## 1-byte round trips (C client and server, two namespaces)\n\n')
    n = 'BenchmarkRoundTrips'
    f.write('| | µs per round trip | ratio to native |\n|---|---|---|\n')
    f.write(f"| native (median of 5 repetitions) | {col(n, 'native-us/rt', '%.1f')} | 1 |\n")
    f.write(f"| lockstep, threads serialized (as the engine runs) | {col(n, 'serialized-us/rt', '%.1f')} | {col(n, 'serialized-ratio')} |\n")
    f.write(f"| lockstep, default scheduling policy | {col(n, 'traced-us/rt', '%.1f')} | {col(n, 'ratio')} |\n")
    f.write(f"| the stops alone (resume each stop, nothing else) | {col(n, 'stops-only-us/rt', '%.1f')} | {col(n, 'stops-only-ratio')} |\n")
    n = 'BenchmarkClockRead'
    f.write('\n## Clock reads\n\n')
    f.write(f"native vDSO {col(n, 'native-ns/read', '%.1f')} ns; lockstep's clock page {col(n, 'page-ns/read', '%.1f')} ns; "
            f"at a syscall stop {col(n, 'stop-ns/read', '%.0f')} ns.\n")
    f.write('\n## 100 MiB over one TCP connection (64 KiB writes, every byte checked)\n\n')
    f.write('| deliveries released | native MB/s | lockstep MB/s |\n|---|---|---|\n')
    for order in ('fifo', 'random'):
        n = 'BenchmarkBulkTransfer/order=' + order
        f.write(f"| {order} | {col(n, 'native-MB/s', '%.0f')} | {col(n, 'traced-MB/s', '%.0f')} |\n")
    f.write('\n## Raw output\n\n```\n')
    f.write(''.join(l for l in open(raw) if l.startswith('Benchmark')))
    f.write('```\n')
print('wrote', out)
PY
