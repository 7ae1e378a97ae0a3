package raft_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/engine"
	"github.com/lockstep-dev/lockstep/examples/internal/extest"
	"github.com/lockstep-dev/lockstep/examples/internal/trialbench"
	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/internal/testutil"
)

func TestMain(m *testing.M) { extest.Main(m) }

// buildRaftex builds the members' and client's program where spec.yaml
// expects it ({{dir}}/bin/raftex). It is a module of its own (raftex/go.mod),
// so that lockstep does not depend on hashicorp/raft; its first build
// fetches raft from the Go module proxy.
func buildRaftex(t testing.TB) {
	t.Helper()
	here := extest.Dir()
	extest.GoBuildFetched(t, filepath.Join(here, "raftex"), filepath.Join(here, "bin", "raftex"), "github.com/hashicorp/raft")
}

// A few trials of the example, each replayed: three raft members that the
// scheduler partitions and delays while the client applies
// commands and asks for leadership transfers. raft v1.7.3 has known bugs
// (see README.md), so a trial may fail, but only as the system's failure:
// the client's liveness or safety check, never a lockstep error. Every
// trace, passing or failing, must replay to the same ops and outcome.
func TestRaftTrialsReplay(t *testing.T) {
	testutil.RequireTrials(t)
	buildRaftex(t)
	// Seed 1's first four trials hold partitions and, from the third on,
	// pauses: both kinds of fault replay on a Go system.
	sp := extest.LoadSpec(t, "spec.yaml")
	const trials = 4
	sum := extest.Run(t, sp, engine.RunOptions{Trials: trials, TraceAll: true})
	cuts, pauses := 0, 0
	for _, r := range sum.Results {
		out, _ := os.ReadFile(filepath.Join(r.Dir, "client.out"))
		cerr, _ := os.ReadFile(filepath.Join(r.Dir, "client.err"))
		switch r.Outcome.Kind {
		case engine.Pass:
		case engine.ClientFailed:
			if !strings.Contains(string(cerr), "liveness:") && !strings.Contains(string(cerr), "safety:") {
				t.Errorf("trial %d (seed %d): the client failed without a check's message: %v\n%s%s", r.Index, r.Seed, r.Outcome, out, cerr)
			}
			t.Logf("trial %d (seed %d) found a bug of raft v1.7.3: %s", r.Index, r.Seed, cerr)
		default:
			t.Errorf("trial %d (seed %d): %v\nclient output:\n%s%s", r.Index, r.Seed, r.Outcome, out, cerr)
			continue
		}
		tr, err := engine.LoadTrace(r.TracePath)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range tr.Records {
			switch rec.Op.Kind {
			case faults.Partition:
				cuts++
			case faults.Pause:
				pauses++
			}
		}
		if diff := extest.ReplayTwice(t, r.TracePath); diff != "" {
			t.Errorf("trial %d (%d steps, %v): replay: %s", r.Index, len(tr.Records), r.Outcome.Kind, diff)
		}
	}
	// The window opens at 500 ms with a budget of two: trials without a
	// partition or without a pause mean that kind was not offered.
	if cuts == 0 || pauses == 0 {
		t.Errorf("%d partitions and %d pauses in %d trials, want some of each: %v", cuts, pauses, trials, sum.ByKind)
	}
	t.Logf("%d trials, %d partitions, %d pauses, outcomes %v, %v", sum.Trials, cuts, pauses, sum.ByKind, sum.Duration)
}

