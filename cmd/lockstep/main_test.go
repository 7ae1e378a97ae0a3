package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/internal/testutil"
	"github.com/lockstep-dev/lockstep/report"
	"github.com/lockstep-dev/lockstep/tracer"
)

func TestMain(m *testing.M) {
	// The in-process runs start zygotes by re-executing this binary.
	tracer.MaybeRunZygote()
	testutil.LeakCheckMain(m)
}

// shellSpec is a spec whose programs every host has: the tests that read
// a spec and run no trial use it, so that they need no `make testdata`.
const shellSpec = "../../testdata/specs/shell.yaml"

// runCLI runs the app in-process and returns its exit status and output.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	app := newApp()
	var out, errb bytes.Buffer
	app.Writer, app.ErrWriter = &out, &errb
	err := runApp(context.Background(), app, append([]string{"lockstep"}, args...))
	code := 0
	if err != nil {
		code = 2
		if ec, ok := err.(exitCoder); ok {
			code = ec.ExitCode()
		}
		if msg := err.Error(); msg != "" {
			errb.WriteString("lockstep: " + msg + "\n")
		}
	}
	return code, out.String(), errb.String()
}

// TestBadInputExitsTwo: bad specs, traces and usage exit with status 2
// and a single line naming the problem.
func TestBadInputExitsTwo(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.jsonl")
	os.WriteFile(junk, []byte("{not json\n"), 0o644)
	// A well-formed trace naming a fault kind this lockstep does not
	// define (one from a newer lockstep, or a typo).
	unknown := filepath.Join(dir, "unknown-kind.jsonl")
	os.WriteFile(unknown, []byte(`{"header":{"version":"0.1.0","spec":"x.yaml","trial":0,"seed":1,"strategy":"pos"}}
{"record":{"step":1,"vtime":0,"op":{"id":4503599627370497,"node":"n1","lpid":"fault","kind":"meteor","object":"node:n1"}}}
`), 0o644)
	// A trace whose kind-aimed hold an older lockstep wrote without its
	// shape's bytes that are not UTF-8: it cannot replay.
	lossy := filepath.Join(dir, "lossy-shape.jsonl")
	os.WriteFile(lossy, []byte(`{"header":{"version":"0.1.0","spec":"x.yaml","trial":0,"seed":1,"strategy":"branch+pos"}}
{"record":{"step":5,"vtime":0,"op":{"id":72058693549555712,"node":"n2","lpid":"fault","kind":"hold","object":"link:n2>n1","shape":"\ufffd{Addr:s Granted:b …","delay":975000000}}}
{"outcome":{"kind":"livelock"}}
`), 0o644)
	// A trace whose trial was killed before its outcome line.
	cut := filepath.Join(dir, "cut-short.jsonl")
	os.WriteFile(cut, []byte(`{"header":{"version":"0.1.0","spec":"x.yaml","trial":0,"seed":1,"strategy":"pos"}}
{"record":{"step":1,"vtime":0,"op":{"id":1,"node":"n1","lpid":"n1/0/t0","kind":"send"}}}
`), 0o644)
	// Directories given for a trace: a campaign's output, and one with
	// no trace at all.
	campaign, empty := filepath.Join(dir, "campaign"), filepath.Join(dir, "empty")
	os.MkdirAll(filepath.Join(campaign, "trials", "00000"), 0o755)
	os.Mkdir(empty, 0o755)
	bad, _ := filepath.Glob("../../testdata/specs/bad/*.yaml")
	if len(bad) == 0 {
		t.Fatal("no bad specs found")
	}
	cases := [][]string{
		{"run"},
		{"run", "/no/such/spec.yaml"},
		{"run", "--jobs", "0", bad[0]},
		{"run", "--strategy", "dfs", shellSpec},
		{"replay", "/no/such/trace.jsonl"},
		{"replay", junk},
		{"show", junk},
		{"show", "--slice", junk},
		{"explain"},
		{"explain", "/no/such/trace.jsonl"},
		{"explain", junk},
		{"replay", unknown},
		{"show", unknown},
		{"kinds"},
		{"kinds", "/no/such/trace.jsonl"},
		{"kinds", junk},
		{"kinds", unknown},
		{"kinds", dir, junk},
		{"explain", unknown},
		{"replay", lossy},
		{"explain", lossy},
		{"run", "--no-such-flag", "x.yaml"},
		{"replay", cut},
		{"explain", cut},
		{"show", campaign},
		{"replay", campaign},
		{"explain", empty},
		{"kinds", empty},
	}
	// What the one line must say, by the command's last argument.
	says := map[string]string{
		unknown:  `unknown fault kind "meteor"`,
		lossy:    "cannot replay",
		cut:      "no outcome line: it was cut short",
		campaign: "is a campaign's output directory: name one of its trials",
		empty:    "holds no trace.jsonl",
	}
	for _, f := range bad {
		cases = append(cases, []string{"run", f})
	}
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, _, stderr := runCLI(t, args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2 (stderr %q)", code, stderr)
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if stderr == "" || len(lines) != 1 || !strings.HasPrefix(lines[0], "lockstep: ") {
				t.Fatalf("want one error line, got %q", stderr)
			}
			if last := args[len(args)-1]; says[last] != "" && (!strings.Contains(stderr, last) || !strings.Contains(stderr, says[last])) {
				t.Fatalf("want %s named and %q said, got %q", last, says[last], stderr)
			}
			if args[len(args)-1] == lossy && (!strings.Contains(stderr, lossy+": step 5: the shape") || !strings.Contains(stderr, "cannot replay")) {
				t.Fatalf("want the lossy hold's step named, got %q", stderr)
			}
		})
	}
}

