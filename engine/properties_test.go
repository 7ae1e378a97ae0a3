package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/result"
	"github.com/lockstep-dev/lockstep/spec"
)

// A server that logs its broken invariant and carries on (room_server):
// never makes the line a failure naming the node, the line and the step,
// whose trace replays; the trials that did not break it reach the
// sometimes and the eventually; a spec whose eventually asks for what the
// broken trials lack fails exactly those; and the default never set fails
// a server that prints a Go panic and keeps running.
func TestProperties(t *testing.T) {
	requireTrials(t)
	bin := repoPath("testdata", "bin", "c")
	if _, err := os.Stat(filepath.Join(bin, "room_server")); err != nil {
		t.Skipf("skipping: %v (make testdata builds it)", err)
	}
	dir := t.TempDir()
	sp, err := spec.Load(repoPath("testdata", "specs", "properties", "room.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Run(t.Context(), sp, RunOptions{Trials: 12, OutDir: filepath.Join(dir, "never"), TraceAll: true})
	if err != nil {
		t.Fatal(err)
	}
	detail := regexp.MustCompile(`^server printed "ERROR: invariant violated: 2 clients inside the room" after step \d+ \(never "one client inside"\)$`)
	broken := map[int]bool{}
	for _, r := range sum.Results {
		o := r.Outcome
		switch o.Kind {
		case PropertyViolated:
			if o.Node != "server" || o.Property != "one client inside" || !detail.MatchString(o.Detail) {
				t.Errorf("trial %d: %+v", r.Index, o)
			}
			broken[r.Index] = true
			if len(broken) <= 2 {
				// With the nodes' lines kept (replay --lines): the
				// server's, in order, the broken invariant last.
				rr, err := ReplayWith(t.Context(), r.TracePath, filepath.Join(dir, "replay"), ReplayOptions{Lines: true})
				if err != nil {
					t.Fatal(err)
				}
				if !rr.Same || rr.Trial.Outcome.Detail != o.Detail {
					t.Errorf("trial %d: replay: same %v, %s; %v", r.Index, rr.Same, rr.Diff, rr.Trial.Outcome)
				}
				ls := rr.Trial.Lines
				if len(ls) < 2 || ls[0] != (result.Line{Node: "server", Text: "room open on port 7000", Step: ls[0].Step}) ||
					!strings.HasPrefix(ls[len(ls)-1].Text, "ERROR: invariant violated") || ls[len(ls)-1].Step > o.Steps {
					t.Errorf("trial %d: replay's lines %+v", r.Index, ls)
				}
			}
		case Pass:
		default:
			t.Fatalf("trial %d: %v", r.Index, o)
		}
		if !slices.Contains(r.Reached, "a client entered") || slices.Contains(r.Reached, "two inside") {
			t.Errorf("trial %d reached %v", r.Index, r.Reached)
		}
	}
	if len(broken) == 0 || len(broken) == len(sum.Results) {
		t.Fatalf("%d of %d trials broke the invariant: the test needs both kinds", len(broken), len(sum.Results))
	}
	if sum.Reached["a client entered"] != sum.Trials || len(sum.Unreached()) != 1 || sum.Unreached()[0].Name != "two inside" {
		t.Errorf("reached %v, unreached %v", sum.Reached, sum.Unreached())
	}
	// The server's "all 2 visits done (at most 1 inside)" holds the words
	// of "two inside" (most, inside), but it watches the clients' lines.
	if c, ok := sum.Closest["two inside"]; ok {
		t.Errorf("a line of the server came closest to a sometimes of the clients: %+v", c)
	}
	// The campaign's coverage: the room's message kinds (ENTER, OK, EXIT,
	// BYE) and the server's templates, counted in trial order, so two
	// jobs give the same curve as one.
	c := sum.Coverage
	if c == nil || len(c.Curve) != sum.Trials || c.Kinds != 4 || c.Templates == 0 || c.Orderings == 0 || c.Curve[len(c.Curve)-1] != c.Features {
		t.Fatalf("coverage %+v", c)
	}
	sum2j, err := Run(t.Context(), sp, RunOptions{Trials: 12, Jobs: 2, OutDir: filepath.Join(dir, "jobs")})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sum2j.Coverage.Curve, c.Curve) {
		t.Errorf("coverage curve with two jobs %v, with one %v", sum2j.Coverage.Curve, c.Curve)
	}

	// The same trials (same seed) with an eventually the broken ones lack
	// instead of the never: those fail at the end, the others pass.
	text, err := os.ReadFile(sp.Path)
	if err != nil {
		t.Fatal(err)
	}
	ev := strings.Replace(string(text), `    - {match: "invariant violated", nodes: [server], name: one client inside}
  eventually: ["^all 2 visits done"]`, `  eventually: ["at most 1 inside"]`, 1)
	// Written beside the trials, not into the repository (whose specs
	// other packages' tests read meanwhile), with its programs' paths
	// still the original spec's.
	ev = strings.ReplaceAll(ev, "{{dir}}", filepath.Dir(sp.Path))
	sp2 := loadText(t, filepath.Join(dir, "room-eventually.yaml"), ev)
	sum2, err := Run(t.Context(), sp2, RunOptions{Trials: 12, OutDir: filepath.Join(dir, "eventually")})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range sum2.Results {
		o := r.Outcome
		if want := broken[r.Index]; want != (o.Kind == PropertyViolated) || want && !strings.Contains(o.Detail, `no node printed a line matching "at most 1 inside" by the end of the trial`) {
			t.Errorf("trial %d (broke the invariant: %v): %v", r.Index, want, o)
		}
	}

	// never: default on a server that prints a Go panic and carries on.
	panicky := fmt.Sprintf(`name: panicky
nodes:
  - name: server
    role: server
    command: ["/bin/sh", "-c", "echo starting; echo 'panic: runtime error: index out of range [3] with length 2'; exec %[1]s/room_server 7000 1"]
    ready: {listen: 7000}
  - name: alice
    role: client
    command: ["%[1]s/room_client", "server", "7000", "1"]
properties: {never: default}
`, bin)
	sp3 := loadText(t, filepath.Join(dir, "panicky.yaml"), panicky)
	sum3, err := Run(t.Context(), sp3, RunOptions{Trials: 1, OutDir: filepath.Join(dir, "panicky")})
	if err != nil {
		t.Fatal(err)
	}
	if o := sum3.Results[0].Outcome; o.Kind != PropertyViolated || o.Property != "go panic" || o.Node != "server" {
		t.Fatalf("a server's panic line: %v", o)
	}
}

// loadText writes a spec's text to path and loads it.
func loadText(t *testing.T, path, text string) *spec.Spec {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(path) })
	sp, err := spec.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// Two members that may both take epoch 1 (testdata/specs/properties/