// raft v1.7.3's InstallSnapshot livelock (hashicorp/raft#697), found: a
// member that led, cut off with the client, holds entries past the new
// leader's snapshot and installs snapshot after snapshot without its log
// ever matching, re-sent at once so that virtual time stands still: the
// outcome livelock. POS (seed 1) finds it in the sixth trial.
func TestRaftSnapshotLivelockFound(t *testing.T) {
	testutil.RequireTrials(t)
	buildRaftex(t)
	sp := extest.LoadSpec(t, "spec-livelock.yaml")
	sum := extest.Run(t, sp, engine.RunOptions{Trials: 12, StopOnFirst: true})
	r := sum.First
	if r == nil {
		t.Fatalf("no failure in %d trials of spec-livelock.yaml (outcomes %v)", sum.Trials, sum.ByKind)
	}
	if r.Outcome.Kind != engine.Livelock {
		t.Fatalf("trial %d: %v; want a livelock", r.Index, r.Outcome)
	}
	// The livelock is #697's when one member installed the same snapshot
	// over and over, not some other loop.
	installs := 0
	for _, n := range []string{"n1", "n2", "n3"} {
		out, _ := os.ReadFile(filepath.Join(r.Dir, n+".err"))
		installs = max(installs, strings.Count(string(out), "Installed remote snapshot"))
	}
	if installs < 100 {
		t.Fatalf("trial %d: %v, but no member installed a snapshot more than %d times; want #697's loop", r.Index, r.Outcome, installs)
	}
	t.Logf("trial %d: %v; %d snapshot installs on one member", r.Index, r.Outcome, installs)
	// The trial ends at the livelock, before the liveness check in whose
	// last second a replay of the tick workaround's trace used to part
	// ways at a Go sysmon sleep (README.md).
	if diff := extest.ReplayTwice(t, r.TracePath); diff != "" {
		t.Errorf("trial %d's trace did not replay: %s", r.Index, diff)
	}
}

// raft v1.7.3's Election Safety break through the heartbeat fast path
// (hashicorp/raft#695), found: a candidate whose granted votes are held
// takes a newer leader's heartbeat on its transport goroutine, then counts
// the held votes and leads that leader's term too. POS (seed 1) finds it
// in trial 4 of spec-election.yaml (its logs also diverge there), which
// this test runs alone (a shard of one trial; trial 0 runs first,
// uncounted), requires the safety check's message, and replays.
func TestRaftElectionSafetyFound(t *testing.T) {
	requireClientFailure(t, "spec-election.yaml", 4, "the client's safety check to fail", "safety:")
}

// raft v1.7.3's deadlock after a leadership transfer (hashicorp/raft#696),
// found: a transfer's request left in the target's one-slot channel while
// the leader's replication is held, a second transfer blocked on the full
// slot, and the leader's step-down (a partition) leave its "transfer in
// progress" flag set for ever; when it leads again it refuses every
// command. POS (seed 1) finds it in trial 12 of spec-transfer.yaml, which
// this test runs alone, requires the liveness message, and replays.
func TestRaftTransferDeadlockFound(t *testing.T) {
	requireClientFailure(t, "spec-transfer.yaml", 12, "the liveness check to fail on a leader stuck in a transfer",
		"liveness:", "leadership transfer in progress")
}

// requireClientFailure runs trial `trial` of spec alone (a shard of one
// trial; trial 0 runs first, uncounted), requires it to end client-failed
// with every one of words in the client's stderr (want says what that
// means), and replays its trace.
func requireClientFailure(t *testing.T, spec string, trial int, want string, words ...string) {
	t.Helper()
	testutil.RequireTrials(t)
	buildRaftex(t)
	sp := extest.LoadSpec(t, spec)
	sum := extest.Run(t, sp, engine.RunOptions{Trials: trial + 1, Shard: engine.Shard{Index: trial, Count: trial + 1}})
	r := sum.First
	if r == nil {
		t.Fatalf("trial %d of %s did not fail (outcomes %v)", trial, spec, sum.ByKind)
	}
	cerr, _ := os.ReadFile(filepath.Join(r.Dir, "client.err"))
	ok := r.Outcome.Kind == engine.ClientFailed
	for _, w := range words {
		ok = ok && strings.Contains(string(cerr), w)
	}
	if !ok {
		t.Fatalf("trial %d: %v; want %s: %s", r.Index, r.Outcome, want, cerr)
	}
	t.Logf("trial %d: %s", r.Index, cerr)
	if diff := extest.ReplayTwice(t, r.TracePath); diff != "" {
		t.Errorf("trial %d's trace did not replay: %s", r.Index, diff)
	}
}

// BenchmarkRaftTrial: one trial of the example without faults natively
// (real time) and one under lockstep, alternately (see trialbench).
func BenchmarkRaftTrial(b *testing.B) {
	testutil.RequireTrials(b)
	buildRaftex(b)
	sp := extest.LoadSpec(b, "spec.yaml")
	sp.Faults.Budget = 0
	trialbench.Run(b, sp)
}
