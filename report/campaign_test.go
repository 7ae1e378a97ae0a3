package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/result"
	"github.com/lockstep-dev/lockstep/sched"
)

// campaignSummary is an exploring campaign of 60 trials whose coverage
// grew fast, then slowly, with failures at trials 41 and 57.
func campaignSummary() *result.Summary {
	s := &result.Summary{Strategy: "explore", Seed: 2, Trials: 60, Duration: 9 * time.Second,
		ByKind: map[sched.OutcomeKind]int{sched.Pass: 58, sched.NodeCrashed: 2}}
	curve := make([]int, 60)
	for i := range curve {
		curve[i] = min(30, 3*(i+1)) + i/4
	}
	s.Coverage = &result.CoverageSummary{Features: curve[59], Kinds: 5, Templates: 7, Orderings: curve[59] - 12, Curve: curve, Corpus: 9}
	for i := range 60 {
		r := &result.TrialResult{Index: i, Outcome: sched.Outcome{Kind: sched.Pass}}
		if i == 41 || i == 57 {
			r.Outcome = sched.Outcome{Kind: sched.NodeCrashed, Node: "server", Detail: "node server/0 was killed by SIGABRT"}
			r.TracePath = "/o/trials/000" + string(rune('0'+i/10)) + string(rune('0'+i%10)) + "/trace.jsonl"
			r.Plan = "trial 12 to decision 30 of 78, then extend"
			r.Unique = []string{"t7 handoff: commits in id order after a migration", "t1 ⇒ t7"}
			s.Failures++
			if s.First == nil {
				s.First = r
			}
		}
		s.Results = append(s.Results, r)
	}
	return s
}

// TestCampaignHTML: the report holds the totals, the curve with a point
// per trial and a mark per failing trial, and what only the first failure
// showed; names are escaped.
func TestCampaignHTML(t *testing.T) {
	var b bytes.Buffer
	if err := WriteCampaignHTML(&b, Campaign{Spec: "hand<off>", Summary: campaignSummary()}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{"hand&lt;off&gt;", "<b>2 failures</b>", "corpus of 9 trials", "t1 ⇒ t7", "then extend", `class="fail"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	i := strings.Index(page, `<polyline class="all" points="`)
	if i < 0 {
		t.Fatal("no curve")
	}
	pts := page[i+len(`<polyline class="all" points="`):]
	pts = pts[:strings.Index(pts, `"`)]
	if n := len(strings.Fields(pts)); n != 60 {
		t.Errorf("the curve has %d points, want one per trial (60)", n)
	}
	if n := strings.Count(page, `<circle class="fail"`); n != 2 {
		t.Errorf("%d failing trials marked, want 2", n)
	}
}

// TestCampaignHTMLInChromium: the campaign report's coverage curve in
// headless Chromium: the screenshot shows a drawing with the failures'
// red marks, and the DOM the browser built holds the curve.
func TestCampaignHTMLInChromium(t *testing.T) {
	chromium := requireChromium(t)
	dir := t.TempDir()
	page := filepath.Join(dir, "campaign.html")
	var b bytes.Buffer
	if err := WriteCampaignHTML(&b, Campaign{Spec: "handoff", Summary: campaignSummary()}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "campaign.png")
	chromium(page, "--screenshot="+shot, "--window-size=1400,1000")
	if out := os.Getenv("LOCKSTEP_SCREENSHOT"); out != "" {
		if b, err := os.ReadFile(shot); err == nil {
			os.WriteFile(strings.TrimSuffix(out, ".png")+"-campaign.png", b, 0o644)
		}
	}
	checkScreenshot(t, shot)
	dom := string(chromium(page, "--dump-dom"))
	if !strings.Contains(dom, `<svg id="coverage"`) || !strings.Contains(dom, `<polyline class="all"`) || strings.Count(dom, `class="fail"`) != 2 {
		t.Errorf("the browser's DOM lacks the curve or its marks")
	}
}
