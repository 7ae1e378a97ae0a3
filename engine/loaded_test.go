package engine

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"testing"

	"github.com/lockstep-dev/lockstep/spec"
)

// TestLoadedSameOutcomes runs a cluster of four JVMs (mnesia-2: three
// thread-per-connection servers with socket read timeouts and a client)
// for LOCKSTEP_LOADED_TRIALS trials (default 200) while busy loops and a
// second campaign keep every CPU busy, then again on the machine as it is,
// with the same seed: no deadlock and no lockstep error under load, and the
// same trials fail the same way, since a seed fixes the schedule whatever
// the load. About 15 minutes, so it runs only with LOCKSTEP_LONG=1.
func TestLoadedSameOutcomes(t *testing.T) {
	if os.Getenv("LOCKSTEP_LONG") == "" {
		t.Skip("skipping: LOCKSTEP_LONG=1 runs this long test")
	}
	skipUnlessTrials(t)
	trials := 200
	if n, err := strconv.Atoi(os.Getenv("LOCKSTEP_LOADED_TRIALS")); err == nil && n > 0 {
		trials = n
	}
	sp, err := spec.Load(repoPath("testdata", "bugs", "mnesia-2", "spec.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(repoPath("testdata", "bin", "bugs", "mnesia-2", "mnesia2")); err != nil {
		t.Skipf("skipping: %v (make testdata builds it)", err)
	}
	other, err := spec.Load(repoPath("testdata", "bugs", "locks-1", "spec.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	run := func(sp *spec.Spec, n int) map[int]OutcomeKind {
		t.Helper()
		sum, err := Run(context.Background(), sp, RunOptions{Trials: n, Strategy: "pos", OutDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[int]OutcomeKind{}
		for _, r := range sum.Results {
			kinds[r.Index] = r.Outcome.Kind
		}
		return kinds
	}

	ctx, cancel := context.WithCancel(context.Background())
	var burners []*exec.Cmd
	for i := 0; i < runtime.NumCPU(); i++ {
		c := exec.CommandContext(ctx, "/bin/sh", "-c", "while :; do :; done")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		burners = append(burners, c)
	}
	otherDone := make(chan struct{})
	go func() {
		defer close(otherDone)
		for ctx.Err() == nil {
			Run(ctx, other, RunOptions{Trials: 50, Strategy: "pos", OutDir: t.TempDir()})
		}
	}()
	loaded := run(sp, trials)
	cancel()
	for _, c := range burners {
		c.Wait()
	}
	<-otherDone
	quiet := run(sp, trials)

	failing := 0
	for i := 0; i < trials; i++ {
		l, q := loaded[i], quiet[i]
		if l == Deadlock || l == Error {
			t.Errorf("trial %d under load: %s", i, l)
		}
		if l != q {
			t.Errorf("trial %d: %s under load, %s without", i, l, q)
		}
		if q != Pass {
			failing++
		}
	}
	t.Logf("%d trials: %d failing, the same trials under load as without", trials, failing)
}
