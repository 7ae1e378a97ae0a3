package engine

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/sched"
)

// TestGrayFindsStaleRead: lease.c's stale read needs a replica's APPENDs
// held while its heartbeats flow. POS with holds of a connection direction
// (lease.yaml) never makes that in its first 150 trials of seed 4: a hold
// of the leader's datagrams to a replica holds its heartbeats too, and the
// lease runs out before any read. With grays instead (lease-gray.yaml: the
// same spec, `kinds: [gray]`), the same strategy and seed find it: a gray
// lets through the kind the node has had most, the heartbeats, without the
// spec naming it. Each failure is a stale read whose trace holds a gray
// letting "HB" through, and replays.
func TestGrayFindsStaleRead(t *testing.T) {
	requireTrials(t)
	const budget = 150
	seed := int64(4)
	dir := t.TempDir()
	hold := exploreSpec(t, "lease.yaml", "lease")
	pos, err := Run(t.Context(), hold, RunOptions{Trials: budget, Seed: &seed, Strategy: "pos", OutDir: filepath.Join(dir, "hold")})
	if err != nil {
		t.Fatal(err)
	}
	if pos.Failures != 0 || pos.Errors != 0 {
		t.Fatalf("pos with holds: %d failures, %d errors in %d trials; the test needs a seed it misses", pos.Failures, pos.Errors, pos.Trials)
	}
	gray := exploreSpec(t, "lease-gray.yaml", "lease")
	sum, err := Run(t.Context(), gray, RunOptions{Trials: budget, Seed: &seed, Strategy: "pos", OutDir: filepath.Join(dir, "gray"), Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Errors != 0 {
		t.Fatalf("lockstep errors: %v", sum.FirstError.Outcome)
	}
	if sum.Failures == 0 {
		t.Fatalf("pos with grays: no failure in %d trials", sum.Trials)
	}
	for _, r := range sum.Results {
		if r.Outcome.Kind == Pass {
			continue
		}
		out, err := os.ReadFile(filepath.Join(r.Dir, "reader.out"))
		if err != nil || !strings.Contains(string(out), "stale read") {
			t.Errorf("trial %d failed otherwise than by a stale read (%v): %v", r.Index, err, r.Outcome)
		}
		if r.Verify == nil || !r.Verify.Same {
			t.Errorf("trial %d's trace did not replay: %+v", r.Index, r.Verify)
		}
		recs := traceRecords(t, r)
		i := slices.IndexFunc(recs, func(rec sched.Record) bool { return rec.Op.Kind == faults.Gray })
		if i < 0 {
			t.Errorf("trial %d: no gray in its trace", r.Index)
			continue
		}
		if g := recs[i].Op; !strings.Contains(g.Peer, `but "HB"`) {
			t.Errorf("trial %d's gray: %s %q, want the heartbeats let through", r.Index, g.Conn, g.Peer)
		}
	}
	t.Logf("pos with grays: %d of %d trials (with holds: 0)", sum.Failures, sum.Trials)
}
