package nats_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/engine"
	"github.com/lockstep-dev/lockstep/examples/internal/extest"
	"github.com/lockstep-dev/lockstep/explain"
	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/internal/testutil"
	"github.com/lockstep-dev/lockstep/sched"
)

func TestMain(m *testing.M) { extest.Main(m) }

const natsBin = "/usr/sbin/nats-server"

// requireNATS skips unless Debian's nats-server is installed and this
// process may run lockstep's trials, and builds the client where the specs
// expect it ({{dir}}/bin/natsclient); its first build fetches nats.go from
// the Go module proxy.
func requireNATS(t *testing.T) {
	t.Helper()
	extest.RequireInstalled(t, "nats", "apt-get install nats-server", natsBin)
	testutil.RequireTrials(t)
	here := extest.Dir()
	extest.GoBuildFetched(t, filepath.Join(here, "client"), filepath.Join(here, "bin", "natsclient"), "github.com/nats-io/nats.go")
}

// Without faults every trial passes, and its trace replays: the servers'
// statistics messages carry their CPU share, which lockstep answers as 0.
func TestNATSWithoutFaults(t *testing.T) {
	requireNATS(t)
	sp := extest.LoadSpec(t, "spec.yaml")
	const trials = 2
	sum := extest.Run(t, sp, engine.RunOptions{Trials: trials, TraceAll: true})
	for _, r := range sum.Results {
		if r.Outcome.Kind != engine.Pass {
			out, _ := os.ReadFile(filepath.Join(r.Dir, "client.out"))
			t.Errorf("trial %d: %v\nclient output:\n%s", r.Index, r.Outcome, out)
			continue
		}
		if rr := extest.Replay(t, r.TracePath); !rr.Same {
			t.Errorf("trial %d: replay: %s", r.Index, rr.Diff)
		}
	}
}

// The generic spec's POS campaign of seed 2 finds two of NATS 2.9.10's
// failures (README.md, "Measured"), and each failing trace replays to the
// same failure:
//   - trial 6: acknowledged messages lost, behind a power cut (NATS makes
//     no fsync in a trial; trial 1 until every node's environment held
//     lockstep's ERL_AFLAGS too, which moved it);
//   - trial 20: a server panics in decodePeerState at its restart, after
//     its metadata group's peers.idx was cut short while it was down, which
//     `never: default` makes a property violation.
func TestNATSFailuresFound(t *testing.T) {
	requireNATS(t)
	sp := extest.LoadSpec(t, "spec-explore.yaml")
	sp.Scheduler.Strategy = "pos"
	sp.Scheduler.Seed = 2
	const trials = 21
	sum := extest.Run(t, sp, engine.RunOptions{Trials: trials})
	byIndex := map[int]*engine.TrialResult{}
	for _, r := range sum.Results {
		byIndex[r.Index] = r
	}
	tests := []struct {
		trial int
		kind  engine.OutcomeKind
		fault sched.Kind // a fault the trace must hold
		file  string     // where the failure is written
		text  string
	}{
		{6, engine.ClientFailed, faults.Power, "client.out", "lost acknowledged message"},
		{20, engine.PropertyViolated, faults.Corrupt, "", "decodePeerState"},
	}
	for _, tc := range tests {
		r := byIndex[tc.trial]
		if r == nil {
			t.Fatalf("trial %d: no result (outcomes %v)", tc.trial, sum.ByKind)
		}
		if r.Outcome.Kind != tc.kind || r.TracePath == "" {
			t.Errorf("trial %d: %v, want %v with a trace", tc.trial, r.Outcome, tc.kind)
			continue
		}
		out := nodeOutput(t, r.Dir, tc.file)
		if !strings.Contains(out, tc.text) {
			t.Errorf("trial %d (%v): no %q in %s", tc.trial, r.Outcome, tc.text, r.Dir)
		}
		tr, err := engine.LoadTrace(r.TracePath)
		if err != nil {
			t.Fatal(err)
		}
		held := false
		for _, rec := range tr.Records {
			held = held || rec.Op.Kind == tc.fault
		}
		if !held {
			t.Errorf("trial %d (%v): no %s in its trace", tc.trial, r.Outcome, tc.fault)
		}
		if rr := extest.Replay(t, r.TracePath); !rr.Same {
			t.Errorf("trial %d (%v): replay: %s", tc.trial, r.Outcome, rr.Diff)
		}
	}
	t.Logf("%d trials: %v, %v", sum.Trials, sum.ByKind, sum.Duration)
	explainPanic(t, byIndex[20].TracePath)
}

// explainPanic: explain keeps of the panic's trace n3's crash and the cut
// of its peers.idx, and no order of the cluster's first messages (README.md,
// "explain on a NATS failure"): without such an order the route n3 opened
// to n2 is closed as a duplicate and n3's messages take n2's, which moved
// the crash's anchor away and made the order look needed. The probability
// curve is left out (it is most of the runs).
func explainPanic(t *testing.T, trace string) {
	t.Helper()
	ex, err := explain.Explain(context.Background(), trace, explain.Options{Out: t.TempDir(), Budget: 20 * time.Minute, Continuations: -1})
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, r := range ex.Races {
		kept = append(kept, string(r.Decision.Op.Kind)+" "+r.Decision.Op.Node+" "+r.Decision.Op.File)
	}
	want := []string{"crash n3 ", "corrupt n3 n3/js/jetstream/$SYS/_js_/_meta_/peers.idx"}
	if !slices.Equal(kept, want) || !ex.OneMinimal {
		t.Errorf("explain kept %q (1-minimal %v), want %q", kept, ex.OneMinimal, want)
	}
	if !ex.MinimizedReplays {
		t.Errorf("the minimized trace does not replay: %s", ex.MinimizedDiverged)
	}
	t.Logf("explain: %d runs in %v", ex.Runs, ex.Elapsed)
}

// nodeOutput is file's text in a trial directory, or every server's
// standard error when file is empty.
func nodeOutput(t *testing.T, dir, file string) string {
	t.Helper()
	names := []string{file}
	if file == "" {
		names = []string{"n1.err", "n2.err", "n3.err"}
	}
	var b strings.Builder
	for _, n := range names {
		out, _ := os.ReadFile(filepath.Join(dir, n))
		b.Write(out)
	}
	return b.String()
}
