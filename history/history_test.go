package history

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func mustModel(t *testing.T, name string) *Model {
	t.Helper()
	m, err := NewModel(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func parse(t *testing.T, lines string) []Op {
	t.Helper()
	ops, err := Read(strings.NewReader(lines), "inline")
	if err != nil {
		t.Fatal(err)
	}
	return ops
}

func check(t *testing.T, model string, ops []Op) *Result {
	t.Helper()
	res, err := Check(context.Background(), mustModel(t, model), ops, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Each model has a hand-written linearizable history and a violating one,
// both with operations of unknown outcome and ties in time; kv also has a
// pair from real runs.
func TestHistoryFiles(t *testing.T) {
	for _, tc := range []struct {
		file    string
		model   string
		want    Verdict
		unknown int // operations kept as never returned
		dropped int // failed operations and unseen reads
	}{
		{"register-ok.jsonl", "register", Linearizable, 1, 2},
		{"register-bad.jsonl", "register", Violation, 1, 0},
		{"kv-ok.jsonl", "kv", Linearizable, 1, 1},
		{"kv-bad.jsonl", "kv", Violation, 1, 0},
		{"set-ok.jsonl", "set", Linearizable, 1, 2},
		{"set-bad.jsonl", "set", Violation, 1, 0},
		// From lockstep runs of testdata/workload's kv-sync.yaml and
		// kv-async.yaml (POS, merged from both client nodes).
		{"kv-lockstep-sync.jsonl", "kv", Linearizable, 0, 0},
		{"kv-lockstep-async.jsonl", "kv", Violation, 0, 0},
	} {
		t.Run(tc.file, func(t *testing.T) {
			ops, err := ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			res := check(t, tc.model, ops)
			if res.Verdict != tc.want {
				t.Fatalf("verdict %s, want %s", res.Verdict, tc.want)
			}
			if res.Unknown != tc.unknown || res.Dropped != tc.dropped || res.Checked+res.Dropped != len(ops) {
				t.Errorf("checked %d, unknown %d, dropped %d of %d; want unknown %d, dropped %d",
					res.Checked, res.Unknown, res.Dropped, len(ops), tc.unknown, tc.dropped)
			}
		})
	}
}

// Small histories pin down the semantics docs/history.md promises.
func TestSemantics(t *testing.T) {
	for _, tc := range []struct {
		name  string
		model string
		ops   string
		want  Verdict
	}{
		{"return equal to call is concurrent", "register", `
{"process":0,"op":"write","input":"1","call":0,"return":10}
{"process":1,"op":"read","output":null,"call":10,"return":20}`, Linearizable},
		{"return before call is ordered", "register", `
{"process":0,"op":"write","input":"1","call":0,"return":10}
{"process":1,"op":"read","output":null,"call":11,"return":20}`, Violation},
		{"one instant, any order", "register", `
{"process":0,"op":"read","output":"1","call":5,"return":5}
{"process":1,"op":"write","input":"1","call":5,"return":5}
{"process":2,"op":"read","output":null,"call":5,"return":5}`, Linearizable},
		// Virtual time does not move while a client runs, so one
		// process's ops may share an instant; their program order is then
		// not used (never a false violation).
		{"one process, one instant", "register", `
{"process":0,"op":"write","input":"1","call":5,"return":5}
{"process":0,"op":"read","output":null,"call":5,"return":5}`, Linearizable},
		{"unknown write may take effect", "register", `
{"process":0,"op":"write","input":"3","call":0}
{"process":1,"op":"read","output":"3","call":100,"return":110}`, Linearizable},
		{"unknown write may never take effect", "register", `
{"process":0,"op":"write","input":"3","call":0,"status":"unknown"}
{"process":1,"op":"read","output":null,"call":100,"return":110}
{"process":1,"op":"read","output":null,"call":200,"return":210}`, Linearizable},
		{"unknown write cannot act before its call", "register", `
{"process":1,"op":"read","output":"3","call":0,"return":10}
{"process":0,"op":"write","input":"3","call":20}`, Violation},
		{"unknown write cannot flicker", "register", `
{"process":0,"op":"write","input":"3","call":0}
{"process":1,"op":"read","output":"3","call":10,"return":20}
{"process":1,"op":"read","output":null,"call":30,"return":40}`, Violation},
		{"failed write never takes effect", "register", `
{"process":0,"op":"write","input":"4","status":"fail","call":0,"return":5}
{"process":1,"op":"read","output":"4","call":10,"return":20}`, Violation},
		{"unknown cas applies only if it matches", "register", `
{"process":0,"op":"write","input":"1","call":0,"return":1}
{"process":1,"op":"cas","input":["2","3"],"call":2}
{"process":2,"op":"read","output":"3","call":5,"return":6}`, Violation},
		{"cas that failed saw another value", "register", `
{"process":0,"op":"write","input":"1","call":0,"return":1}
{"process":1,"op":"cas","input":["1","3"],"output":false,"call":2,"return":3}`, Violation},
		{"numbers are their decimal text", "register", `
{"process":0,"op":"write","input":7,"call":0,"return":1}
{"process":1,"op":"read","output":"7","call":2,"return":3}`, Linearizable},
		{"keys are independent", "kv", `
{"process":0,"op":"put","key":"a","input":"1","call":0,"return":1}
{"process":1,"op":"get","key":"b","output":null,"call":2,"return":3}
{"process":1,"op":"get","key":"a","output":"1","call":4,"return":5}`, Linearizable},
		{"append of unknown outcome", "kv", `
{"process":0,"op":"append","key":"a","input":"x","call":0}
{"process":1,"op":"append","key":"a","input":"y","call":1,"return":2}
{"process":2,"op":"get","key":"a","output":"yx","call":3,"return":4}`, Linearizable},
		{"appends are ordered", "kv", `
{"process":0,"op":"append","key":"a","input":"x","call":0,"return":1}
{"process":1,"op":"append","key":"a","input":"y","call":2,"return":3}
{"process":2,"op":"get","key":"a","output":"yx","call":4,"return":5}`, Violation},
		{"set read of a missing element", "set", `
{"process":0,"op":"add","input":"a","call":0,"return":1}
{"process":1,"op":"read","output":[],"call":2,"return":3}`, Violation},
		{"empty history", "set", ``, Linearizable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if res := check(t, tc.model, parse(t, tc.ops)); res.Verdict != tc.want {
				t.Fatalf("verdict %s, want %s", res.Verdict, tc.want)
			}
		})
	}
}

func TestReadErrors(t *testing.T) {
	for _, tc := range []struct {
		line, want string
	}{
		{`{"process":0,"op":"read","call":1,"return":2`, "unexpected EOF"},
		{`{"process":0,"op":"read","call":1,"return":2,"extra":1}`, `unknown field "extra"`},
		{`{"process":0,"call":1,"return":2}`, `missing "op"`},
		{`{"process":-1,"op":"read","call":1,"return":2}`, "process must not be negative"},
		{`{"process":0,"op":"read","call":5,"return":2}`, "return time 2 is before call time 5"},
		{`{"process":0,"op":"read","status":"ok","call":5}`, `status ok needs a "return" time`},
		{`{"process":0,"op":"read","status":"lost","call":5}`, `unknown status "lost"`},
		{`{"process":0,"op":"read","output":"1","call":5}`, "unknown outcome has no \"output\""},
	} {
		t.Run(tc.want, func(t *testing.T) {
			_, err := Read(strings.NewReader("\n"+tc.line), "inline")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "inline:2: ") {
				t.Errorf("error %v does not name the line", err)
			}
		})
	}
}

func TestModelErrors(t *testing.T) {
	for _, tc := range []struct {
		model, line, want string
	}{
		{"register", `{"process":0,"op":"get","call":1,"return":2}`, `unknown register operation "get"`},
		{"register", `{"process":0,"op":"read","key":"k","call":1,"return":2}`, "has no key"},
		{"kv", `{"process":0,"op":"cas","key":"k","input":"x","output":true,"call":1,"return":2}`, "cas input must be [old, new]"},
		{"kv", `{"process":0,"op":"put","key":"k","call":1,"return":2}`, "put needs a value"},
		{"kv", `{"process":0,"op":"get","key":"k","output":{"a":1},"call":1,"return":2}`, "must be a string, a number or null"},
		{"kv", `{"process":0,"op":"cas","key":"k","input":["a","b"],"output":"yes","call":1,"return":2}`, "cas output must be true or false"},
		{"set", `{"process":0,"op":"read","output":"a","call":1,"return":2}`, "must be a list of values"},
		{"set", `{"process":0,"op":"remove","input":"a","call":1,"return":2}`, `unknown set operation "remove"`},
	} {
		t.Run(tc.want, func(t *testing.T) {
			_, err := Check(context.Background(), mustModel(t, tc.model), parse(t, tc.line), 0)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "inline:1: ") {
				t.Fatalf("error %v, want inline:1: ...%q", err, tc.want)
			}
		})
	}
	if _, err := NewModel("queue"); err == nil || !strings.Contains(err.Error(), "register, kv, set") {
		t.Errorf("NewModel(queue): %v", err)
	}
}

func TestMerge(t *testing.T) {
	a := parse(t, `
{"process":1,"op":"write","input":"1","call":10,"return":20}
{"process":0,"op":"read","output":null,"call":0,"return":5}`)
	b := parse(t, `
{"process":0,"op":"read","output":"1","call":25,"return":30}
{"process":0,"op":"read","output":"1","call":7,"return":30}`)
	ops, procs := Merge([]Client{{Name: "c1", Ops: a}, {Name: "c2", Ops: b}})
	wantProcs := []Process{{"c1", 0}, {"c1", 1}, {"c2", 0}}
	if fmt.Sprint(procs) != fmt.Sprint(wantProcs) {
		t.Errorf("processes %v, want %v", procs, wantProcs)
	}
	var got []string
	for _, op := range ops {
		got = append(got, fmt.Sprintf("%d@%d", op.Process, op.Call))
	}
	if want := "0@0 2@7 1@10 2@25"; strings.Join(got, " ") != want {
		t.Errorf("merged %s, want %s", strings.Join(got, " "), want)
	}
	// c2's read at 7 overlaps c1's write, so this merge is linearizable;
	// it would not be if processes of the same number were one client.
	if res := check(t, "register", ops); res.Verdict != Linearizable {
		t.Errorf("verdict %s", res.Verdict)
	}
}

func TestWriteRoundTrip(t *testing.T) {
	ops, err := ReadFile(filepath.Join("testdata", "kv-ok.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, ops); err != nil {
		t.Fatal(err)
	}
	back, err := Read(&buf, "buf")
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != len(ops) {
		t.Fatalf("%d ops back, want %d", len(back), len(ops))
	}
	for i := range ops {
		if ops[i].Outcome() != back[i].Outcome() || ops[i].Call != back[i].Call || string(ops[i].Output) != string(back[i].Output) {
			t.Errorf("op %d: %+v, read back %+v", i, ops[i], back[i])
		}
	}
}

func TestVisualization(t *testing.T) {
	ops, err := ReadFile(filepath.Join("testdata", "kv-bad.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	res := check(t, "kv", ops)
	if res.Verdict != Violation {
		t.Fatalf("verdict %s", res.Verdict)
	}
	path := filepath.Join(t.TempDir(), "v.html")
	if err := res.VisualizeFile(path); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The page embeds the history as JSON, which escapes quotes and '>'.
	for _, want := range []string{"<html", `cas(\"y\", \"1\" -\u003e \"2\") -\u003e true`, "kv-bad.jsonl:5"} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("visualization lacks %q", want)
		}
	}
}

// hardHistory is a violation porcupine must search exhaustively: n
// concurrent writes of distinct values, then a read of a value nobody
// wrote.
func hardHistory(n int) []Op {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"process":%d,"op":"write","input":"%d","call":0,"return":100}`+"\n", i, i)
		fmt.Fprintf(&b, `{"process":%d,"op":"read","output":"%d","call":0,"return":100}`+"\n", n+i, (i+1)%n)
	}
	fmt.Fprintf(&b, `{"process":%d,"op":"read","output":"none","call":200,"return":300}`+"\n", 2*n)
	ops, err := Read(strings.NewReader(b.String()), "hard")
	if err != nil {
		panic(err)
	}
	return ops
}

func TestTimeout(t *testing.T) {
	start := time.Now()
	res, err := Check(context.Background(), mustModel(t, "register"), hardHistory(14), 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != TimedOut {
		t.Fatalf("verdict %s after %v, want %s", res.Verdict, res.Elapsed, TimedOut)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("a 50ms check took %v", el)
	}
}

func TestContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := Check(ctx, mustModel(t, "register"), hardHistory(14), 0)
	// The deadline bounds porcupine's own timeout: either it times out or
	// the context ends first.
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
	if err == nil && res.Verdict != TimedOut {
		t.Fatalf("verdict %s, want %s", res.Verdict, TimedOut)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("a check bounded by a 50ms context took %v", el)
	}

	cancelled, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if _, err := Check(cancelled, mustModel(t, "register"), hardHistory(14), 0); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
}