// TestInterspersed: each command's flags may follow its arguments; values
// go with their flags and "--" ends the flags.
func TestInterspersed(t *testing.T) {
	app := newApp()
	for _, tc := range []struct {
		in, want string
	}{
		{"run spec.yaml --trials 5", "run --trials 5 -- spec.yaml"},
		{"run --trials 5 spec.yaml", "run --trials 5 -- spec.yaml"},
		{"run -n=5 spec.yaml -q --seed 3 -o out", "run -n=5 -q --seed 3 -o out -- spec.yaml"},
		{"run spec.yaml --stop-on-first --jobs 2", "run --stop-on-first --jobs 2 -- spec.yaml"},
		{"run -- -odd.yaml --trials", "run -- -odd.yaml --trials"},
		{"replay t.jsonl --out o", "replay --out o -- t.jsonl"},
		{"show t.jsonl", "show -- t.jsonl"},
		{"bench a.yaml b.yaml --quick --strategies pos,pct -j 2", "bench --quick --strategies pos,pct -j 2 -- a.yaml b.yaml"},
		{"bench --from-csv x.csv y.csv -o dir", "bench --from-csv -o dir -- x.csv y.csv"},
		{"run spec.yaml --trials", "run --trials"},
		{"run spec.yaml -q --json", "run -q --json"},
		{"run spec.yaml -q --log-level", "--log-level"},
		{"--version", "--version"},
		{"--log-level debug run spec.yaml", "--log-level debug run -- spec.yaml"},
		{"-v run spec.yaml -n 2", "-v run -n 2 -- spec.yaml"},
		{"run spec.yaml -v --trials 5", "-v run --trials 5 -- spec.yaml"},
		{"explain t.jsonl -v --budget 1m", "-v explain --budget 1m -- t.jsonl"},
		{"replay --log-level info t.jsonl -o o", "--log-level info replay -o o -- t.jsonl"},
		{"--log-level=warn show t.jsonl --log-level=error", "--log-level=warn --log-level=error show -- t.jsonl"},
		{"nosuch a --b", "nosuch a --b"},
		{"clean --all", "clean --all"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got := interspersed(app, append([]string{"lockstep"}, strings.Fields(tc.in)...))
			if want := append([]string{"lockstep"}, strings.Fields(tc.want)...); !slices.Equal(got, want) {
				t.Fatalf("got %q, want %q", got, want)
			}
		})
	}
}

