package report

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/lockstep-dev/lockstep/result"
	"github.com/lockstep-dev/lockstep/sched"
)

// The coverage curve's drawing, in pixels.
const (
	covW, covH = 1100, 440
	covPad     = 48
)

// WriteCampaignHTML writes a campaign's report as one self-contained page
// (run --html): its totals, the coverage curve (features seen after each
// trial, as SVG, with the failing trials marked on it), the first failure
// with the features no passing trial showed, and the failing trials.
func WriteCampaignHTML(w io.Writer, c Campaign) error {
	var b strings.Builder
	s := c.Summary
	title := "lockstep: " + c.Spec
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>%s</title>\n<style>%s</style></head>\n<body>\n<h1>%s</h1>\n",
		esc(title), campaignCSS, esc(title))
	if c.Err != nil {
		fmt.Fprintf(&b, "<p class=\"error\">stopped: %s</p>\n", esc(c.Err.Error()))
	}
	if s != nil {
		writeTotals(&b, s)
		writeCurve(&b, s)
		writeFailures(&b, s)
	}
	b.WriteString("</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

const campaignCSS = `body{font:14px sans-serif;margin:1.5em;color:#222}h1{font-size:1.3em}h2{font-size:1.1em;margin-top:1.5em}` +
	`table{border-collapse:collapse}td,th{padding:2px 10px;text-align:left;border-bottom:1px solid #ddd}` +
	`.error{color:#c00}#coverage .axis{stroke:#888}#coverage polyline{fill:none;stroke-width:2}` +
	`#coverage .plot{fill:#e4e9f2}#coverage .all{stroke:#1f5fbf}` +
	`#coverage circle.fail{fill:#d11}#coverage text{font:11px sans-serif;fill:#444}code{font-size:12px}`

func writeTotals(b *strings.Builder, s *result.Summary) {
	fmt.Fprintf(b, "<p id=\"totals\">strategy %s, seed %d: %d trials in %.1fs, <b>%d failures</b> (hit ratio %.4f), %d lockstep errors</p>\n",
		esc(s.Strategy), s.Seed, s.Trials, s.Duration.Seconds(), s.Failures, s.HitRatio(), s.Errors)
	var kinds []string
	for k := range s.ByKind {
		kinds = append(kinds, string(k))
	}
	sort.Strings(kinds)
	b.WriteString("<table id=\"outcomes\"><tr><th>outcome</th><th>trials</th></tr>\n")
	for _, k := range kinds {
		fmt.Fprintf(b, "<tr><td>%s</td><td>%d</td></tr>\n", esc(k), s.ByKind[sched.OutcomeKind(k)])
	}
	b.WriteString("</table>\n")
}

// writeCurve draws the features seen after each trial: a line from trial
// 0 to the last, a red mark at each failing trial.
func writeCurve(b *strings.Builder, s *result.Summary) {
	c := s.Coverage
	if c == nil || len(c.Curve) == 0 {
		return
	}
	n, top := len(c.Curve), c.Curve[len(c.Curve)-1]
	fmt.Fprintf(b, "<h2>Coverage</h2>\n<p>%d features: %d message kinds, %d log templates, %d orderings", c.Features, c.Kinds, c.Templates, c.Orderings)
	if c.Corpus > 0 {
		fmt.Fprintf(b, "; corpus of %d trials", c.Corpus)
	}
	last := min(100, n)
	fmt.Fprintf(b, "; the last %d trials added %d.</p>\n", last, c.AddedSince(last))
	x := func(i int) float64 {
		if n == 1 {
			return covPad
		}
		return covPad + float64(i)*float64(covW-2*covPad)/float64(n-1)
	}
	y := func(v int) float64 {
		return float64(covH-covPad) - float64(v)*float64(covH-2*covPad)/float64(max(top, 1))
	}
	fmt.Fprintf(b, "<svg id=\"coverage\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n", covW, covH, covW, covH)
	fmt.Fprintf(b, "<rect class=\"plot\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>\n", covPad, covPad, covW-2*covPad, covH-2*covPad)
	fmt.Fprintf(b, "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/><line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n",
		covPad, covH-covPad, covW-covPad, covH-covPad, covPad, covPad, covPad, covH-covPad)
	fmt.Fprintf(b, "<text x=\"%d\" y=\"%d\">%d</text><text x=\"%d\" y=\"%d\">0</text>\n", 4, covPad+4, top, 30, covH-covPad+4)
	fmt.Fprintf(b, "<text x=\"%d\" y=\"%d\">trial 0</text><text x=\"%d\" y=\"%d\">trial %d</text>\n",
		covPad, covH-covPad+18, covW-covPad-50, covH-covPad+18, n-1)
	fmt.Fprintf(b, "<text x=\"%d\" y=\"%d\">features seen</text>\n", covPad+6, covPad-8)
	var pts []string
	for i, v := range c.Curve {
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(i), y(v)))
	}
	fmt.Fprintf(b, "<polyline class=\"all\" points=\"%s\"/>\n", strings.Join(pts, " "))
	for _, r := range s.Results {
		if r.Outcome.Kind.IsFailure() && r.Index < n {
			fmt.Fprintf(b, "<circle class=\"fail\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\"><title>trial %d: %s</title></circle>\n",
				x(r.Index), y(c.Curve[r.Index]), r.Index, esc(string(r.Outcome.Kind)))
		}
	}
	b.WriteString("</svg>\n")
}

func writeFailures(b *strings.Builder, s *result.Summary) {
	if f := s.First; f != nil {
		fmt.Fprintf(b, "<h2>First failure: trial %d</h2>\n<p id=\"first\">%s</p>\n<p>trace <code>%s</code>, node output <code>%s</code></p>\n",
			f.Index, esc(f.Outcome.String()), esc(f.TracePath), esc(f.Dir))
		if f.Plan != "" {
			fmt.Fprintf(b, "<p>explore: %s</p>\n", esc(f.Plan))
		}
		if len(f.Unique) > 0 {
			writeItems(b, "Features no passing trial showed:", `id="unique"`, f.Unique, true)
		}
	}
	if s.Failures == 0 {
		return
	}
	b.WriteString("<h2>Failing trials</h2>\n<table id=\"failing\"><tr><th>trial</th><th>outcome</th><th>trace</th></tr>\n")
	for _, r := range s.Results {
		if r.Outcome.Kind.IsFailure() {
			fmt.Fprintf(b, "<tr><td>%d</td><td>%s</td><td><code>%s</code></td></tr>\n", r.Index, esc(string(r.Outcome.Kind)), esc(r.TracePath))
		}
	}
	b.WriteString("</table>\n")
}

// writeItems writes a paragraph and the list of items under it, each
// escaped, as code where asked.
func writeItems(w io.Writer, intro, attrs string, items []string, code bool) {
	fmt.Fprintf(w, "<p>%s</p>\n<ul %s>\n", intro, attrs)
	for _, it := range items {
		if code {
			fmt.Fprintf(w, "<li><code>%s</code></li>\n", esc(it))
		} else {
			fmt.Fprintf(w, "<li>%s</li>\n", esc(it))
		}
	}
	io.WriteString(w, "</ul>\n")
}
