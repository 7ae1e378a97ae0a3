package report

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// BenchCell is one bug × strategy of the hit-ratio table.
type BenchCell struct {
	Bug, Strategy string
	Trials        int
	Failures      int
	FirstFailure  int // trial index of the first failure, -1 if none
	PerTrial      time.Duration
}

// Ratio is the cell's hit ratio, failing trials over trials.
func (c BenchCell) Ratio() float64 { return float64(c.Failures) / float64(max(c.Trials, 1)) }

// geomean of hit ratios; a cell with no hit counts as 1/(2N) so that one
// miss does not zero a strategy's mean (the table marks such cells).
func geomean(cells []BenchCell) float64 {
	if len(cells) == 0 {
		return 0
	}
	sum := 0.0
	for _, c := range cells {
		r := c.Ratio()
		if r == 0 {
			r = 1 / (2 * float64(max(c.Trials, 1)))
		}
		sum += math.Log(r)
	}
	return math.Exp(sum / float64(len(cells)))
}

// fewerTrials names the bugs whose cells ran fewer trials than the table's
// nominal count (a merged table can mix runs).
func fewerTrials(cells []BenchCell, bugs []string, trials int) string {
	fewest := map[string]int{}
	for _, c := range cells {
		if c.Trials < trials && (fewest[c.Bug] == 0 || c.Trials < fewest[c.Bug]) {
			fewest[c.Bug] = c.Trials
		}
	}
	var parts []string
	for _, b := range bugs {
		if n := fewest[b]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s: %d", b, n))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (fewer for " + strings.Join(parts, ", ") + ")"
}

// WriteBenchMarkdown writes the hit-ratio table (Morpheus Table 3 style): a
// row per bug, a column per strategy, then the geomeans, the ratio to POS+,
// trials to first failure and real time per trial. trials is the nominal
// count per cell.
func WriteBenchMarkdown(w io.Writer, cells []BenchCell, strategies []string, trials int) {
	var u unix.Utsname
	unix.Uname(&u)
	fmt.Fprintf(w, "Measured %s on %d CPUs, Linux %s.\n\n", time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), unix.ByteSliceToString(u.Release[:]))
	writeBenchTable(w, cells, strategies, trials)
}

// writeBenchTable is WriteBenchMarkdown without the line naming the
// machine and the date, so that tests can compare it exactly.
func writeBenchTable(w io.Writer, cells []BenchCell, strategies []string, trials int) {
	g := newBenchGrid(cells, strategies)
	missing := ""
	if g.missing() {
		missing = "; `–` = not measured (left out of the columns' summaries)"
	}
	fmt.Fprintf(w, "Hit ratio (failing trials / trials), %d trials per cell%s; `0*` = no failure found%s; native = plain runs without lockstep.\n\n", trials, fewerTrials(cells, g.bugs, trials), missing)
	g.row(w, "bug", func(s string) string { return s })
	fmt.Fprintf(w, "|---|%s\n", strings.Repeat("---|", len(strategies)))
	for _, b := range g.bugs {
		g.row(w, b, func(s string) string { return g.ratio(b, s) })
	}
	means := map[string]float64{}
	for _, s := range strategies {
		means[s] = geomean(g.column(s))
	}
	g.row(w, "**geomean**", func(s string) string { return fmt.Sprintf("%.4f", means[s]) })
	if ref, ok := means["pos+"]; ok && ref > 0 {
		g.row(w, "ratio to POS+", func(s string) string { return fmt.Sprintf("%.2f", means[s]/ref) })
	}
	g.row(w, "mean trials to first failure", g.meanFirstFailure)
	g.row(w, "real time per trial", g.meanPerTrial)
	if imps := improvements(means); len(imps) > 0 {
		fmt.Fprintf(w, "\nImprovement from conflict analysis (geomean): %s\n", strings.Join(imps, "; "))
	}
}

// benchGrid is the hit-ratio table's cells by bug and strategy.
type benchGrid struct {
	bugs       []string // in first-seen order
	strategies []string
	by         map[string]BenchCell // by bug|strategy
}

func newBenchGrid(cells []BenchCell, strategies []string) benchGrid {
	g := benchGrid{strategies: strategies, by: map[string]BenchCell{}}
	seen := map[string]bool{}
	for _, c := range cells {
		if !seen[c.Bug] {
			seen[c.Bug] = true
			g.bugs = append(g.bugs, c.Bug)
		}
		g.by[c.Bug+"|"+c.Strategy] = c
	}
	return g
}

// cell is bug's cell of strategy, if measured.
func (g benchGrid) cell(bug, strategy string) (BenchCell, bool) {
	c, ok := g.by[bug+"|"+strategy]
	return c, ok
}

// missing reports whether a bug was not measured under a strategy.
func (g benchGrid) missing() bool {
	for _, b := range g.bugs {
		for _, s := range g.strategies {
			if _, ok := g.cell(b, s); !ok {
				return true
			}
		}
	}
	return false
}

// column is strategy's measured cells, in bug order.
func (g benchGrid) column(strategy string) []BenchCell {
	var cs []BenchCell
	for _, b := range g.bugs {
		if c, ok := g.cell(b, strategy); ok {
			cs = append(cs, c)
		}
	}
	return cs
}

