package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/result"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/spec"
)

func failingSummary() *result.Summary {
	pass := &result.TrialResult{Index: 0, Outcome: sched.Outcome{Kind: sched.Pass}}
	fail := func(i int, k sched.OutcomeKind) *result.TrialResult {
		return &result.TrialResult{Index: i, Dir: "/o/" + string(rune('0'+i)), TracePath: "/o/" + string(rune('0'+i)) + "/trace.jsonl",
			Outcome: sched.Outcome{Kind: k, Detail: "node server/0 was killed by SIGABRT", Node: "server", Steps: 18, VTime: 2 * time.Second}}
	}
	f1, f2 := fail(1, sched.NodeCrashed), fail(3, sched.Deadlock)
	f2.TmpNotKept = "no room"
	return &result.Summary{Spec: &spec.Spec{Name: "demo"}, Strategy: "pos", Trials: 4, Failures: 2, Duration: 1500 * time.Millisecond,
		ByKind: map[sched.OutcomeKind]int{sched.Pass: 2, sched.NodeCrashed: 1, sched.Deadlock: 1},
		First:  f1, Results: []*result.TrialResult{pass, f1, fail(2, sched.Pass), f2}}
}

// TestJUnit parses the XML back: a test case per campaign, failing with
// the first failure's outcome and trace, in error for lockstep errors.
func TestJUnit(t *testing.T) {
	passing := &result.Summary{Spec: &spec.Spec{Name: "fixed"}, Strategy: "pct", Trials: 10, Duration: time.Second,
		ByKind: map[sched.OutcomeKind]int{sched.Pass: 10}}
	erring := &result.Summary{Spec: &spec.Spec{Name: "odd"}, Strategy: "pos", Trials: 3, Errors: 1, Duration: time.Second,
		FirstError: &result.TrialResult{Index: 2, Dir: "/e/2", Outcome: sched.Outcome{Kind: sched.Error, Node: "db", Detail: "starting node db: exec format error"}}}
	var b bytes.Buffer
	err := WriteJUnit(&b, []Campaign{
		{Spec: "demo", Summary: failingSummary()},
		{Spec: "fixed", Summary: passing},
		{Spec: "odd", Summary: erring},
		{Spec: "/x/bad.yaml", Err: errors.New("bad.yaml:3: nodes: want a list")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), xml.Header) {
		t.Errorf("no XML header:\n%s", b.String())
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
		Suite    []struct {
			Name  string `xml:"name,attr"`
			Tests int    `xml:"tests,attr"`
			Cases []struct {
				Name    string  `xml:"name,attr"`
				Time    float64 `xml:"time,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
					Type    string `xml:"type,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
				Error *struct {
					Message string `xml:"message,attr"`
				} `xml:"error"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if doc.Tests != 4 || doc.Failures != 1 || doc.Errors != 2 || len(doc.Suite) != 1 || len(doc.Suite[0].Cases) != 4 {
		t.Fatalf("counts: %+v\n%s", doc, b.String())
	}
	cs := doc.Suite[0].Cases
	f := cs[0].Failure
	if cs[0].Name != "demo (pos)" || cs[0].Time != 1.5 || f == nil || cs[0].Error != nil {
		t.Fatalf("failing case: %+v", cs[0])
	}
	for _, w := range []string{"2 of 4 trials failed", "trial 1: node-crashed: node server/0 was killed by SIGABRT", "trace: /o/1/trace.jsonl"} {
		if !strings.Contains(f.Message, w) {
			t.Errorf("failure message %q lacks %q", f.Message, w)
		}
	}
	if f.Type != "node-crashed" || !strings.Contains(f.Text, "/o/1/trace.jsonl") || !strings.Contains(f.Text, "trial 3 deadlock") || strings.Contains(f.Text, "trial 2") {
		t.Errorf("failure %+v", f)
	}
	if cs[1].Failure != nil || cs[1].Error != nil {
		t.Errorf("passing case: %+v", cs[1])
	}
	if e := cs[2].Error; e == nil || !strings.Contains(e.Message, "trial 2, node db: starting node db: exec format error") {
		t.Errorf("lockstep error case: %+v", cs[2])
	}
	if e := cs[3].Error; cs[3].Name != "/x/bad.yaml" || e == nil || e.Message != "bad.yaml:3: nodes: want a list" {
		t.Errorf("run error case: %+v", cs[3])
	}
}

// TestJSON parses the summary back.
func TestJSON(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, Campaign{Spec: "demo", Summary: failingSummary()}); err != nil {
		t.Fatal(err)
	}
	var got JSONSummary
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if got.Spec != "demo" || got.Strategy != "pos" || got.Trials != 4 || got.Failures != 2 || got.HitRatio != 0.5 || got.Duration != 1.5 {
		t.Errorf("totals: %+v", got)
	}
	if got.ByKind["pass"] != 2 || got.ByKind["node-crashed"] != 1 || got.ByKind["deadlock"] != 1 || len(got.ByKind) != 3 {
		t.Errorf("by kind %v", got.ByKind)
	}
	want := JSONTrial{Index: 1, Kind: "node-crashed", Detail: "node server/0 was killed by SIGABRT", Node: "server", Steps: 18, VTime: 2e9, Trace: "/o/1/trace.jsonl", Dir: "/o/1"}
	if got.First == nil || !reflect.DeepEqual(*got.First, want) {
		t.Errorf("first failure %+v, want %+v", got.First, want)
	}
	if len(got.Failing) != 2 || got.Failing[1].Index != 3 || got.FirstError != nil || got.Error != "" {
		t.Errorf("failing %+v, first error %+v, error %q", got.Failing, got.FirstError, got.Error)
	}
	if len(got.Failing) == 2 && got.Failing[1].TmpNotKept != "no room" {
		t.Errorf("failing trial 3's tmp_not_kept %q, want the trial's reason", got.Failing[1].TmpNotKept)
	}

	b.Reset()
	if err := WriteJSON(&b, Campaign{Spec: "x.yaml", Err: errors.New("x.yaml: no such file")}); err != nil {
		t.Fatal(err)
	}
	got = JSONSummary{}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil || got.Error != "x.yaml: no such file" || got.Spec != "x.yaml" || got.Trials != 0 {
		t.Errorf("error summary %+v, %v", got, err)
	}
}
