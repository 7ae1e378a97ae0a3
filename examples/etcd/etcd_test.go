package etcd_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lockstep-dev/lockstep/engine"
	"github.com/lockstep-dev/lockstep/examples/internal/extest"
	"github.com/lockstep-dev/lockstep/examples/internal/trialbench"
	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/internal/testutil"
)

func TestMain(m *testing.M) { extest.Main(m) }

const etcdBin = "/usr/bin/etcd"

// buildClient builds the example's client where spec.yaml expects it
// ({{dir}}/bin/etcdclient); Go's build cache makes this quick when nothing changed.
func buildClient(t testing.TB) {
	t.Helper()
	here := extest.Dir()
	if out, err := extest.GoBuild(filepath.Join(here, "client"), filepath.Join(here, "bin", "etcdclient")); err != nil {
		t.Fatalf("building the client: %v\n%s", err, out)
	}
}

// requireEtcd skips unless Debian's etcd is installed and this process may
// run lockstep's trials, and builds the client.
func requireEtcd(t *testing.T) {
	t.Helper()
	extest.RequireInstalled(t, "etcd", "apt-get install etcd-server etcd-client, or examples/etcd/run.sh", etcdBin)
	testutil.RequireTrials(t)
	buildClient(t)
}

// A few trials of the example: three etcd members that the scheduler
// crashes, restarts and partitions while the client writes and reads keys.
// Every trial must pass: the client exits non-zero only when an
// acknowledged write is missing or a read is stale, which etcd 3.4 must
// not do, and a lockstep error is lockstep's bug.
func TestEtcdUnderFaults(t *testing.T) {
	requireEtcd(t)
	sp := extest.LoadSpec(t, "spec.yaml")
	const trials = 3
	sum := extest.Run(t, sp, engine.RunOptions{Trials: trials, TraceAll: true})
	injected := 0
	for _, r := range sum.Results {
		if r.Outcome.Kind != engine.Pass {
			out, _ := os.ReadFile(filepath.Join(r.Dir, "client.out"))
			t.Errorf("trial %d (seed %d): %v\nclient output:\n%s", r.Index, r.Seed, r.Outcome, out)
			continue
		}
		tr, err := engine.LoadTrace(r.TracePath)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range tr.Records {
			if k := rec.Op.Kind; k == faults.Crash || k == faults.Partition {
				injected++
			}
		}
	}
	// The window opens at 1 s, while the client writes, with a budget of
	// two: a trial without any injection means faults were not offered.
	if injected == 0 {
		t.Errorf("no crash or partition in %d trials: %v", trials, sum.ByKind)
	}
	t.Logf("%d trials, %d injections, outcomes %v, %v", sum.Trials, injected, sum.ByKind, sum.Duration)
}

// Traces of the example replay: the same ops in the same order and the same
// outcome, with crashes, restarts and partitions among them. Go's runtime
// (etcd 3.4 is built with Go 1.19) made every replay part ways until
// lockstep answered its counter reads, held its disk syscalls until nothing
// else ran, fixed the order in which a crashed member's connections end
// and gave nodes the same paths in a replay as in the run.
func TestEtcdReplays(t *testing.T) {
	requireEtcd(t)
	sp := extest.LoadSpec(t, "spec.yaml")
	sp.Scheduler.Seed = 11
	const trials = 3
	sum := extest.Run(t, sp, engine.RunOptions{Trials: trials, TraceAll: true})
	injected := 0
	for _, r := range sum.Results {
		tr, err := engine.LoadTrace(r.TracePath)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range tr.Records {
			if rec.Op.LPID == "fault" {
				injected++
			}
		}
		rr := extest.Replay(t, r.TracePath)
		if !rr.Same {
			t.Errorf("trial %d (%d steps, %v): replay: %s", r.Index, len(tr.Records), r.Outcome.Kind, rr.Diff)
		}
	}
	if injected == 0 {
		t.Errorf("no fault in %d trials", trials)
	}
}

// BenchmarkEtcdTrial: one trial of the example without faults natively
// (real time) and one under lockstep, alternately (see trialbench).
func BenchmarkEtcdTrial(b *testing.B) {
	if _, err := os.Stat(etcdBin); err != nil {
		b.Skipf("%s not installed: skipping", etcdBin)
	}
	testutil.RequireNetns(b)
	testutil.RequirePtrace(b)
	buildClient(b)
	sp := extest.LoadSpec(b, "spec.yaml")
	sp.Faults.Budget = 0
	trialbench.Run(b, sp)
}

// BenchmarkEtcdExploreCost: an exploring campaign's trials per minute
// against POS's on the example's spec, faults included (issue 43: within
// 10 %); 24 trials each, so that three generations branch.
func BenchmarkEtcdExploreCost(b *testing.B) {
	if _, err := os.Stat(etcdBin); err != nil {
		b.Skipf("%s not installed: skipping", etcdBin)
	}
	testutil.RequireNetns(b)
	testutil.RequirePtrace(b)
	buildClient(b)
	trialbench.Strategies(b, extest.LoadSpec(b, "spec.yaml"), 24, "pos", "explore")
}
