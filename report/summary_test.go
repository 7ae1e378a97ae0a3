package report

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/result"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/spec"
)

// TestSummary: the summary names a lockstep error's cause, lists failing
// traces, and says when it covers an interrupted campaign.
func TestSummary(t *testing.T) {
	sp := &spec.Spec{Name: "s"}
	fail := func(i int) *result.TrialResult {
		return &result.TrialResult{Index: i, Outcome: sched.Outcome{Kind: sched.Deadlock}, TracePath: fmt.Sprintf("/o/%d/trace.jsonl", i)}
	}
	for _, tc := range []struct {
		name    string
		sum     result.Summary
		want    []string
		notWant []string
	}{
		{"error cause", result.Summary{Trials: 2, Errors: 1, FirstError: &result.TrialResult{Index: 1, Dir: "/o/1", TracePath: "/o/1/trace.jsonl",
			Outcome: sched.Outcome{Kind: sched.Error, Node: "db", Detail: "starting node db: exec format error"}}},
			[]string{"lockstep errors: 1; first: trial 1, node db: starting node db: exec format error\n", "  trace: /o/1/trace.jsonl\n"},
			[]string{"interrupted"}},
		{"failing traces", result.Summary{Trials: 12, Failures: 12, First: fail(0), Results: []*result.TrialResult{
			fail(0), fail(1), fail(2), fail(3), fail(4), fail(5), fail(6), fail(7), fail(8), fail(9), fail(10), fail(11)}},
			[]string{"failing traces:\n  trial 0 deadlock: /o/0/trace.jsonl\n", "  trial 9 deadlock: /o/9/trace.jsonl\n  and 2 more\n"},
			[]string{"/o/10/", "lockstep errors"}},
		{"tmp not kept", result.Summary{Trials: 3, Failures: 3, First: fail(0), Results: []*result.TrialResult{
			fail(0), {Index: 1, Outcome: sched.Outcome{Kind: sched.Deadlock}, TmpNotKept: "copying its 20 MiB would leave 4 MiB free"},
			{Index: 2, Outcome: sched.Outcome{Kind: sched.Deadlock}, TmpNotKept: "copying its 30 MiB would leave 0 B free"}}},
			[]string{"{{tmp}} not kept for 2 trial(s), the first trial 1: copying its 20 MiB would leave 4 MiB free (their traces and outputs are)\n"},
			[]string{"30 MiB"}},
		{"unique properties", result.Summary{Trials: 5, Reached: map[string]int{"one leader": 5}},
			[]string{"unique:\n  \"one leader\" matched in 5 of 5 trials\n  \"one primary\" NO LINE MATCHED in 5 trials: it checked nothing (does its pattern, primary of (\\d+), fit the nodes' lines?)\n"},
			nil},
		{"interrupted", result.Summary{Trials: 3, Interrupted: true},
			[]string{"interrupted: the summary covers the 3 trials finished before\n"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.sum.Spec, tc.sum.Duration = sp, time.Second
			if tc.name == "unique properties" {
				tc.sum.Spec = &spec.Spec{Name: "s", Properties: []spec.Property{
					{Kind: spec.Unique, Name: "one leader", Pattern: regexp.MustCompile(`won term (\d+)`)},
					{Kind: spec.Unique, Name: "one primary", Pattern: regexp.MustCompile(`primary of (\d+)`)},
				}}
			}
			var b bytes.Buffer
			WriteSummary(&b, &tc.sum, false)
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("lacks %q:\n%s", w, b.String())
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(b.String(), w) {
					t.Errorf("has %q:\n%s", w, b.String())
				}
			}
		})
	}
}

// TestSummaryExact pins the summary's whole text, by kind in name order,
// and the --stats lines computed from the trials' figures.
func TestSummaryExact(t *testing.T) {
	first := &result.TrialResult{Index: 2, Dir: "/o/2", TracePath: "/o/2/trace.jsonl",
		Outcome: sched.Outcome{Kind: sched.Deadlock, Detail: "nothing enabled", Steps: 7, VTime: time.Second}, Duration: 30 * time.Millisecond}
	pass := &result.TrialResult{Index: 0, Outcome: sched.Outcome{Kind: sched.Pass}, Duration: 10 * time.Millisecond}
	s := &result.Summary{Spec: &spec.Spec{Name: "demo"}, Strategy: "pos", Trials: 2, Failures: 1, Duration: 2 * time.Second,
		ByKind: map[sched.OutcomeKind]int{sched.Pass: 1, sched.Deadlock: 1}, First: first, Results: []*result.TrialResult{pass, first}}
	want := `spec demo, strategy pos: 2 trials in 2s (60.0 trials/min)
failures: 1 (hit ratio 0.5000)
  deadlock             1
  pass                 1
first failure: trial 2: deadlock: nothing enabled (step 7, virtual time 1s)
  trace: /o/2/trace.jsonl
  node output: /o/2
`
	var b bytes.Buffer
	WriteSummary(&b, s, false)
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	WriteSummary(&b, s, true)
	stats := strings.TrimPrefix(b.String(), want)
	if !strings.HasPrefix(stats, "real time per trial (mean): 20.0ms = ") || !strings.Contains(stats, "stops per trial (mean): 0,") {
		t.Fatalf("stats lines:\n%s", stats)
	}
}

// TestWriteTrace: the `show` listing of real traces (a deadlock of the bug
// suite, a crash and restart, a timer advance) is what lockstep printed
// before the listing moved here, byte for byte.
func TestWriteTrace(t *testing.T) {
	for _, name := range []string{"locks-1", "pingpong-crash", "timeout-c"} {
		t.Run(name, func(t *testing.T) {
			tr := loadTrace(t, "testdata/"+name+".trace.jsonl")
			want, err := os.ReadFile("testdata/" + name + ".show")
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			WriteTrace(&b, tr)
			if b.String() != string(want) {
				t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
			}
		})
	}
}

func loadTrace(t *testing.T, path string) *sched.Trace {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := sched.ReadTrace(bufio.NewReader(f))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}
