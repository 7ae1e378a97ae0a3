package explain

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/engine"
	"github.com/lockstep-dev/lockstep/internal/testutil"
)

// TestExplainChance: ms-1's and locks-1's crashes, with their traces'
// delays, give their failures only in some orders: alone in the default
// order they pass. With the order of the ops left to POS, some runs fail
// (not all: the order matters), and none without the crash, which is
// needed; placed at the trace's times rather than after its ops, the
// crash comes before the clients connect and never fails them.
func TestExplainChance(t *testing.T) {
	testutil.RequireDemo(t)
	for _, c := range []struct{ bug, bin string }{{"ms-1", "ms"}, {"locks-1", "locks1"}} {
		t.Run(c.bug, func(t *testing.T) {
			testutil.RequireBinary(t, testutil.RepoPath("testdata", "bin", "bugs", c.bug, c.bin))
			trace := firstFailure(t, testutil.RepoPath("testdata", "bugs", c.bug, "spec.yaml"))
			ex, err := Explain(context.Background(), trace, Options{Out: t.TempDir(), Budget: 3 * time.Minute, Continuations: 10})
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			WriteText(&b, ex)
			t.Log("\n" + b.String())
			ch := ex.Chance
			if ch == nil {
				t.Fatal("no chance measured: the crash and its delays alone failed in the default order?")
			}
			if ch.Faults != 1 || ch.Timed || ch.Other == nil || ch.Other.Failed != 0 {
				t.Errorf("chance %+v: want one fault, after its op, none failing at its time", ch)
			}
			if ch.With.Failed == 0 || ch.With.Failed == ch.With.Runs {
				t.Errorf("with the crash: %d of %d failed; want some, not all", ch.With.Failed, ch.With.Runs)
			}
			if len(ch.Without) != 1 || !ch.Without[0].Needed || ch.Without[0].Failed != 0 {
				t.Errorf("without the crash: %+v; want needed, no failure", ch.Without)
			}
			if !strings.Contains(b.String(), "The fault and") || !strings.Contains(b.String(), ", needed\n") {
				t.Errorf("the text does not say it")
			}
			// The first run that failed is kept, and replays to its failure.
			if ch.Trace == "" {
				t.Fatal("no failing run kept")
			}
			rep, err := engine.Replay(context.Background(), ch.Trace, filepath.Join(t.TempDir(), "replay"))
			if err != nil || !rep.Same || failureOf(rep.Trial).String() != ex.Failure {
				t.Errorf("the kept run does not replay to the failure: %v %+v", err, rep)
			}
		})
	}
}

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
