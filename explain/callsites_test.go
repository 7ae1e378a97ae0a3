package explain

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/engine"
	"github.com/lockstep-dev/lockstep/internal/testutil"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/spec"
)

// tracedRecv runs the program server (a call-site test program of
// testdata/progs) as a node that C's msg_client sends two request lines,
// traces one trial, and returns the spec and the server's first receive.
// The server's role is client's: the trial waits for it to read to EOF.
func tracedRecv(t *testing.T, server []string) (*spec.Spec, sched.Record) {
	t.Helper()
	dir := t.TempDir()
	client := testutil.RepoPath("testdata", "bin", "c", "msg_client")
	testutil.RequireBinary(t, client)
	y := fmt.Sprintf(`name: callsites
nodes:
  - name: server
    role: client
    command: %s
  - name: client
    role: client
    command: [%q, "server", "7000", "ACQUIRE k\nRELEASE k\n"]
trials: 1
limits:
  virtual_time: 60s
  real_time: 120s
`, quoteList(server), client)
	path := filepath.Join(dir, "callsites.yaml")
	if err := os.WriteFile(path, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	sp, err := spec.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if _, err := engine.Run(context.Background(), sp, engine.RunOptions{Trials: 1, Strategy: "pos", OutDir: out, TraceAll: true}); err != nil {
		t.Fatal(err)
	}
	traces, _ := filepath.Glob(filepath.Join(out, "trials", "*", "trace.jsonl"))
	if len(traces) != 1 {
		t.Fatalf("traces %v, want one", traces)
	}
	tr, err := engine.LoadTrace(traces[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range tr.Records {
		if r.Op.Node == "server" && r.Op.Kind == sched.Recv {
			return sp, r
		}
	}
	t.Fatalf("the server received nothing in %d ops", len(tr.Records))
	return nil, sched.Record{}
}

func quoteList(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = fmt.Sprintf("%q", a)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// TestCallSitesTraced: in a traced trial, a server's receive is named
// where a developer reads it, in each language: the C function (and its
// line when built with -g, else one hint), the Rust function of the
// program's own crate past std's Lines iterator, the JVM thread's name
// and the program's Java method (read from the JVM) past the JDK's
// native method the site is in.
func TestCallSitesTraced(t *testing.T) {
	testutil.RequireTrials(t)
	bin := func(parts ...string) string {
		return testutil.RepoPath(append([]string{"testdata", "bin"}, parts...)...)
	}
	for _, tc := range []struct {
		name, compiler string
		argv           []string
		thread         string // the receiving thread's name
		where          []string
		hint           bool
		caller         bool // the site is a library's, its Caller the program's
	}{
		{name: "c with -g", compiler: "gcc", argv: []string{bin("c", "callsite_lockd"), "7000"},
			thread: "lockd-worker", where: []string{"callsite_lockd.c:", "(read_request)"}},
		{name: "c without -g", compiler: "gcc", argv: []string{bin("c", "callsite_lockd_nog"), "7000"},
			thread: "lockd-worker", where: []string{"read_request (callsite_lockd_nog+0x"}, hint: true},
		{name: "rust", compiler: "rustc", argv: []string{bin("rust", "callsite_lines"), "7000"},
			where: []string{"callsite_lines.rs:", "(callsite_lines::serve_commands)"}, caller: true},
		{name: "java", compiler: "javac", argv: []string{bin("java", "CallSiteWorker"), "7000"},
			thread: "lock-worker", where: []string{"CallSiteWorker.java:28 (CallSiteWorker.serve)"}, caller: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := os.Stat(tc.argv[0]); err != nil {
				if _, lerr := exec.LookPath(tc.compiler); lerr != nil {
					t.Skipf("%s not found: %s is not built", tc.compiler, tc.argv[0])
				}
				t.Skipf("%s not built (make testdata)", tc.argv[0])
			}
			sp, r := tracedRecv(t, tc.argv)
			syms := newSymbolizer(sp)
			ev := event(&r, syms)
			before := syms.lookupText(r.Op.Site)
			t.Logf("thread %q site %s caller %q: was %s, now %s; hints %q", r.Op.Thread, r.Op.Site, r.Op.Caller, before, ev.Where(), syms.hints)
			for _, w := range tc.where {
				if !strings.Contains(ev.Where(), w) {
					t.Errorf("where %q does not say %q", ev.Where(), w)
				}
			}
			if tc.thread != "" && r.Op.Thread != tc.thread {
				t.Errorf("thread %q, want %q", r.Op.Thread, tc.thread)
			}
			if (r.Op.Caller != "") != tc.caller {
				t.Errorf("caller %q (site %s), want one: %v", r.Op.Caller, r.Op.Site, tc.caller)
			}
			if (len(syms.hints) == 1) != tc.hint {
				t.Errorf("hints %q, want one: %v", syms.hints, tc.hint)
			}
		})
	}
}