// TestFlagsAfterArguments: a flag after SPEC or TRACE is read (its effect
// shows), not taken for a second argument.
func TestFlagsAfterArguments(t *testing.T) {
	demo := shellSpec
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", demo, "--jobs", "0"}, "--jobs at least 1"},
		{[]string{"run", demo, "--trials", "-1"}, "--trials must be between 0"},
		{[]string{"run", demo, "--keep-tmp", "--drop-tmp"}, "--keep-tmp and --drop-tmp ask for opposite things"},
		{[]string{"run", demo, "--strategy", "dfs"}, `unknown strategy "dfs"`},
		{[]string{"run", demo, "--json"}, "flag needs an argument: -json"},
		{[]string{"run", demo, "-o"}, "flag needs an argument: -o"},
		{[]string{"run", demo, "--log-level"}, "flag needs an argument: -log-level"},
		{[]string{"replay", "/no/such/trace.jsonl", "--out", "x"}, "/no/such/trace.jsonl"},
		{[]string{"show", "/no/such/trace.jsonl", "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"bench", "/no/such/spec.yaml", "--quick"}, "/no/such/spec.yaml: no such file or directory"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr := runCLI(t, tc.args...)
			if code != 2 || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "want exactly one") {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, stderr, tc.want)
			}
		})
	}
}

// TestBadSpecsCreateNothing: a malformed spec fails with exactly its
// corpus message and exit 2, before any output directory or network
// exists.
func TestBadSpecsCreateNothing(t *testing.T) {
	corpus, err := filepath.Abs("../../testdata/specs/bad")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir()) // where the default lockstep-out/NAME would go
	before := testutil.TakeSnapshot()
	for _, name := range []string{"subnet-loopback", "pct-depth-huge", "trials-huge", "env-nul", "program-no-shebang", "workdir-missing", "scheme-stack-17", "second-document", "time-max-delay-huge"} {
		t.Run(name, func(t *testing.T) {
			spec := filepath.Join(corpus, name+".yaml")
			want, err := os.ReadFile(filepath.Join(corpus, name+".err"))
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "out")
			code, stdout, stderr := runCLI(t, "run", spec, "--trials", "3", "-q")
			code2, _, _ := runCLI(t, "run", "-o", out, spec)
			got := strings.ReplaceAll(strings.Replace(stderr, spec, name+".yaml", 1), corpus, "{{dir}}")
			if code != 2 || code2 != 2 || stdout != "" || got != "lockstep: "+string(want) {
				t.Fatalf("exit %d/%d, stdout %q, stderr\n  got  %q\n  want %q", code, code2, stdout, got, "lockstep: "+string(want))
			}
			for _, dir := range []string{out, "lockstep-out"} {
				if _, err := os.Stat(dir); err == nil {
					t.Errorf("%s was created", dir)
				}
			}
		})
	}
	if leaks := before.Leaks(); len(leaks) > 0 {
		t.Errorf("left behind: %v", leaks)
	}
}

