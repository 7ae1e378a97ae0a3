package engine

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/coverage"
	"github.com/lockstep-dev/lockstep/faults"

	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/spec"
)

// posMissesExploreRuns runs budget POS trials of sp with seed, which must
// all pass (the case needs a seed POS misses), then an exploring campaign
// with the same seed and budget that stops at its first failure and
// replays it (--verify), under dir.
func posMissesExploreRuns(t *testing.T, sp *spec.Spec, seed int64, budget int, dir string) *Summary {
	t.Helper()
	posMisses(t, sp, seed, budget, dir)
	ex, err := Run(t.Context(), sp, RunOptions{Trials: budget, Seed: &seed, Strategy: Explore, OutDir: filepath.Join(dir, "explore"), StopOnFirst: true, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	return ex
}

// posMisses runs budget POS trials of sp with seed under dir, which must
// all pass: the case needs a seed POS misses.
func posMisses(t *testing.T, sp *spec.Spec, seed int64, budget int, dir string) {
	t.Helper()
	pos, err := Run(t.Context(), sp, RunOptions{Trials: budget, Seed: &seed, Strategy: "pos", OutDir: filepath.Join(dir, "pos")})
	if err != nil {
		t.Fatal(err)
	}
	if pos.Failures != 0 || pos.Errors != 0 {
		t.Fatalf("pos: %d failures, %d errors in %d trials; the test needs a seed POS misses", pos.Failures, pos.Errors, pos.Trials)
	}
}

// A bug behind a rare message kind (handoff_server.c: MIGRATE is sent only
// after the hellos came in reverse order, and the server aborts only when
// the commits then come in order). POS draws every trial afresh: with seed
// 2 none of its first 150 trials fails. explore keeps the first trial that
// showed MIGRATE, branches just past it, and finds the abort well within
// the same budget; its failing trace replays like any other (--verify).
func TestExploreFindsBehindRareKind(t *testing.T) {
	requireTrials(t)
	sp := handoffSpec(t)
	const budget = 150
	seed := int64(2)
	ex := posMissesExploreRuns(t, sp, seed, budget, t.TempDir())
	if ex.First == nil {
		t.Fatalf("explore: no failure in %d trials (corpus %d, %d features)", ex.Trials, ex.Coverage.Corpus, ex.Coverage.Features)
	}
	f := ex.First
	if f.Outcome.Kind != NodeCrashed || f.Outcome.Node != "server" {
		t.Errorf("explore's first failure, trial %d: %v", f.Index, f.Outcome)
	}
	if f.Verify == nil || !f.Verify.Same {
		t.Errorf("explore's failing trace did not replay: %+v", f.Verify)
	}
	if !strings.HasPrefix(f.Plan, "trial ") {
		t.Errorf("the failing trial was a fresh draw (%q), not a branch: the find is not the corpus's", f.Plan)
	}
	out, err := os.ReadFile(filepath.Join(f.Dir, "server.out"))
	if err != nil || !strings.Contains(string(out), "migrating") {
		t.Errorf("the failing trial's server did not migrate (%v): %s", err, out)
	}
	// What sets the failing trial apart: its server's last words, which
	// no passing trial printed (MIGRATE alone does not: passing trials
	// showed it too).
	if !slices.ContainsFunc(f.Unique, func(u string) bool { return strings.HasSuffix(u, "handoff: commits in id order after a migration") }) ||
		slices.ContainsFunc(f.Unique, func(u string) bool { return strings.Contains(u, "MIGRATE") }) {
		t.Errorf("features only the failing trial showed: %q", f.Unique)
	}
	t.Logf("explore found it at trial %d (%s); POS not in %d", f.Index, f.Plan, budget)
}

// The same seed gives the same exploring campaign with one job and with
// two: the same plan for every trial and the same coverage curve, since
// each generation sees the corpus the trials before it left. Letting go
// of the trials' records once counted (the CLI's DropRecords) changes
// nothing either: the corpus keeps its entries' own; nor does a corpus
// that packs every entry's records (CorpusRecords), whose branches unpack
// them.
func TestExploreDeterministic(t *testing.T) {
	requireTrials(t)
	sp := handoffSpec(t)
	seed := int64(5)
	dir := t.TempDir()
	runs := []struct {
		name    string
		jobs    int
		drop    bool
		records int
	}{{"one job", 1, false, -1}, {"two jobs", 2, false, -1}, {"records dropped", 1, true, -1}, {"records packed", 2, true, 1}}
	plans := make([][]string, len(runs))
	curves := make([][]int, len(runs))
	for i, run := range runs {
		sum, err := Run(t.Context(), sp, RunOptions{Trials: 40, Seed: &seed, Strategy: Explore, Jobs: run.jobs, DropRecords: run.drop,
			CorpusRecords: run.records, OutDir: filepath.Join(dir, "run"), Replace: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range sum.Results {
			plans[i] = append(plans[i], r.Plan)
			if kept := r.Records != nil; kept == run.drop {
				t.Errorf("%s: trial %d kept its records: %v", run.name, r.Index, kept)
			}
		}
		curves[i] = sum.Coverage.Curve
		if c := sum.Coverage; c.Corpus == 0 || run.records > 0 && c.Packed != c.Corpus || run.records < 0 && c.Packed != 0 {
			t.Errorf("%s: %d of %d entries packed", run.name, sum.Coverage.Packed, sum.Coverage.Corpus)
		}
	}
	for i := 1; i < len(runs); i++ {
		if !slices.Equal(plans[0], plans[i]) {
			t.Errorf("plans differ with %s:\n%q\n%q", runs[i].name, plans[0], plans[i])
		}
		if !slices.Equal(curves[0], curves[i]) {
			t.Errorf("coverage curves differ with %s:\n%v\n%v", runs[i].name, curves[0], curves[i])
		}
	}
	branches := 0
	for _, p := range plans[0] {
		if strings.HasPrefix(p, "trial ") {
			branches++
		}
	}
	if branches == 0 {
		t.Errorf("no branch in 40 trials: %q", plans[0])
	}
}

func handoffSpec(t *testing.T) *spec.Spec {
	t.Helper()
	return exploreSpec(t, "handoff.yaml", "handoff_server")
}

// exploreSpec loads a spec of testdata/specs/explore, skipping the test
// when its server is not built.
func exploreSpec(t *testing.T, name, server string) *spec.Spec {
	t.Helper()
	if _, err := os.Stat(repoPath("testdata", "bin", "c", server)); err != nil {
		t.Skipf("skipping: %v (make testdata builds it)", err)
	}
	sp, err := spec.Load(repoPath("testdata", "specs", "explore", name))
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// A sometimes behind two rare orders, in a system whose every trial logs
// something new (migrate_server.c): POS draws every trial afresh, and with
// seed 9 none of its first 150 trials finishes the migration, though a few
// start it. Under explore the sometimes is a goal: the trials that logged
// "migration started" came closest to "migration finished" (one of its
// two words), and branches from them, which keep that line, reach it
// within the same budget (explore without goals did not, with seeds 2, 3
// and 4: the trials that started a migration were a few entries among a
// hundred new ones). The campaign is the same with two jobs. (Seed 4 was
// this test's until flips reversed races: over seeds 4-11 explore reaches
// it in 3 campaigns of 8, before in 4, POS in 2 of 6;
// bench/results/explore-race-flip-2026-12-04.md.)
func TestExploreGoal(t *testing.T) {
	requireTrials(t)
	sp := exploreSpec(t, "migrate.yaml", "migrate_server")
	const budget, goal = 150, "migration finished"
	seed := int64(9)
	dir := t.TempDir()
	pos, err := Run(t.Context(), sp, RunOptions{Trials: budget, Seed: &seed, Strategy: "pos", OutDir: filepath.Join(dir, "pos")})
	if err != nil {
		t.Fatal(err)
	}
	if pos.Reached[goal] != 0 || pos.Closest[goal].Words != 1 {
		t.Fatalf("pos: reached in %d trials, closest %+v; the test needs a seed POS misses, halfway at best", pos.Reached[goal], pos.Closest[goal])
	}
	ex, err := Run(t.Context(), sp, RunOptions{Trials: budget, Seed: &seed, Strategy: Explore, OutDir: filepath.Join(dir, "explore")})
	if err != nil {
		t.Fatal(err)
	}
	first := slices.IndexFunc(ex.Results, func(r *TrialResult) bool { return slices.Contains(r.Reached, goal) })
	if first < 0 {
		t.Fatalf("explore: %q not reached in %d trials (closest %+v, corpus %d)", goal, ex.Trials, ex.Closest[goal], ex.Coverage.Corpus)
	}
	r := ex.Results[first]
	var parent, at, of int
	if _, err := fmt.Sscanf(r.Plan, "trial %d to decision %d of %d", &parent, &at, &of); err != nil {
		t.Fatalf("the trial that reached it, %d, was not a branch: %q", r.Index, r.Plan)
	}
	if p := ex.Results[parent]; len(p.Near) != 1 || p.Near[0].Words != 1 || !strings.Contains(p.Near[0].Line, "migration started") {
		t.Errorf("trial %d branched from trial %d, which did not start a migration: %+v", r.Index, parent, p.Near)
	}
	t.Logf("explore reached %q at trial %d (%s); POS not in %d", goal, r.Index, r.Plan, budget)
	// Two jobs: the same plans up to the trial that reached it, and it.
	two, err := Run(t.Context(), sp, RunOptions{Trials: first + 1, Seed: &seed, Strategy: Explore, Jobs: 2, OutDir: filepath.Join(dir, "jobs")})
	if err != nil {
		t.Fatal(err)
	}
	for i, r2 := range two.Results {
		if r2.Plan != ex.Results[i].Plan {
			t.Fatalf("trial %d with two jobs: %q, with one %q", i, r2.Plan, ex.Results[i].Plan)
		}
	}
	if !slices.Contains(two.Results[first].Reached, goal) {
		t.Errorf("with two jobs trial %d did not reach %q", first, goal)
	}
}

// Every branch of an exploring campaign forks where its prefix ends, and
// its trace marks the op released there: replaying it forks there too and
// gives the same run, under spread faults and delays (the forks' draws),
// whether the fork's op is a program's or a fault.
func TestExploreForksReplay(t *testing.T) {
	requireTrials(t)
	if _, err := os.Stat(repoPath("testdata", "bin", "c", "handoff_server")); err != nil {
		t.Skipf("skipping: %v (make testdata builds it)", err)
	}
	sp, err := spec.Load(repoPath("testdata", "specs", "explore", "handoff-faults.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	seed := int64(3)
	sum, err := Run(t.Context(), sp, RunOptions{Trials: 32, Seed: &seed, Strategy: Explore, OutDir: filepath.Join(dir, "run"), TraceAll: true})
	if err != nil {
		t.Fatal(err)
	}
	byKind := map[string]int{}
	replayed := 0
	for _, r := range sum.Results {
		fork := -1
		for i, rec := range r.Records {
			if rec.Fork != nil {
				fork = i
			}
		}
		if fork < 0 {
			continue
		}
		k := "program"
		if r.Records[fork].Op.Kind.IsFault() || r.Records[fork].Op.Kind == sched.Advance {
			k = "fault or delay"
		}
		if byKind[k] >= 3 {
			continue
		}
		byKind[k]++
		rr, err := Replay(t.Context(), r.TracePath, filepath.Join(dir, "replay"))
		if err != nil {
			t.Fatal(err)
		}
		if !rr.Same {
			t.Errorf("trial %d (%s, forked on a %s op at step %d): replay: %s", r.Index, r.Plan, k, r.Records[fork].Step, rr.Diff)
		}
		replayed++
	}
	if byKind["program"] == 0 {
		t.Errorf("no branch forked on a program's op in 32 trials (%v)", byKind)
	}
	t.Logf("replayed %d forked traces: %v", replayed, byKind)
}

// run --symptom: a production excerpt of handoff's server (collector
// prefixes, timestamps) whose last line is the abort. A trial that prints
// it fails as "symptom", its trace (which carries the symptom) replays,
// and the summary says how far the campaign got. With seed 3, POS does not
// get there in 150 trials (its best: 2 of 3 lines); explore, steered to
// the trials that printed more of the excerpt, does.
func TestSymptom(t *testing.T) {
	requireTrials(t)
	sp := handoffSpec(t)
	f, err := os.Open(repoPath("testdata", "specs", "explore", "handoff-symptom.log"))
	if err != nil {
		t.Fatal(err)
	}
	sy, err := coverage.ReadSymptom(f, "handoff-symptom.log")
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	seed := int64(3)
	pos, err := Run(t.Context(), sp, RunOptions{Trials: 150, Seed: &seed, Strategy: "pos", OutDir: filepath.Join(dir, "pos"), Symptom: sy, StopOnFirst: true})
	if err != nil {
		t.Fatal(err)
	}
	if s := pos.Symptom; s == nil || s.Reproduced >= 0 || s.Best != 2 || s.Lines != 3 {
		t.Fatalf("pos: symptom %+v; the test needs a seed POS misses, with 2 of 3 lines at best", s)
	}
	ex, err := Run(t.Context(), sp, RunOptions{Trials: 150, Seed: &seed, Strategy: Explore, OutDir: filepath.Join(dir, "explore"), Symptom: sy, StopOnFirst: true, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	s := ex.Symptom
	if s == nil || s.Reproduced < 0 || s.Best != 3 || s.BestTrial != s.Reproduced {
		t.Fatalf("explore: symptom %+v", s)
	}
	r := ex.First
	if r.Index != s.Reproduced || r.Outcome.Kind != PropertyViolated || r.Outcome.Property != "symptom" || r.Outcome.Node != "server" {
		t.Errorf("the reproducing trial %d: %v", r.Index, r.Outcome)
	}
	if r.Verify == nil || !r.Verify.Same {
		t.Errorf("its trace did not replay: %+v", r.Verify)
	}
	tr, err := LoadTrace(r.TracePath)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Header.Symptom) != 3 {
		t.Errorf("the trace's header carries %d symptom lines, want 3", len(tr.Header.Symptom))
	}
	t.Logf("explore reproduced the symptom at trial %d (%s); POS not in 150", r.Index, r.Plan)
}

// Stale reads behind one kind of message (lease.c). lease.yaml: a
// replica serves reads while the leader's heartbeats renew its lease, so
// it serves a stale value only when its APPENDs are held and its
// heartbeats are not. lease-quorum.yaml: the leader commits as it sends,
// and the reader fails only when every replica that served a read missed
// the commit, so the APPENDs to both replicas must be held. POS holds a
// connection direction, every kind on it, and the lease ends before a
// read can follow a missed commit: with the case's seed none of its first
// aimBudget trials fails. explore's aim change holds one learned kind on
// one link, or on every link out of a node, at a branch and finds the
// stale read within the same budget (explore without the change did not,
// with seeds 1 to 6, in 200 and 300 trials: docs/explore.md). The failing
// trace records the hold with what it aimed at and replays (--verify, and
// replay); two jobs make the same campaign.
const aimBudget = 150

func TestExploreAim(t *testing.T) {
	requireTrials(t)
	for _, tc := range []struct {
		spec    string
		seed    int64
		objects []string // the aimed hold's, one of
	}{
		{"lease", 4, []string{"link:lead>r1", "link:lead>r2", "link:lead>*"}},
		{"lease-quorum", 4, []string{"link:lead>*"}},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			sp := exploreSpec(t, tc.spec+".yaml", "lease")
			seed := tc.seed
			dir := t.TempDir()
			ex := posMissesExploreRuns(t, sp, seed, aimBudget, dir)
			f := ex.First
			if f == nil {
				t.Fatalf("explore: no failure in %d trials (corpus %d)", ex.Trials, ex.Coverage.Corpus)
			}
			if f.Verify == nil || !f.Verify.Same {
				t.Errorf("explore's failing trace did not replay: %+v", f.Verify)
			}
			out, err := os.ReadFile(filepath.Join(f.Dir, "reader.out"))
			if err != nil || !strings.Contains(string(out), "stale read") {
				t.Errorf("trial %d (%s) failed otherwise than by a stale read (%v): %s", f.Index, f.Plan, err, out)
			}
			// The failing trial, or the branch it came from, aimed the hold:
			// the trace records its link, its kind's shape and its length.
			i := slices.IndexFunc(f.Records, func(r sched.Record) bool { return r.Op.Made() })
			if i < 0 {
				t.Fatalf("trial %d (%s): no aimed hold in its trace", f.Index, f.Plan)
			}
			h := f.Records[i].Op
			if h.Shape != "APPEND" || h.Node != "lead" || !slices.Contains(tc.objects, h.Object) || h.Delay <= 0 {
				t.Errorf("the aimed hold: %+v, want APPENDs from the leader on one of %v", h, tc.objects)
			}
			// While it held, no APPEND crossed its link (or links) and
			// heartbeats did.
			to := strings.TrimPrefix(strings.TrimPrefix(h.Object, "link:lead>"), sched.AnyNode)
			end := min(f.Records[i].VTime+h.Delay, int64(sp.Faults.Until)) // the quiet period ends it
			beats := 0
			for _, r := range f.Records[i:] {
				if r.Op.Kind != sched.Deliver || r.Op.Node != "lead" || !strings.HasPrefix(r.Op.Object, "inbox:"+to) || r.VTime >= end {
					continue
				}
				switch {
				case strings.HasPrefix(string(r.Data), "APPEND"):
					t.Errorf("step %d: %q delivered to %s at %v, held until %v", r.Step, r.Data, r.Op.Object, r.VTime, end)
				case strings.HasPrefix(string(r.Data), "HB"):
					beats++
				}
			}
			if beats == 0 {
				t.Errorf("no heartbeat crossed %s while its APPENDs were held", h.Object)
			}
			t.Logf("explore found it at trial %d (%s; %s); POS not in %d", f.Index, f.Plan, h.Conn, aimBudget)
			// lockstep replay remakes the hold from the trace at its decision.
			rr, err := Replay(t.Context(), f.TracePath, filepath.Join(dir, "replay"))
			if err != nil {
				t.Fatal(err)
			}
			if !rr.Same {
				t.Errorf("replay of trial %d: %s", f.Index, rr.Diff)
			}
			// Two in a row: a second kind-aimed hold, every link into the
			// reader, right after the first, replays as recorded (with
			// the budget spent, as holding nothing).
			replaysTwoInARow(t, f.TracePath, dir, "kind-aimed holds", faults.KindHold(sched.AnyNode, "reader", "VAL", `k7 "VAL"`, 50*time.Millisecond))
			two, err := Run(t.Context(), sp, RunOptions{Trials: f.Index + 1, Seed: &seed, Strategy: Explore, Jobs: 2, OutDir: filepath.Join(dir, "jobs")})
			if err != nil {
				t.Fatal(err)
			}
			for i, r2 := range two.Results {
				if r2.Plan != ex.Results[i].Plan || r2.Outcome.Kind != ex.Results[i].Outcome.Kind {
					// The whole outcomes and what the nodes printed: a rare
					// difference (once in CI, never reproduced) must say why.
					t.Fatalf("trial %d with two jobs: %q %v, with one %q %v\n%s", i, r2.Plan, r2.Outcome, ex.Results[i].Plan, ex.Results[i].Outcome, nodeOutputs(r2.Dir))
				}
			}
		})
	}
}

// TestExploreAimSlow: where a spec allows slow links, explore's aim
// change may slow one learned kind on one link instead of holding it: in a
// trial that does, the kind's messages across the link come at least the
// slow's delay after it began while it lasts, and the trace replays with
// the slow remade from its record, also with a second one right after it.
func TestExploreAimSlow(t *testing.T) {
	requireTrials(t)
	sp := exploreSpec(t, "lease-slow.yaml", "lease")
	seed := int64(4)
	dir := t.TempDir()
	sum, err := Run(t.Context(), sp, RunOptions{Trials: 40, Seed: &seed, Strategy: Explore, OutDir: filepath.Join(dir, "run"), TraceAll: true})
	if err != nil {
		t.Fatal(err)
	}
	slows := 0
	for _, r := range sum.Results {
		if !strings.Contains(r.Plan, "then aim slow ") {
			continue
		}
		recs, i := aimedOp(t, r, "slow")
		s := recs[i]
		if s.Op.Kind != faults.Slow || s.Op.Delay <= 0 || s.Op.Pick == 0 {
			t.Fatalf("trial %d: the aimed op %+v is no slow", r.Index, s.Op)
		}
		if strings.HasPrefix(s.Op.Peer, "slows nothing") {
			continue
		}
		slows++
		from, to, _ := strings.Cut(strings.TrimPrefix(s.Op.Object, "link:"), ">")
		ends := deliveryEnds(recs)
		on := func(a, b string) bool {
			return a != b && (from == sched.AnyNode || from == a) && (to == sched.AnyNode || to == b)
		}
		released := s.VTime + s.Op.Delay
		end := min(s.VTime+int64(s.Op.Pick), int64(sp.Faults.Until))
		for _, rec := range recs[i:] {
			if rec.Op.Kind != sched.Deliver || rec.VTime >= min(released, end) {
				continue
			}
			if a, b := ends(rec); on(a, b) && coverage.OfShape(rec.Data, sched.DataLen(&rec), string(s.Op.Shape)) {
				t.Fatalf("trial %d step %d: %s>%s %q at %v, slowed until %v by %s", r.Index, rec.Step, a, b, rec.Data, time.Duration(rec.VTime), time.Duration(released), sched.Describe(s))
			}
		}
		rr, err := Replay(t.Context(), r.TracePath, filepath.Join(dir, fmt.Sprintf("replay-%d", r.Index)))
		if err != nil {
			t.Fatal(err)
		}
		if !rr.Same {
			t.Fatalf("replay of trial %d (%s): %s", r.Index, r.Plan, rr.Diff)
		}
		if slows > 1 {
			continue
		}
		// Two in a row: a second kind-aimed slow, of the answers on every
		// link into the reader, right after the first, replays as
		// recorded (with the budget spent, as slowing nothing).
		replaysTwoInARow(t, r.TracePath, dir, "kind-aimed slows",
			faults.KindSlow(sched.AnyNode, "reader", "VAL", `k7 "VAL"`, 50*time.Millisecond, 200*time.Millisecond))
	}
	if slows == 0 {
		t.Fatal("no trial aimed a slow that slowed something")
	}
	t.Logf("%d trials aimed slows", slows)
}

// TestExplorePrefixesHold: a branch restarts where it meant to. Its prefix
// is forced as replay forces a trace (sched.Branch), so on a Go system,
// whose goroutines move between threads, no branch's prefix diverges
// before it ends. With a prefix identity of its own (any thread of the
// process, the first offered) 9 of 25 branches of this campaign diverged.
func TestExplorePrefixesHold(t *testing.T) {
	requireTrials(t)
	path := repoPath("testdata", "bugs", "cache-1", "spec.yaml")
	if _, err := os.Stat(repoPath("testdata", "bin", "bugs", "cache-1", "cache1")); err != nil {
		t.Skipf("skipping: %v (make testdata builds it)", err)
	}
	sp, err := spec.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	seed := int64(1)
	sum, err := Run(t.Context(), sp, RunOptions{Trials: 40, Seed: &seed, Strategy: Explore, OutDir: filepath.Join(t.TempDir(), "run")})
	if err != nil {
		t.Fatal(err)
	}
	branches := 0
	for _, r := range sum.Results {
		if !strings.HasPrefix(r.Plan, "trial ") {
			continue
		}
		branches++
		if strings.Contains(r.Plan, "diverged") {
			t.Errorf("trial %d: %s", r.Index, r.Plan)
		}
	}
	if branches < 10 {
		t.Errorf("%d branches in 40 trials, want 10 or more", branches)
	}
	t.Logf("%d branches", branches)
}

// replaysTwoInARow checks that the trace at path, with the made fault o
// inserted right after its first made fault, replays as recorded: two
// made faults in a row (the second, with the budget spent, as doing
// nothing).
func replaysTwoInARow(t *testing.T, path, dir, what string, o *sched.Op) {
	t.Helper()
	two := secondMade(t, path, filepath.Join(dir, "two.jsonl"), o)
	rr, err := Replay(t.Context(), two, filepath.Join(dir, "replay-two"))
	if err != nil {
		t.Fatal(err)
	}
	made := 0
	for _, rec := range rr.Trial.Records {
		if rec.Op.Made() {
			made++
		}
	}
	if !rr.Same || made != 2 {
		t.Errorf("replay with two %s in a row: same %v (%s), %d made", what, rr.Same, rr.Diff, made)
	}
}

// secondMade writes to out the trace at path with the made fault o right
// after its first made fault (at its step and time), and returns out.
func secondMade(t *testing.T, path, out string, o *sched.Op) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	added := false
	for _, l := range strings.Split(string(b), "\n") {
		lines = append(lines, l)
		if added || !strings.Contains(l, `"shape":`) {
			continue
		}
		var line struct {
			Record sched.Record `json:"record"`
		}
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatal(err)
		}
		op := *o
		op.ID = line.Record.Op.ID + 1
		line.Record.Op = op
		add, err := json.Marshal(line)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(add))
		added = true
	}
	if !added {
		t.Fatalf("%s: no made fault", path)
	}
	if err := os.WriteFile(out, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// nodeOutputs is the last lines each node of a trial printed, for a test's
// failure message.
func nodeOutputs(dir string) string {
	var b strings.Builder
	paths, _ := filepath.Glob(filepath.Join(dir, "*.out"))
	more, _ := filepath.Glob(filepath.Join(dir, "*.err"))
	for _, p := range append(paths, more...) {
		data, err := os.ReadFile(p)
		if err != nil || len(data) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		fmt.Fprintf(&b, "%s:\n  %s\n", filepath.Base(p), strings.Join(lines[max(0, len(lines)-5):], "\n  "))
	}
	return b.String()
}

// TestExploreAimGray: where a spec allows grays, an exploring branch may
// make a node gray one way from just before a message its parent had
// (takeover.yaml: every message to c held but its BEATs, from before a
// YES, gives two leaders of one epoch). In every trial that aimed a gray
// which acted, no message of another kind than the one it let through
// crossed that way while it was in force; the campaign finds the two
// leaders through an aimed gray; and each such trace replays.
func TestExploreAimGray(t *testing.T) {
	requireTrials(t)
	sp := exploreSpec(t, "takeover.yaml", "takeover")
	seed := int64(1)
	dir := t.TempDir()
	sum, err := Run(t.Context(), sp, RunOptions{Trials: 70, Seed: &seed, Strategy: Explore, OutDir: filepath.Join(dir, "run"), TraceAll: true})
	if err != nil {
		t.Fatal(err)
	}
	passRE := regexp.MustCompile(`^holds every message (to|from) (\S+) but ("[^"]*") for `)
	grays, found := 0, false
	for _, r := range sum.Results {
		if !strings.Contains(r.Plan, "then aim gray ") {
			continue
		}
		recs, i := aimedOp(t, r, "gray")
		g := recs[i]
		if g.Op.Kind != faults.Gray || g.Op.Delay <= 0 {
			t.Fatalf("trial %d: the aimed op %+v is no gray", r.Index, g.Op)
		}
		if strings.HasPrefix(g.Op.Peer, "holds nothing") {
			continue
		}
		m := passRE.FindStringSubmatch(g.Op.Peer)
		if m == nil {
			t.Fatalf("trial %d: gray %q says nothing of what it lets through", r.Index, g.Op.Peer)
		}
		pass, err := strconv.Unquote(m[3])
		if err != nil {
			t.Fatal(err)
		}
		grays++
		ends := deliveryEnds(recs)
		end := min(g.VTime+g.Op.Delay, int64(sp.Faults.Until))
		for _, rec := range recs[i:] {
			if rec.Op.Kind != sched.Deliver || rec.VTime >= end {
				continue
			}
			from, to := ends(rec)
			way := m[1] == "to" && to == m[2] && from != to || m[1] == "from" && from == m[2] && to != "" && from != to
			if way && !coverage.OfShape(rec.Data, sched.DataLen(&rec), pass) {
				t.Fatalf("trial %d step %d: %s>%s %q at %v, during %s", r.Index, rec.Step, from, to, rec.Data, time.Duration(rec.VTime), sched.Describe(g))
			}
		}
		found = found || r.Outcome.Kind == ClientFailed && strings.Contains(r.Plan, "aim gray *>c")
		rr, err := Replay(t.Context(), r.TracePath, filepath.Join(dir, fmt.Sprintf("replay-%d", r.Index)))
		if err != nil {
			t.Fatal(err)
		}
		if !rr.Same {
			t.Fatalf("replay of trial %d (%s): %s", r.Index, r.Plan, rr.Diff)
		}
		if grays > 1 {
			continue
		}
		// Two in a row: a second aimed gray, of every message from c,
		// right after the first, replays as recorded (with the budget
		// spent, as holding nothing).
		replaysTwoInARow(t, r.TracePath, dir, "aimed grays", faults.AimedGray("c", false, "ASK", `k4 "ASK"`, 50*time.Millisecond))
	}
	if grays == 0 || !found {
		t.Fatalf("%d aimed grays acted; two leaders found through one: %v", grays, found)
	}
	t.Logf("%d trials aimed grays that acted", grays)
}

// deliveryEnds names a delivery's sending and receiving nodes, from a
// trace's records: a delivery's sender is its op's node, and each node's
// address is the source of its deliveries.
func deliveryEnds(recs []sched.Record) func(sched.Record) (string, string) {
	nodes := map[netip.Addr]string{}
	for _, rec := range recs {
		if src, _, ok := strings.Cut(rec.Op.Conn, ">"); ok && rec.Op.Kind == sched.Deliver {
			nodes[addrOf(src)] = rec.Op.Node
		}
	}
	return func(rec sched.Record) (string, string) { return rec.Op.Node, nodes[addrOf(rec.Op.Peer)] }
}

// aimedOp is the records of a trial an exploring branch aimed a fault in
// (what: "slow", "gray") and the index of the fault it made.
func aimedOp(t *testing.T, r *TrialResult, what string) ([]sched.Record, int) {
	t.Helper()
	recs := traceRecords(t, r)
	i := slices.IndexFunc(recs, func(rec sched.Record) bool { return rec.Op.Made() })
	if i < 0 {
		t.Fatalf("trial %d (%s): no aimed %s in its trace", r.Index, r.Plan, what)
	}
	return recs, i
}

// TestExploreAimDrop: where a spec allows drops (lease-drop.yaml, lease.c
// over UDP), explore's aim may lose one datagram of a learned kind on one
// link. Every aimed drop that acts loses a datagram of its kind on its
// link, then or, armed, the next one sent, which is never delivered; each
// such trace replays, and so does one with a second aimed drop right
// after the first.
func TestExploreAimDrop(t *testing.T) {
	requireTrials(t)
	sp := exploreSpec(t, "lease-drop.yaml", "lease")
	seed := int64(1)
	dir := t.TempDir()
	sum, err := Run(t.Context(), sp, RunOptions{Trials: 60, Seed: &seed, Strategy: Explore, OutDir: filepath.Join(dir, "run"), TraceAll: true})
	if err != nil {
		t.Fatal(err)
	}
	lostRE := regexp.MustCompile(`^loses #(\d+), the "[^"]*" datagram \S+$`)
	drops, armed := 0, 0
	for _, r := range sum.Results {
		if !strings.Contains(r.Plan, "then aim drop ") {
			continue
		}
		recs, i := aimedOp(t, r, "drop")
		d := recs[i]
		if d.Op.Kind != faults.Drop {
			t.Fatalf("trial %d: the aimed op %+v is no drop", r.Index, d.Op)
		}
		var id uint64
		switch m := lostRE.FindStringSubmatch(d.Op.Peer); {
		case strings.HasPrefix(d.Op.Peer, "drops nothing"):
			continue
		case m != nil:
			id, _ = strconv.ParseUint(m[1], 10, 64)
			checkOldestLost(t, r, recs, i, id)
		case strings.HasPrefix(d.Op.Peer, "arms: "):
			// The drop of the datagram it held, when one came.
			j := slices.IndexFunc(recs[i+1:], func(rec sched.Record) bool {
				return rec.Op.Kind == faults.Drop && !rec.Op.Made()
			})
			if j < 0 {
				continue
			}
			id = uint64(recs[i+1+j].Op.Delay)
			armed++
		default:
			t.Fatalf("trial %d: aimed drop %q says nothing of what it lost", r.Index, d.Op.Peer)
		}
		drops++
		for _, rec := range recs {
			if rec.Op.Kind == sched.Deliver && rec.Op.ID == id {
				t.Fatalf("trial %d: datagram #%d, which %s lost, was delivered at step %d", r.Index, id, sched.Describe(d), rec.Step)
			}
		}
		rr, err := Replay(t.Context(), r.TracePath, filepath.Join(dir, fmt.Sprintf("replay-%d", r.Index)))
		if err != nil {
			t.Fatal(err)
		}
		if !rr.Same {
			t.Fatalf("replay of trial %d (%s): %s", r.Index, r.Plan, rr.Diff)
		}
		if drops > 1 {
			continue
		}
		// Two in a row: a second aimed drop right after the first replays
		// as recorded (with the budget spent, as losing nothing).
		replaysTwoInARow(t, r.TracePath, dir, "aimed drops", faults.AimedDrop("lead", "r1", "HB", `k1 "HB"`))
	}
	if drops == 0 || armed == 0 {
		t.Fatalf("aimed drops that lost a datagram: %d, of them armed: %d", drops, armed)
	}
	t.Logf("%d trials aimed drops that lost a datagram, %d of them armed first", drops, armed)
}

// checkOldestLost checks that the datagram #id an aimed drop (recs[i])
// lost at once was the oldest of its kind on its link in flight: none
// older of the kind is delivered there after it.
func checkOldestLost(t *testing.T, r *TrialResult, recs []sched.Record, i int, id uint64) {
	t.Helper()
	ends := deliveryEnds(recs)
	link := strings.TrimPrefix(recs[i].Op.Object, "link:")
	shape := string(recs[i].Op.Shape)
	for _, rec := range recs[i:] {
		if rec.Op.Kind != sched.Deliver || !rec.Op.Datagram() {
			continue
		}
		if from, to := ends(rec); from+">"+to == link && coverage.OfShape(rec.Data, sched.DataLen(&rec), shape) && rec.Op.ID < id {
			t.Fatalf("trial %d: an older datagram #%d %s>%s of its kind was in flight and kept while #%d was lost", r.Index, rec.Op.ID, from, to, id)
		}
	}
}

// TestExploreFlipReverses: on thread-1 (a broker's subscribing thread
// writes the retained value after a publishing thread may have written a
// newer one), an exploring campaign's flips reverse races of the trials
// they branch from: the op of the second thread comes before the first
// thread's next op. A flip of a passing trial reverses the two threads'
// writes to one subscriber, which goes back in time, and its trace
// replays.
func TestExploreFlipReverses(t *testing.T) {
	requireTrials(t)
	if _, err := os.Stat(repoPath("testdata", "bin", "bugs", "thread-1", "thread1")); err != nil {
		t.Skipf("skipping: %v (make testdata builds it)", err)
	}
	sp, err := spec.Load(repoPath("testdata", "bugs", "thread-1", "spec.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	seed := int64(1)
	dir := t.TempDir()
	sum, err := Run(t.Context(), sp, RunOptions{Trials: 20, Seed: &seed, Strategy: Explore, OutDir: filepath.Join(dir, "run"), TraceAll: true})
	if err != nil {
		t.Fatal(err)
	}
	flipRE := regexp.MustCompile(`^trial (\d+) to decision \d+ of \d+, then flip record (\d+) before (\d+)$`)
	flips, reversed, found := 0, 0, 0
	for _, r := range sum.Results {
		m := flipRE.FindStringSubmatch(r.Plan)
		if m == nil {
			continue
		}
		flips++
		p, _ := strconv.Atoi(m[1])
		b, _ := strconv.Atoi(m[2])
		a, _ := strconv.Atoi(m[3])
		parent := sum.Results[p]
		pr, cr := traceRecords(t, parent), traceRecords(t, r)
		first, second := pr[a].Op, pr[b].Op
		// The prefix is the parent's records before a: the branch starts
		// at record a of the child's.
		ia := slices.IndexFunc(cr[a:], func(rec sched.Record) bool { return rec.Op.LPID == first.LPID })
		ib := slices.IndexFunc(cr[a:], func(rec sched.Record) bool {
			return rec.Op.LPID == second.LPID && sched.SameOnProcess(&rec.Op, &second)
		})
		if ib >= 0 && (ia < 0 || ib < ia) {
			reversed++
		}
		if parent.Outcome.Kind == sched.Pass && r.Outcome.Kind == sched.ClientFailed &&
			strings.Contains(nodeOutputs(filepath.Dir(r.TracePath)), "went back in time") {
			found++
			rr, err := Replay(t.Context(), r.TracePath, filepath.Join(dir, fmt.Sprintf("replay-%d", r.Index)))
			if err != nil {
				t.Fatal(err)
			}
			if !rr.Same {
				t.Fatalf("replay of trial %d (%s): %s", r.Index, r.Plan, rr.Diff)
			}
		}
	}
	if reversed == 0 || found == 0 {
		t.Fatalf("%d flips: %d reversed their race, %d of a passing trial went back in time", flips, reversed, found)
	}
	t.Logf("%d flips: %d reversed their race, %d of a passing trial went back in time", flips, reversed, found)
}

// TestExploreLonger: a bug behind an outage longer than a failure
// detector (outlast.c: the backup takes over after 980 ms without a
// heartbeat, and the primary, cut off for longer, beats again at the
// heal). The spec's partitions last 100 ms to 1 s: POS, seed 19, has none
// long enough in 20 trials. explore's longer change makes a kept trial's
// partition last the whole second: such a trial's partition heals 1 s
// after it began, the backup takes over, and a failing one replays
// (--verify) and is the same campaign with two jobs.
func TestExploreLonger(t *testing.T) {
	requireTrials(t)
	sp := exploreSpec(t, "outlast.yaml", "outlast")
	seed := int64(19)
	const budget = 20
	dir := t.TempDir()
	posMisses(t, sp, seed, budget, dir)
	ex, err := Run(t.Context(), sp, RunOptions{Trials: budget, Seed: &seed, Strategy: Explore, OutDir: filepath.Join(dir, "explore"), TraceAll: true, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	longer, failed := 0, 0
	for _, r := range ex.Results {
		if !strings.Contains(r.Plan, "then longer partition to 1s") {
			continue
		}
		longer++
		recs := traceRecords(t, r)
		cut := slices.IndexFunc(recs, func(rec sched.Record) bool { return rec.Op.Kind == faults.Partition })
		heal := slices.IndexFunc(recs, func(rec sched.Record) bool { return rec.Op.Kind == faults.Heal })
		if cut < 0 || heal < 0 {
			t.Fatalf("trial %d (%s): partition at record %d, heal at %d", r.Index, r.Plan, cut, heal)
		}
		if d := time.Duration(recs[cut].Op.Delay); d != time.Second {
			t.Errorf("trial %d (%s): the partition's length %v, want 1s", r.Index, r.Plan, d)
		}
		// Due 1 s after it began (or at the quiet period, faults.until,
		// 3 s), the heal is released at that time or at a later decision.
		want := min(time.Duration(recs[cut].VTime)+time.Second, sp.Faults.Until)
		if got := time.Duration(recs[heal].VTime); got < want {
			t.Errorf("trial %d (%s): partition at %v healed at %v, before %v", r.Index, r.Plan, time.Duration(recs[cut].VTime), got, want)
		}
		if !r.Outcome.Kind.IsFailure() {
			continue
		}
		failed++
		out, err := os.ReadFile(filepath.Join(r.Dir, "b.out"))
		if err != nil || !strings.Contains(string(out), "two primaries") {
			t.Errorf("trial %d (%s) failed otherwise than by two primaries (%v): %s", r.Index, r.Plan, err, out)
		}
		if r.Verify == nil || !r.Verify.Same {
			t.Errorf("trial %d (%s): its trace did not replay: %+v", r.Index, r.Plan, r.Verify)
		}
	}
	if failed == 0 {
		t.Fatalf("explore: %d longer trials, none failed, in %d trials (%d failures)", longer, ex.Trials, ex.Failures)
	}
	t.Logf("explore: %d of %d longer trials failed, %d failures in %d trials; POS none", failed, longer, ex.Failures, budget)
	two, err := Run(t.Context(), sp, RunOptions{Trials: budget, Seed: &seed, Strategy: Explore, Jobs: 2, OutDir: filepath.Join(dir, "jobs")})
	if err != nil {
		t.Fatal(err)
	}
	for i, r2 := range two.Results {
		if r2.Plan != ex.Results[i].Plan || r2.Outcome.Kind != ex.Results[i].Outcome.Kind {
			t.Fatalf("trial %d with two jobs: %q %v, with one %q %v", i, r2.Plan, r2.Outcome, ex.Results[i].Plan, ex.Results[i].Outcome)
		}
	}
}
