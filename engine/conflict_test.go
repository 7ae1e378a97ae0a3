package engine

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/conflict"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/spec"
)

// TestConflictsOnRealPrograms runs small C systems and checks which of
// their ops conflict: two clients' messages to one server race for its
// inbox; two independent pairs and a relay chain have no race at all.
// Several seeds, so the verdict does not hang on one schedule.
func TestConflictsOnRealPrograms(t *testing.T) {
	requireTrials(t)
	tests := []struct {
		spec string
		// want lists the conflicting ops as "node:kind", sorted, deduplicated.
		want []string
	}{
		// The two deliveries race for the server's inbox; so do the two
		// connects for its listener, with its accept, and the server's poll
		// observes both, and both clients' FINs. Its recvs do not race:
		// each reads one connection, after that connection's bytes (or
		// its end) arrived.
		{"fanin.yaml", []string{"a:close", "a:connect", "a:deliver", "b:close", "b:connect", "b:deliver", "server:accept", "server:poll"}},
		{"pairs.yaml", nil},
		// a's delivery happens before b's through the chain: the sends never
		// conflict. c's first poll, made before anything reached it, does
		// observe its inbox concurrently with b's delivery and b's FIN (a
		// poll's result depends on them), which is all that is left.
		{"relay.yaml", []string{"b:close", "b:deliver", "c:poll"}},
	}
	for _, tc := range tests {
		t.Run(tc.spec, func(t *testing.T) {
			sp, err := spec.Load(repoPath("testdata", "specs", "conflict", tc.spec))
			if err != nil {
				t.Fatal(err)
			}
			for seed := int64(1); seed <= 3; seed++ {
				sum, err := Run(context.Background(), sp, RunOptions{Trials: 1, Strategy: "random", Seed: &seed, OutDir: t.TempDir()})
				if err != nil {
					t.Fatal(err)
				}
				r := sum.Results[0]
				if r.Outcome.Kind != Pass {
					t.Fatalf("seed %d: %v", seed, r.Outcome)
				}
				// With eBPF, every recv with data found its kernel record and
				// the kernel's byte ranges name the same deliveries as
				// lockstep's own accounting.
				if ct := r.Conntrack; ct.Recvs > 0 && (ct.Matched != ct.Recvs || ct.Disagreed != 0) {
					t.Errorf("seed %d: conntrack %+v", seed, ct)
				}
				t.Logf("seed %d: conntrack %+v", seed, r.Conntrack)
				a := conflict.Analyze(r.Records, conflict.Scheme{})
				got := map[string]bool{}
				for i, c := range a.Conflicting {
					if c {
						op := r.Records[i].Op
						got[fmt.Sprintf("%s:%s", op.Node, op.Kind)] = true
					}
				}
				var list []string
				for k := range got {
					list = append(list, k)
				}
				sort.Strings(list)
				if fmt.Sprint(list) != fmt.Sprint(tc.want) {
					t.Errorf("seed %d: conflicting ops %v, want %v\n%s", seed, list, tc.want, records(r.Records))
				}
			}
		})
	}
}

func records(rs []sched.Record) string {
	s := ""
	for _, r := range rs {
		s += fmt.Sprintf("  %d %s object=%s causes=%v\n", r.Step, r.Op.String(), r.Op.Object, r.Causes)
	}
	return s
}

