package coverage

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/sched"
)

func TestOrderings(t *testing.T) {
	ev := func(elems ...string) []event {
		var out []event
		for _, e := range elems {
			elem, fault, _ := strings.Cut(e, "|")
			out = append(out, event{elem: elem, fault: fault})
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		timeline []event
		window   int
		want     []string
	}{
		{"neighbours", ev("a", "b", "c"), 1, []string{"a b ", "b c "}},
		{"a window", ev("a", "b", "c", "d"), 2, []string{"a b ", "a c ", "b c ", "b d ", "c d "}},
		// A run of heartbeats is one: it hides nothing behind it.
		{"repeats are one", ev("a", "h", "h", "h", "h", "b"), 1, []string{"a h ", "h b "}},
		// An element does not pair with itself, and its window holds
		// distinct ones (a pair may come again from a later event:
		// Features keeps each once).
		{"distinct", ev("a", "h", "a", "h", "b"), 2, []string{"a h ", "a b ", "h a ", "h b ", "a h ", "a b ", "h b "}},
		{"the later event's fault", ev("a", "b|partition", "c"), 2, []string{"a b partition", "a c ", "b c "}},
		{"nothing", nil, 4, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			orderings(tc.timeline, tc.window, func(a, b event) { got = append(got, a.elem+" "+b.elem+" "+b.fault) })
			if !slices.Equal(got, tc.want) {
				t.Errorf("orderings %q, want %q", got, tc.want)
			}
		})
	}
}

// TestFaultsInForce reads the faults of real traces: raft's partitions
// healed by their node, Redis's partition of a group healed by the
// group's name, a crash ended by its restart.
func TestFaultsInForce(t *testing.T) {
	type span struct {
		from, to int // steps: the fault's record, its recovery's
		kind     string
	}
	for _, tc := range []struct {
		name  string
		spans []span
	}{
		{"raft", []span{{4786, 4971, "partition"}, {9156, 10390, "partition"}}},
		{"redis", []span{{5811, 7095, "partition"}}},
		{"locks-1", []span{{60, 62, "crash"}}}, // the restart follows at once
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := readFixture(t, tc.name)
			inForce := faultsInForce(tr, faults.ReplayOf)
			during := 0
			for i, r := range tr.Records {
				want := ""
				for _, s := range tc.spans {
					if r.Step >= s.from && r.Step < s.to {
						want = s.kind
						if r.Step > s.from {
							during++
						}
					}
				}
				if inForce[i] != want {
					t.Errorf("step %d (%s): in force %q, want %q", r.Step, r.Op.Kind, inForce[i], want)
				}
			}
			if during == 0 && tc.name != "locks-1" {
				t.Error("no record ran while a fault was in force")
			}
		})
	}
	// A fault no recovery follows stays in force; several are listed.
	tr := &sched.Trace{Records: []sched.Record{
		{Step: 1, Op: sched.Op{Kind: "pause", Node: "n1", Object: "node:n1", LPID: "fault"}},
		{Step: 2, Op: sched.Op{Kind: "crash", Node: "n2", Object: "node:n2", LPID: "fault"}},
		{Step: 3, Op: sched.Op{Kind: sched.Send, Node: "n3"}},
		{Step: 4, Op: sched.Op{Kind: "restart", Node: "n2", Object: "node:n2", LPID: "fault"}},
		{Step: 5, Op: sched.Op{Kind: sched.Send, Node: "n3"}},
	}}
	if got, want := faultsInForce(tr, faults.ReplayOf), []string{"pause", "crash+pause", "crash+pause", "pause", "pause"}; !slices.Equal(got, want) {
		t.Errorf("in force %q, want %q", got, want)
	}
	// Told of no recoveries, a restart is one more fault.
	if got, want := faultsInForce(tr, nil), []string{"pause", "crash+pause", "crash+pause", "crash+pause+restart", "crash+pause+restart"}; !slices.Equal(got, want) {
		t.Errorf("no recoveries known: in force %q, want %q", got, want)
	}
}