// epochs.yaml): unique fails exactly the trials in which two nodes printed
// one value, naming both lines, and their traces replay; the same node
// printing a value twice fails no more trials; a pattern limited to one
// node, or one whose groups capture the node's name too, fails none; and
// the summary counts the trials in which a line matched (none for a
// pattern that fits no line).
func TestUniqueProperty(t *testing.T) {
	requireTrials(t)
	dir := t.TempDir()
	src := repoPath("testdata", "specs", "properties", "epochs.yaml")
	text, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	const unique = `  unique: [{match: "leader of epoch (\\d+)", name: one leader per epoch}]`
	if !strings.Contains(string(text), unique) {
		t.Fatalf("%s: no line %s", src, unique)
	}
	detail := regexp.MustCompile(`^(a|b) printed "(a|b): leader of epoch 1" after step \d+, and (a|b) printed "(a|b): leader of epoch 1" after step \d+ \(unique "one leader per epoch": value "1"\)$`)
	var broken []int // the trials of the spec as written that failed
	for _, tc := range []struct {
		name, props string
		// fails: the same trials fail as with the spec's own property.
		fails bool
	}{
		{"as written", unique, true},
		{"no groups", `  unique: ["leader of epoch 1$"]`, true},
		{"one node's lines", `  unique: [{match: "leader of epoch (\\d+)", nodes: [a]}]`, false},
		{"the node captured too", `  unique: ["(\\w): leader of epoch (\\d+)"]`, false},
		{"a's line twice", unique, true},
		{"no line matches", `  unique: [{match: "leader of term (\\d+)", name: one leader per epoch}]`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := strings.Replace(string(text), unique, tc.props, 1)
			if tc.name == "a's line twice" {
				body = strings.Replace(body, `echo \"a: leader of epoch $((n+1))\"`, `echo \"a: leader of epoch $((n+1))\"; echo \"a: leader of epoch $((n+1))\"`, 1)
			}
			body = strings.ReplaceAll(body, "{{dir}}", filepath.Dir(src))
			sp := loadText(t, filepath.Join(dir, "epochs.yaml"), body)
			sum, err := Run(t.Context(), sp, RunOptions{Trials: 12, OutDir: filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")), TraceAll: true})
			if err != nil {
				t.Fatal(err)
			}
			var failed []int
			for _, r := range sum.Results {
				o := r.Outcome
				switch o.Kind {
				case Pass:
				case PropertyViolated:
					failed = append(failed, r.Index)
					if !strings.Contains(o.Detail, "(unique ") {
						t.Errorf("trial %d: %v", r.Index, o)
					}
				default:
					t.Fatalf("trial %d: %v", r.Index, o)
				}
				if tc.name != "as written" || o.Kind != PropertyViolated {
					continue
				}
				m := detail.FindStringSubmatch(o.Detail)
				if m == nil || m[1] != m[2] || m[3] != m[4] || m[1] == m[3] || o.Node != m[1] || o.Property != "one leader per epoch" {
					t.Errorf("trial %d: %+v", r.Index, o)
				}
				if len(failed) <= 2 {
					rr, err := ReplayWith(t.Context(), r.TracePath, filepath.Join(dir, "replay"), ReplayOptions{})
					if err != nil {
						t.Fatal(err)
					}
					if !rr.Same || rr.Trial.Outcome.Detail != o.Detail {
						t.Errorf("trial %d: replay: same %v, %s; %v", r.Index, rr.Same, rr.Diff, rr.Trial.Outcome)
					}
				}
			}
			// The summary counts the trials in which a line matched.
			if want := map[bool]int{true: sum.Trials, false: 0}[tc.name != "no line matches"]; sum.Reached[sp.Properties[0].Name] != want {
				t.Errorf("matched in %d trials, want %d", sum.Reached[sp.Properties[0].Name], want)
			}
			switch {
			case tc.name == "as written":
				if len(failed) == 0 || len(failed) == len(sum.Results) {
					t.Fatalf("%d of %d trials had two leaders of epoch 1: the test needs both kinds", len(failed), len(sum.Results))
				}
				broken = failed
			case tc.fails && !slices.Equal(failed, broken):
				t.Errorf("trials %v failed, want %v (the spec's own property's)", failed, broken)
			case !tc.fails && len(failed) > 0:
				t.Errorf("trials %v failed, want none", failed)
			}
		})
	}
}

// TestPropertiesReadWhenRun: with activity counts, a node's output is read
// only when its count moved since the last read (a node that did not run
// wrote nothing), except what a read left for the next scan, and the final
// scan reads everything.
func TestPropertiesReadWhenRun(t *testing.T) {
	dir := t.TempDir()
	w, err := os.Create(filepath.Join(dir, "a.out"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	sp := &spec.Spec{Nodes: []spec.Node{{Name: "a"}},
		Properties: []spec.Property{{Kind: spec.Never, Name: "bad", Pattern: regexp.MustCompile("bad")}}}
	p, err := newProperties(sp, map[string][2]*os.File{"a": {w, nil}}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	var count uint64
	p.counts = map[string]func() uint64{"a": func() uint64 { return count }}
	scan := func(step int) *brokenProperty {
		t.Helper()
		br, err := p.scan(step)
		if err != nil {
			t.Fatal(err)
		}
		return br
	}
	if br := scan(1); br != nil {
		t.Fatalf("an empty file broke %v", br)
	}
	// Written behind the count's back: not read, since "a" did not run.
	w.WriteString("bad line\n")
	if br := scan(2); br != nil {
		t.Fatalf("read although the node's count did not move: %v", br)
	}
	count++
	if br := scan(3); br == nil || br.step != 3 {
		t.Fatalf("after the count moved: %v, want the line broken at step 3", br)
	}

	// A read that leaves bytes for the next scan is not taken as the
	// node's last word.
	of := p.files[0]
	p.broke = nil
	of.off, of.partial = 0, nil
	w.Truncate(0)
	w.Seek(0, 0)
	w.WriteString(strings.Repeat("x", maxPropertyRead) + "\nbad tail\n")
	count++
	if br := scan(4); br != nil {
		t.Fatalf("the first %d bytes broke %v", maxPropertyRead, br)
	}
	if br := scan(5); br == nil || br.step != 5 {
		t.Fatalf("the rest of a long output: %v, want it read at step 5 although the count stood", br)
	}

	// The final scan reads what the counts would skip.
	p.broke = nil
	w.WriteString("bad at the end\n")
	p.uncount()
	if br := scan(6); br == nil || br.line != "bad at the end" {
		t.Fatalf("final scan: %v, want the last line", br)
	}
}