// A "+" strategy releases at once only ops whose signature the history, as
// the trial saw it (every trial of earlier batches), had seen and never
// seen in a conflict; and the traces it records replay.
func TestPlusReleasesOnlyNeverConflicted(t *testing.T) {
	requireTrials(t)
	for _, scheme := range []string{"proc+pc", "proc+pc+msg", "proc+pc+msg+peer+nth"} {
		t.Run(scheme, func(t *testing.T) {
			sp := loadDemo(t, "demo.yaml")
			sp.Scheduler.Conflict.Scheme = scheme
			sc, err := conflict.ParseScheme(scheme)
			if err != nil {
				t.Fatal(err)
			}
			seed := int64(7)
			sum, err := Run(context.Background(), sp, RunOptions{Trials: 3 * historyBatch, Strategy: "pos+", Seed: &seed, OutDir: t.TempDir(), TraceAll: true})
			if err != nil {
				t.Fatal(err)
			}
			hist := conflict.NewHistory(sc)
			immediate := 0
			for i, r := range sum.Results {
				if r.Index != i {
					t.Fatalf("result %d is trial %d", i, r.Index)
				}
				if i > 0 && i%historyBatch == 0 {
					for _, p := range sum.Results[i-historyBatch : i] {
						hist.Update(conflict.Analyze(p.Records, sc))
					}
				}
				for _, rec := range r.Records {
					if !rec.Immediate {
						continue
					}
					immediate++
					if hist.MayConflict(rec.Op.Signature()) {
						t.Errorf("trial %d step %d: %s released at once, but its signature %q was not known never to conflict", i, rec.Step, rec.Op.String(), sc.Key(rec.Op.Signature()))
					}
				}
			}
			if immediate == 0 {
				t.Fatalf("no op released at once in %d trials", len(sum.Results))
			}
			last := sum.Results[len(sum.Results)-1]
			rr, err := Replay(context.Background(), last.TracePath, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if !rr.Same {
				t.Fatalf("trial %d's trace (%d ops released at once in the campaign) replays differently: %s", last.Index, immediate, rr.Diff)
			}
			t.Logf("%d ops released at once in %d trials; trial %d replayed", immediate, len(sum.Results), last.Index)
		})
	}
}

// Explore+ branches and draws with POS+: past a branch's prefix, and in
// its fresh draws, it releases at once only ops the history (of earlier
// generations) knew never to conflict, numbered from the trial's start;
// the campaign is the same with two jobs; and a branch's trace replays.
func TestExplorePlusReleasesOnlyNeverConflicted(t *testing.T) {
	requireTrials(t)
	sp := loadDemo(t, "demo.yaml")
	sc, err := conflict.ParseScheme(sp.Scheduler.Conflict.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	seed := int64(3)
	var plans [2][]string
	var sum *Summary
	for jobs := 1; jobs <= 2; jobs++ {
		sum, err = Run(context.Background(), sp, RunOptions{Trials: 4 * historyBatch, Strategy: "explore+", Seed: &seed, Jobs: jobs, OutDir: t.TempDir(), TraceAll: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range sum.Results {
			plans[jobs-1] = append(plans[jobs-1], r.Plan)
		}
	}
	if !slices.Equal(plans[0], plans[1]) {
		t.Errorf("plans differ with two jobs:\n%q\n%q", plans[0], plans[1])
	}
	hist := conflict.NewHistory(sc)
	immediate, branched := 0, 0
	var branch *TrialResult
	for i, r := range sum.Results {
		if i > 0 && i%historyBatch == 0 {
			for _, p := range sum.Results[i-historyBatch : i] {
				hist.Update(conflict.Analyze(p.Records, sc))
			}
		}
		if strings.HasPrefix(r.Plan, "trial ") {
			branched++
			branch = r
		}
		for _, rec := range r.Records {
			if !rec.Immediate {
				continue
			}
			immediate++
			if hist.MayConflict(rec.Op.Signature()) {
				t.Errorf("trial %d (%s) step %d: %s released at once, but its signature %q was not known never to conflict", i, r.Plan, rec.Step, rec.Op.String(), sc.Key(rec.Op.Signature()))
			}
		}
	}
	if immediate == 0 || branch == nil {
		t.Fatalf("%d ops released at once and %d branches in %d trials", immediate, branched, len(sum.Results))
	}
	rr, err := Replay(context.Background(), branch.TracePath, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !rr.Same {
		t.Fatalf("trial %d's trace (%s) replays differently: %s", branch.Index, branch.Plan, rr.Diff)
	}
	t.Logf("%d ops released at once in %d trials, %d of them branches; trial %d (%s) replayed", immediate, len(sum.Results), branched, branch.Index, branch.Plan)
}