// writeTrial makes a trial directory of a fixture trace and node output.
func writeTrial(t *testing.T, fixture string, logs map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join("testdata", fixture+".trace.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"trace.jsonl": string(b)}
	for name, text := range logs {
		files[name] = text
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Lines raftex members printed (hclog), from the trial the raft fixture
// comes from.
const raftLog = `2024-01-01T00:00:00.000Z [INFO]  raft-n1: entering follower state: follower="Node at 10.77.0.1:7000 [Follower]" leader-address= leader-id=
2024-01-01T00:00:00.400Z [INFO]  raft-n1: entering candidate state: node="Node at 10.77.0.1:7000 [Candidate]" term=3
2024-01-01T00:00:00.400Z [INFO]  raft-n1: election won: term=3 tally=2
2024-01-01T00:00:00.400Z [INFO]  raft-n1: entering leader state: leader="Node at 10.77.0.1:7000 [Leader]"
`

func TestCoverage(t *testing.T) {
	dir := writeTrial(t, "raft", map[string]string{"n1.err": raftLog, "n1.out": "", "checker.out": "not a node's\n"})
	trial, err := ReadTrial(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(trial.Logs) != 2 || trial.Logs[0].Stream != "out" || trial.Logs[1].Node != "n1" || len(trial.Logs[1].Lines) != 4 {
		t.Fatalf("logs %+v: want n1's out and err (4 lines)", trial.Logs)
	}

	c := New(faults.ReplayOf)
	fs := c.Features(trial)
	classes := map[Class]int{}
	for _, f := range fs {
		classes[f.Class]++
	}
	if classes[ClassKind] != len(c.Kinds().List()) || classes[ClassTemplate] != 4 || classes[ClassOrdering] == 0 {
		t.Errorf("features by class %v: want every kind (%d), 4 templates, some orderings", classes, len(c.Kinds().List()))
	}
	novel := c.Merge(fs)
	if len(novel) != len(fs) || c.Len() != len(fs) {
		t.Errorf("first trial: %d novel of %d features", len(novel), len(fs))
	}
	// The same trial again shows nothing new; each feature is counted
	// once per trial.
	if novel := c.Add(trial); len(novel) != 0 {
		t.Errorf("the same trial again: %d novel, first %s", len(novel), novel[0])
	}
	f := fs[0]
	if c.Count(f) != 2 || c.Rarity(f) != 0.5 || c.ID(f) != 1 {
		t.Errorf("%s: count %d, rarity %v, id %d; want 2, 0.5, 1", f, c.Count(f), c.Rarity(f), c.ID(f))
	}
	unseen := Feature{ClassTemplate, "never printed"}
	if c.Count(unseen) != 0 || c.Rarity(unseen) != 1 || c.ID(unseen) != 0 {
		t.Errorf("an unseen feature: count %d, rarity %v, id %d", c.Count(unseen), c.Rarity(unseen), c.ID(unseen))
	}

	// A vote request received by a member and its answer sent back is
	// an ordering, named by the kinds' short names.
	var votes []string
	for _, f := range c.List() {
		if f.Class == ClassOrdering && strings.HasPrefix(f.Key, "<:7000 \x01{") {
			votes = append(votes, c.Describe(f))
		}
	}
	if len(votes) == 0 {
		t.Error("no ordering starts with a vote request received")
	}
	for _, d := range votes {
		if !strings.HasPrefix(d, "<k") || !strings.Contains(d, " ⇒ ") {
			t.Errorf("ordering described as %q, want <kN ⇒ …", d)
		}
	}
	// The log's order: candidate, then election won.
	want := Feature{ClassOrdering, "@" + TemplateOf(strings.Split(raftLog, "\n")[1]) + " ⇒ @" + TemplateOf(strings.Split(raftLog, "\n")[2]) + " | "}
	if c.Count(want) != 2 {
		t.Errorf("ordering %q not seen twice", want.Key)
	}
	if d := c.Describe(want); d != "t2 ⇒ t3" {
		t.Errorf("described as %q, want t2 ⇒ t3", d)
	}
	// A partition was in force for some orderings.
	partitioned := slices.ContainsFunc(c.List(), func(f Feature) bool {
		return f.Class == ClassOrdering && strings.HasSuffix(f.Key, " | partition")
	})
	if !partitioned {
		t.Error("no ordering under the partition the trace holds")
	}
}

// TestCoverageDeterministic: the same trials in the same order give the
// same features, IDs and counts; novelty falls as trials repeat.
func TestCoverageDeterministic(t *testing.T) {
	var trials []*Trial
	for _, name := range []string{"locks-1", "lease-1", "raft", "locks-1"} {
		trial, err := ReadTrial(writeTrial(t, name, nil))
		if err != nil {
			t.Fatal(err)
		}
		trials = append(trials, trial)
	}
	run := func() ([]string, []int) {
		c := New(faults.ReplayOf)
		var novelty []int
		for _, tr := range trials {
			novelty = append(novelty, len(c.Add(tr)))
		}
		var out []string
		for _, f := range c.List() {
			out = append(out, f.String()+" "+c.Describe(f))
		}
		return out, novelty
	}
	a, na := run()
	b, nb := run()
	if !slices.Equal(a, b) || !slices.Equal(na, nb) {
		t.Fatal("two runs over the same trials differ")
	}
	if na[0] == 0 || na[3] != 0 {
		t.Errorf("novelty per trial %v: want some, then none for locks-1 again", na)
	}
}
