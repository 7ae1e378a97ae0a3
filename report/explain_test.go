package report

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// demoExplained is what lockstep explain found in the demo's failure
// (testdata/demo-minimized.trace.jsonl is its minimized trace): writer's
// WRITE delivered (step 16) and read (18) while starter's LOCK is still in
// flight.
func demoExplained() Explained {
	return Explained{
		Failure:   "node-crashed of server",
		Races:     []string{`fails when starter's "LOCK\n" to server is still in flight at writer's "WRITE\n" to server`},
		Highlight: map[int]string{16: "race 1, first", 18: "race 1, read"},
		Slice:     []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16, 18},
		Curve:     []CurvePoint{{0, 0.2, "2/10"}, {7, 0.1, "1/10"}, {14, 0.4, "4/10"}, {17, 1, "10/10"}, {18, 1, "10/10"}},
	}
}

// TestHTMLExplainedInChromium loads an explained diagram in headless
// Chromium: the screenshot shows a drawing; the DOM the browser built holds
// the explanation (failure, one item per race), the probability curve (a
// line through one point per prefix), the racing ops highlighted and the
// ops outside the causal slice greyed out, and the data of each message.
func TestHTMLExplainedInChromium(t *testing.T) {
	chromium := requireChromium(t)
	tr := loadTrace(t, "testdata/demo-minimized.trace.jsonl")
	ex := demoExplained()
	// The demo's trace has no fault; a trace with faults lists a verdict
	// for each (NATS's loss, examples/nats/README.md).
	ex.Faults = []string{"needed: the power of n3 (persist none, down for ≥1.522s: kept 0 of 102 unsynced changes); without it: pass",
		"not needed: the crash of n2 (down for ≥584ms)"}
	ex.Chance = "The fault alone, each right after the op the trace made it after, the order of the ops pos's (a seed a run): 5 of 20 runs failed the same way"
	ex.ChanceFaults = []string{"step 57 the crash of w1 (down for ≥80ms): without it 0/20, needed"}
	var page bytes.Buffer
	if err := WriteHTMLExplained(&page, tr, ex); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "demo.html")
	if err := os.WriteFile(path, page.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) []byte { return chromium(path, args...) }
	shot := filepath.Join(dir, "demo.png")
	run("--screenshot="+shot, "--window-size=1400,1000")
	if out := os.Getenv("LOCKSTEP_SCREENSHOT_EXPLAIN"); out != "" {
		if b, err := os.ReadFile(shot); err == nil {
			os.WriteFile(out, b, 0o644)
		}
	}
	checkScreenshot(t, shot)

	dom := string(run("--dump-dom"))
	count := func(re string) int { return len(regexp.MustCompile(re).FindAllStringIndex(dom, -1)) }
	races := regexp.MustCompile(`(?s)<ol class="races">(.*?)</ol>`).FindStringSubmatch(dom)
	if !strings.Contains(dom, `<section id="explanation">`) || races == nil || strings.Count(races[1], "<li>") != len(ex.Races) {
		t.Errorf("explanation section: want it with %d race items", len(ex.Races))
	}
	if faults := regexp.MustCompile(`(?s)<ul class="faults">(.*?)</ul>`).FindStringSubmatch(dom); faults == nil || strings.Count(faults[1], "<li>") != len(ex.Faults) {
		t.Errorf("explanation section: want its %d fault verdicts", len(ex.Faults))
	}
	if chance := regexp.MustCompile(`(?s)<p>The fault alone.*?5 of 20 runs.*?</p>\s*<ul class="chance">(.*?)</ul>`).FindStringSubmatch(dom); chance == nil || strings.Count(chance[1], "<li>") != 1 {
		t.Errorf("explanation section: want the faults with the order left to chance, and the crash's verdict")
	}
	if count(`<svg id="curve"`) != 1 || count(`<polyline points="`) != 1 || count(`<circle cx="\d+" cy="\d+" r="3">`) != len(ex.Curve) {
		t.Errorf("curve: want one line through %d points", len(ex.Curve))
	}
	if n := count(`class="op k-[a-z]+ race`); n != len(ex.Highlight) {
		t.Errorf("%d ops highlighted, want %d", n, len(ex.Highlight))
	}
	if n, want := count(`class="op k-[a-z]+( race)? outside"`), len(tr.Records)-len(ex.Slice); n != want {
		t.Errorf("%d ops greyed out, want %d (outside the slice)", n, want)
	}
	if !strings.Contains(dom, `"LOCK\n"`) || !strings.Contains(dom, `"WRITE\n"`) {
		t.Errorf("the messages' data is not on the page")
	}
}