// TestRelativeOut: with a relative --out, the default lockstep-out/NAME or
// a relative trace to replay, {{tmp}} is still an absolute path, so a node
// (which runs in its own directory) can write there.
func TestRelativeOut(t *testing.T) {
	requireTrials(t)
	dir := t.TempDir()
	t.Chdir(dir)
	// The client writes through {{tmp}} from elsewhere, then fails on
	// purpose so that there is a trace to replay.
	spec := `name: rel
nodes:
  - name: writer
    role: client
    command: ["/bin/sh", "-c", "cd / && echo hello > {{tmp}}/x && exit 3"]
`
	if err := os.WriteFile("spec.yaml", []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"run", "spec.yaml", "-q", "--trials", "2", "--out", "rel/out"},
		{"run", "spec.yaml", "-q", "--trials", "1"}, // default lockstep-out/rel
		{"replay", "rel/out/trials/00001/trace.jsonl"},
	} {
		code, stdout, stderr := runCLI(t, args...)
		if code != 1 || !strings.Contains(stdout, "exited with code 3") {
			t.Fatalf("%q: exit %d, want 1 (a failure)\n%s%s", args, code, stdout, stderr)
		}
	}
	for _, p := range []string{"rel/out/trials/00000/writer/x", "rel/out/trials/00001/writer/x", "lockstep-out/rel/trials/00000/writer/x",
		"rel/out/trials/00001/replay/trials/00001/writer/x"} {
		if b, err := os.ReadFile(filepath.Join(dir, p)); err != nil || string(b) != "hello\n" {
			t.Errorf("%s: %q, %v", p, b, err)
		}
	}
}

func requireTrials(t *testing.T) {
	t.Helper()
	testutil.RequireTrials(t)
}

// buildLockstep builds the command into a temporary directory.
func buildLockstep(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "lockstep")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("building lockstep: %v\n%s", err, out)
	}
	return bin
}

// TestInterrupt: SIGINT or SIGTERM during a campaign stops it cleanly: the
// summary of the trials done is printed, with the failures' traces, the
// running trial's nodes and network are gone, and the exit status is 1
// when failures were found, else 128+signal.
func TestInterrupt(t *testing.T) {
	requireTrials(t)
	bin := buildLockstep(t)
	dir := t.TempDir()
	spec := func(name, client string) string {
		p := filepath.Join(dir, name+".yaml")
		s := "name: " + name + `
nodes:
  - name: server
    command: ["/bin/sh", "-c", "exec sleep 1000"]
  - name: client
    role: client
    command: ["/bin/sh", "-c", "` + client + `"]
trials: 1000000
`
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name   string
		client string
		sig    syscall.Signal
		code   int
		want   []string
	}{
		{"failing", "exit 3", syscall.SIGINT, 1, []string{"failures: ", "first failure: trial 0: client-failed", "failing traces:", "trace.jsonl"}},
		{"passing", "true", syscall.SIGINT, 130, []string{"failures: 0 "}},
		{"terminated", "true", syscall.SIGTERM, 143, []string{"failures: 0 "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := testutil.TakeSnapshot()
			cmd := exec.Command(bin, "run", spec(tc.name, tc.client), "-q", "-o", filepath.Join(dir, tc.name))
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Let a few trials finish, then interrupt one under way.
			deadline := time.Now().Add(30 * time.Second)
			for {
				ents, _ := os.ReadDir(filepath.Join(dir, tc.name, "trials"))
				if len(ents) >= 4 || time.Now().After(deadline) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			cmd.Process.Signal(tc.sig)
			if !stopsWithin(cmd, 30*time.Second) {
				t.Fatalf("lockstep did not stop within 30s of %v\n%s%s", tc.sig, stdout.String(), stderr.String())
			}
			out := stdout.String()
			if code := cmd.ProcessState.ExitCode(); code != tc.code {
				t.Errorf("exit %d, want %d\n%s%s", code, tc.code, out, stderr.String())
			}
			if !strings.HasPrefix(out, "interrupted: the summary covers the ") {
				t.Errorf("no partial summary:\n%s%s", out, stderr.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("summary lacks %q:\n%s", w, out)
				}
			}
			if leaks := before.Leaks(); len(leaks) > 0 {
				t.Errorf("left behind: %v", leaks)
			}
		})
	}
}

// stopsWithin waits for a started command to end, and kills it (false)
// if it has not within d: a guard against a hang, not a measure.
func stopsWithin(cmd *exec.Cmd, d time.Duration) bool {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		cmd.Process.Kill()
		<-done
		return false
	}
}

