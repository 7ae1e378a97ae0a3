package engine

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/spec"
)

// historyTrial lays out a trial directory whose nodes wrote the given
// histories (node name to JSON lines; a server writes none).
func historyTrial(t *testing.T, files map[string]string) (*spec.Spec, string) {
	t.Helper()
	dir := t.TempDir()
	sp := &spec.Spec{Nodes: []spec.Node{{Name: "server"}, {Name: "c1"}, {Name: "c2"}}}
	sp.Checker.Timeout = 10 * time.Second
	for _, n := range sp.Nodes {
		if err := os.MkdirAll(filepath.Join(dir, n.Name), 0o755); err != nil {
			t.Fatal(err)
		}
		if h, ok := files[n.Name]; ok {
			if err := os.WriteFile(filepath.Join(dir, n.Name, spec.DefaultHistoryFile), []byte(h), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return sp, dir
}

func TestCheckHistories(t *testing.T) {
	hc := &spec.HistoryCheck{Model: "kv", History: spec.DefaultHistoryFile}
	for _, tc := range []struct {
		name       string
		files      map[string]string
		wantKind   OutcomeKind
		wantFailed bool
		wantDetail string
		wantHTML   bool
	}{
		{
			// Each client numbers its processes from 0: merged, they are
			// distinct processes, and c2's get overlaps c1's put.
			name: "linearizable across clients",
			files: map[string]string{
				"c1": `{"process":0,"op":"put","key":"k","input":"1","call":10,"return":20}` + "\n",
				"c2": `{"process":0,"op":"get","key":"k","output":"1","call":15,"return":15}` + "\n" +
					`{"process":0,"op":"get","key":"k","output":null,"call":0,"return":10}` + "\n",
			},
			wantKind: Pass,
		},
		{
			name: "stale read across clients",
			files: map[string]string{
				"c1": `{"process":0,"op":"put","key":"k","input":"1","call":10,"return":20}` + "\n" +
					`{"process":1,"op":"put","key":"j","input":"2","call":10}` + "\n",
				"c2": `{"process":0,"op":"get","key":"k","output":null,"call":21,"return":30}` + "\n",
			},
			wantKind: NotLinearizable, wantFailed: true, wantHTML: true,
			wantDetail: "history of 3 ops (3 processes of 2 clients, 1 of unknown outcome) is not linearizable under model kv; see ",
		},
		{
			name:     "no history",
			files:    map[string]string{},
			wantKind: CheckerFailed, wantFailed: true,
			wantDetail: "no node wrote a history (history.jsonl in its {{tmp}})",
		},
		{
			name:     "malformed line",
			files:    map[string]string{"c1": "\n{\"process\":0}\n"},
			wantKind: CheckerFailed, wantFailed: true,
			wantDetail: `malformed history: c1/history.jsonl:2: missing "op"`,
		},
		{
			name:     "operation the model does not know",
			files:    map[string]string{"c2": `{"process":0,"op":"read","call":1,"return":2}` + "\n"},
			wantKind: CheckerFailed, wantFailed: true,
			wantDetail: `malformed history: c2/history.jsonl:1: unknown kv operation "read"`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp, dir := historyTrial(t, tc.files)
			o, failed, err := checkHistories(context.Background(), sp, hc, trialFilesOf(t, dir))
			if err != nil {
				t.Fatal(err)
			}
			if o.Kind != tc.wantKind || failed != tc.wantFailed || !strings.HasPrefix(o.Detail, tc.wantDetail) {
				t.Fatalf("got %s %v %q, want %s %v %q", o.Kind, failed, o.Detail, tc.wantKind, tc.wantFailed, tc.wantDetail)
			}
			html := filepath.Join(dir, HistoryVisualization)
			_, statErr := os.Stat(html)
			if tc.wantHTML != (statErr == nil) {
				t.Errorf("visualization written: %v, want %v", statErr == nil, tc.wantHTML)
			}
			if tc.wantHTML && !strings.HasSuffix(o.Detail, html) {
				t.Errorf("detail %q does not end with the visualization's path", o.Detail)
			}
			if !o.Kind.IsFailure() && failed {
				t.Errorf("failed with a non-failure kind %s", o.Kind)
			}
		})
	}
}

// A check that runs out of time passes the trial, says so, and draws what
// it found.
func TestCheckHistoriesTimeout(t *testing.T) {
	var b strings.Builder
	const n = 14
	for i := 0; i < n; i++ {
		b.WriteString(`{"process":` + strconv.Itoa(i) + `,"op":"put","key":"k","input":"` + strconv.Itoa(i) + `","call":0,"return":100}` + "\n")
		b.WriteString(`{"process":` + strconv.Itoa(n+i) + `,"op":"get","key":"k","output":"` + strconv.Itoa((i+1)%n) + `","call":0,"return":100}` + "\n")
	}
	b.WriteString(`{"process":99,"op":"get","key":"k","output":"none","call":200,"return":300}` + "\n")
	sp, dir := historyTrial(t, map[string]string{"c1": b.String()})
	sp.Checker.Timeout = 50 * time.Millisecond
	o, failed, err := checkHistories(context.Background(), sp, &spec.HistoryCheck{Model: "kv", History: spec.DefaultHistoryFile}, trialFilesOf(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if failed || o.Kind != Pass || !strings.Contains(o.Detail, "timed out after 50ms") {
		t.Fatalf("got %s %v %q, want a pass that says it timed out", o.Kind, failed, o.Detail)
	}
	if _, err := os.Stat(filepath.Join(dir, HistoryVisualization)); err != nil {
		t.Error(err)
	}
}

func trialFilesOf(t *testing.T, dir string) *trialFiles {
	t.Helper()
	tf, err := openTrialFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tf.close)
	return tf
}

// TestHistoryLinkNotRead: a client's history that is a link to a host
// file is not read (its lines would reach the outcome): the trial fails
// as the client's, naming what the file is, and the campaign goes on.
func TestHistoryLinkNotRead(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("root:secret-hash\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sp, dir := historyTrial(t, map[string]string{})
	if err := os.Symlink(secret, filepath.Join(dir, "c1", spec.DefaultHistoryFile)); err != nil {
		t.Fatal(err)
	}
	o, failed, err := checkHistories(context.Background(), sp, &spec.HistoryCheck{Model: "kv", History: spec.DefaultHistoryFile}, trialFilesOf(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if o.Kind != CheckerFailed || !failed || o.Node != "c1" || o.Detail != "history c1/history.jsonl is a symbolic link, which lockstep does not read" || strings.Contains(o.Detail, "secret") {
		t.Fatalf("got %s %v %q", o.Kind, failed, o.Detail)
	}
}

// TestHistoryInTmp: the clients' histories, written in their {{tmp}}
// (a mount of its own below the trial's directory), are read and checked:
// kv-sync's trials pass, none as a history lockstep refused to read.
func TestHistoryInTmp(t *testing.T) {
	requireTrials(t)
	sp, err := spec.Load(repoPath("testdata", "workload", "kv-sync.yaml"))
	if err != nil {
		t.Skipf("the workload: %v (make testdata)", err)
	}
	sum, err := Run(context.Background(), sp, RunOptions{Trials: 2, OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range sum.Results {
		if r.Outcome.Kind != Pass {
			t.Fatalf("trial %d: %v", r.Index, r.Outcome)
		}
	}
}
