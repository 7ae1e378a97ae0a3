package mnesia_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/engine"
	"github.com/lockstep-dev/lockstep/examples/internal/extest"
	"github.com/lockstep-dev/lockstep/internal/testutil"
)

func TestMain(m *testing.M) { extest.Main(m) }

// requireMnesia skips unless Debian's Erlang and Mnesia are installed and
// this process may run lockstep's trials.
func requireMnesia(tb testing.TB) {
	tb.Helper()
	extest.RequireInstalled(tb, "Mnesia", "apt-get install erlang-base erlang-mnesia", "/usr/bin/erl")
	if m, _ := filepath.Glob("/usr/lib/erlang/lib/mnesia-*"); len(m) == 0 {
		tb.Skip("Mnesia is not installed (apt-get install erlang-mnesia)")
	}
	testutil.RequireTrials(tb)
}

// Without faults the client's 100 writes are all acknowledged and both
// copies agree: any other outcome is lockstep's (a stalled VM, a lost
// delivery, a timer that never fires).
func TestMnesiaNoFaults(t *testing.T) {
	requireMnesia(t)
	sp := extest.LoadSpec(t, "spec.yaml")
	sp.Faults.Kinds = nil
	sum := extest.Run(t, sp, engine.RunOptions{Trials: 1})
	for _, r := range sum.Results {
		out, _ := os.ReadFile(filepath.Join(r.Dir, "c.out"))
		if r.Outcome.Kind != engine.Pass {
			t.Fatalf("trial %d: %v\nclient output:\n%s", r.Index, r.Outcome, out)
		}
		if !strings.Contains(string(out), "acknowledged 100 of 100") || !strings.Contains(string(out), "ok 100") {
			t.Errorf("trial %d passed but its client did not acknowledge and check 100 writes:\n%s", r.Index, out)
		}
	}
}

// Trial 10 of seed 1 (README.md, "Measured"): b is cut off at 6.2 s for
// 75 s, longer than Erlang's failure detector; a and b each go on alone,
// and when they meet again a prints Mnesia's report of an inconsistent
// database, which the spec's never property makes a failure. Its trace
// must replay.
func TestMnesiaPartition(t *testing.T) {
	requireMnesia(t)
	sp := extest.LoadSpec(t, "spec.yaml")
	seed := int64(1)
	sum := extest.Run(t, sp, engine.RunOptions{Trials: 30, Seed: &seed, Shard: engine.Shard{Index: 10, Count: 30}})
	r := sum.First
	if r == nil {
		t.Fatalf("trial 10 of seed 1 did not fail (outcomes %v)", sum.ByKind)
	}
	if r.Outcome.Kind != engine.PropertyViolated || !strings.Contains(r.Outcome.Detail, "inconsistent_database, running_partitioned_network") {
		t.Fatalf("trial 10: %v; want Mnesia's report of an inconsistent database", r.Outcome)
	}
	if diff := extest.ReplayTwice(t, r.TracePath); diff != "" {
		t.Errorf("trial 10's trace did not replay: %s", diff)
	}
}