// TestOutputGone: when the reader of lockstep's standard error goes (a
// pipe into `head`, a CI log's streamer) and lockstep writes there
// mid-campaign (a warning each trial here), it stops as on SIGTERM: the
// summary so far, exit status 141 (128+SIGPIPE), nothing left behind. By
// Go's default the write killed it at once, leaving the trial's network,
// cgroups and {{tmp}} mounts.
func TestOutputGone(t *testing.T) {
	requireTrials(t)
	bin := buildLockstep(t)
	dir := t.TempDir()
	sp := filepath.Join(dir, "warns.yaml")
	if err := os.WriteFile(sp, []byte(`name: warns
nodes:
  - name: server
    command: ["/bin/sh", "-c", "exec sleep 1000"]
  - name: client
    role: client
    command: ["/bin/sh", "-c", "head -c 2000000 /dev/zero"]
limits: {node: {output: 1MiB}}
trials: 1000000
`), 0o644); err != nil {
		t.Fatal(err)
	}
	before := testutil.TakeSnapshot()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // no reader: the first warning finds the pipe broken
	cmd := exec.Command(bin, "run", sp, "-q", "-o", filepath.Join(dir, "out"))
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if !stopsWithin(cmd, 60*time.Second) {
		t.Fatalf("lockstep did not stop within 60s of its standard error's end\n%s", stdout.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 141 || !strings.HasPrefix(stdout.String(), "interrupted: the summary covers the ") {
		t.Errorf("exit %d (%v), want 141 and the summary so far:\n%s", code, cmd.ProcessState, stdout.String())
	}
	if leaks := before.Leaks(); len(leaks) > 0 {
		t.Errorf("left behind: %v", leaks)
	}
}

// TestShow: `show` prints the listing report pins, and `show --html`
// writes the diagram instead.
func TestShow(t *testing.T) {
	trace := "../../report/testdata/locks-1.trace.jsonl"
	want, err := os.ReadFile("../../report/testdata/locks-1.show")
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "show", trace)
	if code != 0 || stdout != string(want) {
		t.Fatalf("exit %d, stderr %q, stdout\n%s", code, stderr, stdout)
	}
	// A trial's directory stands for the trace it holds.
	dir := t.TempDir()
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "trace.jsonl"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := runCLI(t, "show", dir); code != 0 || stdout != string(want) {
		t.Fatalf("show DIR: exit %d, stderr %q, stdout\n%s", code, stderr, stdout)
	}
	out := filepath.Join(t.TempDir(), "trace.html")
	code, stdout, stderr = runCLI(t, "show", trace, "--html", out)
	page, err := os.ReadFile(out)
	if code != 0 || err != nil || stdout != "wrote "+out+" (77 ops)\n" {
		t.Fatalf("exit %d, %v, stdout %q, stderr %q", code, err, stdout, stderr)
	}
	for _, w := range []string{"<!DOCTYPE html>", `<svg id="diagram"`, `<g id="outcome" class="fail" data-kind="deadlock">`} {
		if !bytes.Contains(page, []byte(w)) {
			t.Errorf("page lacks %q", w)
		}
	}
	if code, _, stderr := runCLI(t, "show", trace, "--html", "/no/such/dir/x.html"); code != 2 || !strings.Contains(stderr, "--html: open /no/such/dir/x.html") {
		t.Errorf("unwritable --html: exit %d, stderr %q", code, stderr)
	}
}

// TestBenchFromCSV: merged tables are written to --out and printed.
func TestBenchFromCSV(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.csv")
	b := filepath.Join(dir, "b.csv")
	os.WriteFile(a, []byte("bug,strategy,trials,failures,hit_ratio,first_failure,ms_per_trial\nlocks-1,pos,100,8,0.080000,11,400.0\nms-1,pos,100,0,0.000000,-1,200.0\n"), 0o644)
	os.WriteFile(b, []byte("bug,strategy,trials,failures,hit_ratio,first_failure,ms_per_trial\nms-1,pos,100,2,0.020000,40,210.0\n"), 0o644)
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runCLI(t, "bench", "--from-csv", a, b, "-o", out)
	if code != 0 || !strings.Contains(stdout, "| locks-1 | 0.0800 |\n| ms-1 | 0.0200 |\n| **geomean** | 0.0400 |\n") {
		t.Fatalf("exit %d, stderr %q, stdout\n%s", code, stderr, stdout)
	}
	md, err1 := os.ReadFile(filepath.Join(out, "table.md"))
	csv, err2 := os.ReadFile(filepath.Join(out, "table.csv"))
	if err1 != nil || err2 != nil || string(md) != stdout || !strings.Contains(string(csv), "ms-1,pos,100,2,0.020000,40,210.0\n") {
		t.Fatalf("table.md %q (%v), table.csv %q (%v)", md, err1, csv, err2)
	}
	if code, _, stderr := runCLI(t, "bench", "--from-csv", filepath.Join(dir, "missing.csv")); code != 2 || !strings.Contains(stderr, "missing.csv") {
		t.Errorf("missing CSV: exit %d, stderr %q", code, stderr)
	}
}

// TestRunReports: --junit and --json describe the campaign, read back; a
// spec that cannot be read still gets a JUnit error case.
func TestRunReports(t *testing.T) {
	dir := t.TempDir()
	junit, js := filepath.Join(dir, "r.xml"), filepath.Join(dir, "r.json")
	code, _, stderr := runCLI(t, "run", "/no/such/spec.yaml", "--junit", junit, "--json", js)
	x, err := os.ReadFile(junit)
	if code != 2 || err != nil || !bytes.Contains(x, []byte(`<error message="`)) || !bytes.Contains(x, []byte("/no/such/spec.yaml")) {
		t.Fatalf("bad spec: exit %d, stderr %q, junit %s (%v)", code, stderr, x, err)
	}

	requireTrials(t)
	spec := filepath.Join(dir, "spec.yaml")
	os.WriteFile(spec, []byte(`name: reports
nodes:
  - name: writer
    role: client
    command: ["/bin/sh", "-c", "exit 3"]
`), 0o644)
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runCLI(t, "run", spec, "-q", "--trials", "2", "-o", out, "--junit", junit, "--json", js)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, stdout, stderr)
	}
	var doc struct {
		Cases []struct {
			Name    string `xml:"name,attr"`
			Failure struct {
				Message string `xml:"message,attr"`
				Type    string `xml:"type,attr"`
			} `xml:"failure"`
		} `xml:"testsuite>testcase"`
	}
	x, err = os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(x, &doc); err != nil || len(doc.Cases) != 1 {
		t.Fatalf("junit %v:\n%s", err, x)
	}
	trace := filepath.Join(out, "trials", "00000", "trace.jsonl")
	if c := doc.Cases[0]; c.Name != "reports (pos)" || c.Failure.Type != "client-failed" || !strings.Contains(c.Failure.Message, "trace: "+trace) ||
		!strings.Contains(c.Failure.Message, "2 of 2 trials failed") {
		t.Errorf("test case %+v", c)
	}
	var sum report.JSONSummary
	j, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(j, &sum); err != nil {
		t.Fatalf("json %v:\n%s", err, j)
	}
	if sum.Spec != "reports" || sum.Trials != 2 || sum.Failures != 2 || sum.ByKind["client-failed"] != 2 || sum.First == nil ||
		sum.First.Trace != trace || sum.First.Kind != "client-failed" || sum.Duration <= 0 {
		t.Errorf("json summary %s", j)
	}
	// --verify is on by default: each failing trace was replayed and gave
	// its failure again.
	if sum.Verified != 2 || sum.Unreplayable != 0 || !strings.Contains(stdout, "replayed: 2 of 2 failing traces gave the same failure again") {
		t.Errorf("verified %d, unreplayable %d; stdout:\n%s", sum.Verified, sum.Unreplayable, stdout)
	}
}

