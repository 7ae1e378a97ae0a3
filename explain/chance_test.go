package explain

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestChanceText: the verdicts and the placement as printed.
func TestChanceText(t *testing.T) {
	c := &Chance{Strategy: "pos", Faults: 3, With: Point{Runs: 20, Failed: 6}, Timed: true, Other: &Point{Runs: 10}}
	want := "The 3 faults alone, each fault at the time the trace made it, the order of the ops pos's (a seed a run): 6 of 20 runs failed the same way (each right after the op the trace made it after: 0 of 10)"
	if got := c.Summary(); got != want {
		t.Errorf("summary\n got %s\nwant %s", got, want)
	}
	c = &Chance{Strategy: "pos", Faults: 1, Delays: 2, With: Point{Runs: 10}}
	if got := c.Summary(); !strings.HasPrefix(got, "The fault and 2 delays alone, each right after") || !strings.HasSuffix(got, "none of 10 runs failed the same way: the failure needs the trace's order too, or is rarer than 10 runs tell") {
		t.Errorf("summary %s", got)
	}
	f := FaultChance{Fault: "the crash of w1", Point: Point{Step: 57, Runs: 30, Failed: 2}}
	if got := f.String(); got != "step 57 the crash of w1: without it 2/30, not shown needed" {
		t.Errorf("verdict %s", got)
	}
	var b strings.Builder
	writeChance(&b, &Chance{Strategy: "pos", Faults: 1, With: Point{Runs: 10, Failed: 4}, Without: []FaultChance{{Fault: "the crash of w1", Point: Point{Step: 57, Runs: 20}, Needed: true}}})
	if !strings.Contains(b.String(), "   step 57 the crash of w1: without it 0/20, needed\n") {
		t.Errorf("text %q", b.String())
	}
}

// TestTextRacesCapped: a minimization that is not 1-minimal lists its
// first textRaces decisions and the one the jump names, and counts the
// rest; a 1-minimal one lists all.
func TestTextRacesCapped(t *testing.T) {
	ex := &Explanation{Jump: &Jump{Race: 35}}
	for i := 0; i < 40; i++ {
		ex.Races = append(ex.Races, Race{Summary: "race summary"})
	}
	var b strings.Builder
	WriteText(&b, ex)
	out := b.String()
	if !strings.Contains(out, "\n25. race summary") || strings.Contains(out, "\n26. ") || !strings.Contains(out, "\n35. race summary") {
		t.Errorf("want races 1-25 and 35 listed:\n%s", out)
	}
	if !strings.Contains(out, "… and 14 more decisions the failure kept") {
		t.Errorf("want the 14 left counted:\n%s", out)
	}
	ex.OneMinimal = true
	b.Reset()
	WriteText(&b, ex)
	if !strings.Contains(b.String(), "\n40. race summary") || strings.Contains(b.String(), "more decisions") {
		t.Errorf("a 1-minimal set lists every race")
	}
}

// TestChanceNone: the runs with no fault say whether the faults take part.
func TestChanceNone(t *testing.T) {
	c := &Chance{With: Point{Runs: 20, Failed: 3}, None: &Point{Runs: 10, Failed: 1}}
	if got := c.NoneSaid(); got != "without any fault: 1/10, not shown that the faults take part: the order does most of it" {
		t.Errorf("%s", got)
	}
	c = &Chance{With: Point{Runs: 20, Failed: 12}, None: &Point{Runs: 10, Failed: 0}}
	if got := c.NoneSaid(); got != "without any fault: 0/10, the faults take part" {
		t.Errorf("%s", got)
	}
	c = &Chance{None: &Point{Runs: 10, Failed: 6}, Bare: &Point{Runs: 10, Failed: 0}}
	if got := c.BareSaid(); got != "with nothing forced, the order alone: 0/10, the delays take part" {
		t.Errorf("%s", got)
	}
	c.Bare.Failed = 5
	if got := c.BareSaid(); got != "with nothing forced, the order alone: 5/10, not shown that the delays take part: the order alone does it" {
		t.Errorf("%s", got)
	}
	c = &Chance{None: &Point{Runs: 10, Failed: 1}, Bare: &Point{Runs: 10, Failed: 0}}
	if got := c.BareSaid(); got != "with nothing forced, the order alone: 0/10, too few failures to tell whether the delays take part" {
		t.Errorf("%s", got)
	}
}

// TestOutputNoLinks: explain writes its traces through no link a trial's
// nodes could have left, at the file's name or as the default output
// directory.
func TestOutputNoLinks(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("host file"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "src.jsonl")
	os.WriteFile(src, []byte("trace"), 0o644)
	out := filepath.Join(dir, "out")
	os.Mkdir(out, 0o755)
	os.Symlink(victim, filepath.Join(out, "chance.jsonl"))
	if err := copyFile(src, filepath.Join(out, "chance.jsonl")); err == nil {
		t.Error("copyFile wrote through a link")
	}
	if b, _ := os.ReadFile(victim); string(b) != "host file" {
		t.Errorf("the link's target was written: %q", b)
	}
	trial := filepath.Join(dir, "trial")
	os.Mkdir(trial, 0o755)
	os.Symlink(dir, filepath.Join(trial, "explain"))
	if _, err := (Options{}).forTrace(filepath.Join(trial, "trace.jsonl")); err == nil || !strings.Contains(err.Error(), "--out") {
		t.Errorf("a link as the default output directory: %v", err)
	}
	// A link below it, where the reruns' trials go; given as the output
	// directory (as run --explain gives it) or not.
	host := filepath.Join(dir, "host")
	os.Mkdir(host, 0o755)
	trial = filepath.Join(dir, "trial2")
	os.MkdirAll(filepath.Join(trial, "explain"), 0o755)
	os.Symlink(host, filepath.Join(trial, "explain", "runs"))
	for _, out := range []string{"", filepath.Join(trial, "explain")} {
		if _, err := (Options{Out: out}).forTrace(filepath.Join(trial, "trace.jsonl")); err == nil || !strings.Contains(err.Error(), "runs is a symbolic link") {
			t.Errorf("a link at explain/runs (out %q): %v", out, err)
		}
	}
	if ents, _ := os.ReadDir(host); len(ents) != 0 {
		t.Errorf("made in the link's target: %v", ents)
	}
	// Nothing planted: the directories are made.
	trial = filepath.Join(dir, "trial3")
	os.Mkdir(trial, 0o755)
	if _, err := (Options{}).forTrace(filepath.Join(trial, "trace.jsonl")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(trial, "explain", "runs", "trials")); err != nil || !fi.IsDir() {
		t.Errorf("explain/runs/trials: %v (%v)", fi, err)
	}
}
