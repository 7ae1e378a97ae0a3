package report

import (
	"bufio"
	"fmt"
	"io"

	"github.com/lockstep-dev/lockstep/sched"
)

// Explained is what an explanation (package explain) adds to a trace's
// diagram: the failure, a sentence per race, the steps of the racing ops
// (with their labels), the causal slice and the probability curve.
type Explained struct {
	Failure string
	// Faults are the verdicts of taking each fault out alone ("needed:
	// the partition of n2 …; without it: pass").
	Faults []string
	// Chance says what the faults alone did with the order left to the
	// strategy ("The 3 faults alone … 4 of 10 runs failed"), and
	// ChanceFaults what each did left out.
	Chance       string
	ChanceFaults []string
	Races        []string
	Highlight    map[int]string // step → "race 1, first"
	// Slice are the steps in the failure's causal past; the other ops
	// are drawn greyed out. Empty: no slice, nothing greyed.
	Slice   []int
	Curve   []CurvePoint
	inSlice map[int]bool
}

// CurvePoint is the failure's probability after the prefix ending at Step.
type CurvePoint struct {
	Step  int
	P     float64
	Label string // "7/10"
}

// WriteHTMLExplained writes the diagram of tr (a minimized trace) with an
// explanation's highlights, its races and its probability curve above.
func WriteHTMLExplained(w io.Writer, tr *sched.Trace, ex Explained) error {
	d := newDiagram(tr)
	ex.inSlice = map[int]bool{}
	for _, s := range ex.Slice {
		ex.inSlice[s] = true
	}
	d.explained = &ex
	b := bufio.NewWriter(w)
	d.page(b)
	return b.Flush()
}

// classes are an op's extra CSS classes: a race's op is highlighted, an
// op outside the slice greyed out.
func (ex *Explained) classes(step int) string {
	if ex == nil {
		return ""
	}
	s := ""
	if _, ok := ex.Highlight[step]; ok {
		s += " race"
	}
	if len(ex.inSlice) > 0 && !ex.inSlice[step] {
		s += " outside"
	}
	return s
}

func (ex *Explained) title(step int, t string) string {
	if ex == nil {
		return t
	}
	if h, ok := ex.Highlight[step]; ok {
		return h + "\n" + t
	}
	return t
}

// Curve's drawing, in pixels.
const (
	curveW, curveH = 420, 120
	curvePad       = 28
)

// section writes the explanation above the diagram.
func (ex *Explained) section(b *bufio.Writer) {
	if ex == nil {
		return
	}
	b.WriteString(`<style>.op.race .mark{stroke:#c00;stroke-width:3;fill:#fdd}.op.race .label{fill:#c00;font-weight:bold}.op.outside{opacity:.25}#explanation ol{margin:.3em 0}#curve .axis{stroke:#888}#curve polyline{fill:none;stroke:#c00;stroke-width:2}#curve circle{fill:#c00}#curve text{font:10px sans-serif;fill:#444}</style>` + "\n")
	fmt.Fprintf(b, "<section id=\"explanation\"><h2>Explanation</h2><p class=\"failure\">%s</p>\n", esc(ex.Failure))
	if len(ex.Faults) > 0 {
		writeItems(b, "Faults, each taken out alone with every other decision kept:", `class="faults"`, ex.Faults, false)
	}
	if ex.Chance != "" {
		writeItems(b, ex.Chance, `class="chance"`, ex.ChanceFaults, false)
	}
	b.WriteString("<ol class=\"races\">")
	for _, r := range ex.Races {
		fmt.Fprintf(b, "<li>%s</li>", esc(r))
	}
	b.WriteString("</ol>\n")
	if len(ex.Curve) > 0 {
		last := max(ex.Curve[len(ex.Curve)-1].Step, 1)
		fmt.Fprintf(b, "<svg id=\"curve\" width=\"%d\" height=\"%d\"><title>failure probability after each prefix of the trace</title>", curveW, curveH)
		x0, y0 := curvePad, curveH-curvePad
		fmt.Fprintf(b, "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/><line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>", x0, y0, curveW-8, y0, x0, y0, x0, 8)
		fmt.Fprintf(b, "<text x=\"2\" y=\"12\">1</text><text x=\"2\" y=\"%d\">0</text><text x=\"%d\" y=\"%d\">step</text>", y0, curveW-36, curveH-4)
		pts := ""
		for _, p := range ex.Curve {
			x := x0 + p.Step*(curveW-8-x0)/last
			y := y0 - int(p.P*float64(y0-8))
			pts += fmt.Sprintf("%d,%d ", x, y)
			fmt.Fprintf(b, "<circle cx=\"%d\" cy=\"%d\" r=\"3\"><title>after step %d: %s</title></circle>", x, y, p.Step, esc(p.Label))
		}
		fmt.Fprintf(b, "<polyline points=\"%s\"/></svg>\n", pts)
	}
	b.WriteString("</section>\n")
}