// TestRunVerify: a failure whose trace does not give it again when
// replayed is reported as unreplayable, lockstep's problem (exit 2, in
// the summary and the JSON), not as a bug of the system; --verify=false
// reports it as the failure it was. The checker fails the first time it
// sees a trial and passes after, as a check that reads something lockstep
// does not control would.
func TestRunVerify(t *testing.T) {
	requireTrials(t)
	dir := t.TempDir()
	spec := filepath.Join(dir, "spec.yaml")
	seen := filepath.Join(dir, "seen")
	os.Mkdir(seen, 0o755)
	os.WriteFile(spec, []byte(`name: verify
nodes:
  - name: writer
    role: client
    command: ["/bin/sh", "-c", "exit 0"]
checker:
  command: ["/bin/sh", "-c", "f=`+seen+`/$(basename {{trialdir}}); [ -e $f ] && exit 0; touch $f; echo first look fails >&2; exit 1"]
`), 0o644)
	js := filepath.Join(dir, "r.json")
	code, stdout, stderr := runCLI(t, "run", spec, "-q", "--trials", "2", "-o", filepath.Join(dir, "out"), "--json", js)
	if code != 2 || !strings.Contains(stderr, "2 trial(s) failed but their traces did not replay") {
		t.Fatalf("exit %d, want 2\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{"failures: 0", "replayed: 0 of 2 failing traces", "unreplayable: 2 failing trial(s)",
		"trial 0: checker-failed (", "but its trace did not replay: outcome pass, trace has checker-failed"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the summary does not say %q:\n%s", want, stdout)
		}
	}
	var sum report.JSONSummary
	if j, err := os.ReadFile(js); err != nil || json.Unmarshal(j, &sum) != nil || sum.Unreplayable != 2 || sum.Failures != 0 || len(sum.Unreplayed) != 2 || sum.Errors != 2 {
		t.Errorf("json summary %+v (%v)", sum, err)
	}

	os.RemoveAll(seen)
	os.Mkdir(seen, 0o755)
	code, stdout, stderr = runCLI(t, "run", spec, "-q", "--trials", "2", "-o", filepath.Join(dir, "out2"), "--verify=false")
	if code != 1 || !strings.Contains(stdout, "checker-failed") || strings.Contains(stdout, "unreplayable") {
		t.Fatalf("--verify=false: exit %d, want 1\n%s%s", code, stdout, stderr)
	}
}