// row writes a row of the table: its label, then what text says of each
// strategy's column.
func (g benchGrid) row(w io.Writer, label string, text func(strategy string) string) {
	fmt.Fprintf(w, "| %s |", label)
	for _, s := range g.strategies {
		fmt.Fprintf(w, " %s |", text(s))
	}
	fmt.Fprintln(w)
}

// ratio is the text of bug's hit ratio under strategy: `–` not measured,
// `0*` no failure (geomean counts it as less than one).
func (g benchGrid) ratio(bug, strategy string) string {
	c, ok := g.cell(bug, strategy)
	switch {
	case !ok:
		return "–"
	case c.Failures == 0:
		return "0*"
	}
	return fmt.Sprintf("%.4f", c.Ratio())
}

// meanFirstFailure is the mean, over the bugs strategy failed, of the
// trials it took to the first failure; `–` if it failed none.
func (g benchGrid) meanFirstFailure(strategy string) string {
	sum, n := 0, 0
	for _, c := range g.column(strategy) {
		if c.FirstFailure >= 0 {
			sum += c.FirstFailure + 1
			n++
		}
	}
	if n == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f", float64(sum)/float64(n))
}

// meanPerTrial is strategy's mean real time per trial over its cells.
func (g benchGrid) meanPerTrial(strategy string) string {
	var d time.Duration
	cs := g.column(strategy)
	for _, c := range cs {
		d += c.PerTrial
	}
	return fmt.Sprint((d / time.Duration(max(len(cs), 1))).Round(time.Millisecond))
}

// improvements are what conflict analysis gained: each strategy "S+"
// against its "S", by geomean, in the strategies' name order.
func improvements(means map[string]float64) []string {
	keys := make([]string, 0, len(means))
	for s := range means {
		keys = append(keys, s)
	}
	sort.Strings(keys)
	var imps []string
	for _, s := range keys {
		if strings.HasSuffix(s, "+") {
			if base, ok := means[strings.TrimSuffix(s, "+")]; ok && base > 0 {
				imps = append(imps, fmt.Sprintf("%s over %s: %+.1f%%", s, strings.TrimSuffix(s, "+"), 100*(means[s]/base-1)))
			}
		}
	}
	return imps
}

// benchHeader is table.csv's first row.
var benchHeader = []string{"bug", "strategy", "trials", "failures", "hit_ratio", "first_failure", "ms_per_trial"}

// WriteBenchCSV writes the cells as table.csv, the form MergeBenchCSV reads.
func WriteBenchCSV(w io.Writer, cells []BenchCell) error {
	cw := csv.NewWriter(w)
	cw.Write(benchHeader)
	for _, c := range cells {
		cw.Write([]string{c.Bug, c.Strategy, fmt.Sprint(c.Trials), fmt.Sprint(c.Failures), fmt.Sprintf("%.6f", c.Ratio()),
			fmt.Sprint(c.FirstFailure), fmt.Sprintf("%.1f", float64(c.PerTrial.Microseconds())/1000)})
	}
	cw.Flush()
	return cw.Error()
}

// BenchTable is a merged hit-ratio table: its cells in first-seen order,
// its strategies in first-seen order and the most trials of any cell.
type BenchTable struct {
	Cells      []BenchCell
	Strategies []string
	Trials     int
}

// MergeBenchCSV reads earlier runs' table.csv files, later files replacing
// earlier cells, so that a bug rerun on its own replaces its row without
// rerunning the rest. Every error is the input's fault and names the file
// (and line).
func MergeBenchCSV(paths []string) (*BenchTable, error) {
	var order []string
	byKey := map[string]BenchCell{}
	seenStrat := map[string]bool{}
	t := &BenchTable{}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		rows, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil || len(rows) == 0 || rows[0][0] != "bug" {
			return nil, fmt.Errorf("%s: not a lockstep bench table.csv", p)
		}
		for i, r := range rows[1:] {
			if len(r) != len(benchHeader) {
				return nil, fmt.Errorf("%s:%d: want %d fields, got %d", p, i+2, len(benchHeader), len(r))
			}
			var cell BenchCell
			var ms float64
			cell.Bug, cell.Strategy = r[0], r[1]
			_, err1 := fmt.Sscan(r[2], &cell.Trials)
			_, err2 := fmt.Sscan(r[3], &cell.Failures)
			_, err3 := fmt.Sscan(r[5], &cell.FirstFailure)
			_, err4 := fmt.Sscan(r[6], &ms)
			if err := errors.Join(err1, err2, err3, err4); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", p, i+2, err)
			}
			cell.PerTrial = time.Duration(ms * float64(time.Millisecond))
			key := cell.Bug + "|" + cell.Strategy
			if _, ok := byKey[key]; !ok {
				order = append(order, key)
			}
			byKey[key] = cell
			if !seenStrat[cell.Strategy] {
				seenStrat[cell.Strategy] = true
				t.Strategies = append(t.Strategies, cell.Strategy)
			}
			t.Trials = max(t.Trials, cell.Trials)
		}
	}
	for _, k := range order {
		t.Cells = append(t.Cells, byKey[k])
	}
	return t, nil
}