// TestOutInUse: `run --out DIR` refuses a DIR holding a previous run
// (pointing at --replace) and a DIR another campaign holds, each with exit
// status 2 and one line, before any network is built.
func TestOutInUse(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "spec.yaml")
	os.WriteFile(spec, []byte("name: t\nnodes:\n  - {name: c, role: client, command: [/bin/true]}\n"), 0o644)

	prev := filepath.Join(dir, "prev")
	os.MkdirAll(filepath.Join(prev, "trials", "00000"), 0o755)
	code, _, stderr := runCLI(t, "run", spec, "-q", "--out", prev)
	if want := "lockstep: output directory " + prev + " holds a previous run (its trials/): choose another --out, or pass --replace to remove that run first\n"; code != 2 || stderr != want {
		t.Errorf("previous run: exit %d, stderr %q, want 2 and %q", code, stderr, want)
	}

	busy := filepath.Join(dir, "busy")
	os.MkdirAll(busy, 0o755)
	f, err := os.OpenFile(filepath.Join(busy, ".lockstep.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	f.WriteString("4242\n")
	code, _, stderr = runCLI(t, "run", spec, "-q", "--out", busy)
	if want := "lockstep: output directory " + busy + ": in use by another lockstep campaign (pid 4242): give each campaign its own --out\n"; code != 2 || stderr != want {
		t.Errorf("busy: exit %d, stderr %q, want 2 and %q", code, stderr, want)
	}
}
