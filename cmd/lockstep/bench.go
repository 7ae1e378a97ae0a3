package main

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/engine"
	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"
)

// benchCell is one bug × strategy of the hit-ratio table.
type benchCell struct {
	Bug, Strategy string
	Trials        int
	Failures      int
	FirstFailure  int // trial index of the first failure, -1 if none
	PerTrial      time.Duration
}

func (c benchCell) ratio() float64 { return float64(c.Failures) / float64(max(c.Trials, 1)) }

func benchCmd() *cli.Command {
	return &cli.Command{
		Name:      "bench",
		Usage:     "run every bug spec with every strategy and write the hit-ratio table (Morpheus Table 3 style)",
		ArgsUsage: "SPEC...",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "trials", Aliases: []string{"n"}, Value: 1000, Usage: "trials per cell"},
			&cli.BoolFlag{Name: "quick", Usage: "100 trials per cell"},
			&cli.StringFlag{Name: "strategies", Value: "native,random,pct,pos,pos*,random+,pct+,pos+,pos*+", Usage: "comma-separated strategies; native = plain runs without lockstep"},
			&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Value: 1, Usage: "parallel trials (each job pins itself to one CPU)"},
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Value: "bench-out", Usage: "output directory for table.md and table.csv"},
			&cli.BoolFlag{Name: "from-csv", Usage: "the arguments are table.csv files of earlier runs: merge them (later files replace earlier cells) and write the table"},
		},
		Action: func(c *cli.Context) error {
			if c.Bool("from-csv") {
				return mergeTables(c)
			}
			if c.NArg() == 0 {
				return badInput(errors.New("bench: want one or more SPEC arguments"))
			}
			trials := c.Int("trials")
			if c.Bool("quick") {
				trials = 100
			}
			strategies := strings.Split(c.String("strategies"), ",")
			var specs []*engine.Spec
			for _, p := range c.Args().Slice() {
				s, err := engine.LoadSpec(p)
				if err != nil {
					return badInput(err)
				}
				specs = append(specs, s)
			}
			out := c.String("out")
			if err := os.MkdirAll(out, 0o755); err != nil {
				return err
			}
			var cells []benchCell
			stopped := false
		specs:
			for _, s := range specs {
				for _, st := range strategies {
					start := time.Now()
					jobs := c.Int("jobs")
					if st == "native" {
						// The baseline is a user's plain runs, one at a time: parallel
						// runs on few cores would add their own scheduling noise.
						jobs = 1
					}
					sum, err := engine.Run(c.Context, s, engine.RunOptions{
						Trials: trials, Strategy: st, Jobs: jobs, Native: st == "native",
						OutDir: filepath.Join(out, "runs", s.Name, strings.ReplaceAll(st, "*", "star")),
					})
					if err != nil {
						if sig := interruption(c.Context); sig != nil {
							stopped = true
							break specs
						}
						return &exitError{code: 2, err: fmt.Errorf("%s with %s: %w", s.Name, st, err)}
					}
					cell := benchCell{Bug: s.Name, Strategy: st, Trials: sum.Trials, Failures: sum.Failures, FirstFailure: -1,
						PerTrial: time.Since(start) / time.Duration(max(sum.Trials, 1))}
					if sum.First != nil {
						cell.FirstFailure = sum.First.Index
					}
					fmt.Fprintf(c.App.ErrWriter, "%-12s %-8s %4d/%d failures (%.4f), %v per trial\n",
						s.Name, st, cell.Failures, cell.Trials, cell.ratio(), cell.PerTrial.Round(time.Millisecond))
					cells = append(cells, cell)
					// Keep the CSV current: a long run stopped early still has
					// every finished cell (merge runs with --from-csv).
					if f, err := os.Create(filepath.Join(out, "table.csv")); err == nil {
						writeBenchCSV(f, cells)
						f.Close()
					}
					if sum.Interrupted {
						// The tables keep the cells finished so far and the
						// interrupted one, with the trials it ran.
						stopped = true
						break specs
					}
				}
			}
			md, err := os.Create(filepath.Join(out, "table.md"))
			if err != nil {
				return err
			}
			defer md.Close()
			writeBenchMarkdown(md, cells, strategies, trials)
			writeBenchMarkdown(c.App.Writer, cells, strategies, trials)
			f, err := os.Create(filepath.Join(out, "table.csv"))
			if err != nil {
				return err
			}
			defer f.Close()
			if err := writeBenchCSV(f, cells); err != nil {
				return err
			}
			if stopped {
				if sig := interruption(c.Context); sig != nil {
					return sig
				}
				return &exitError{code: 130, err: errors.New("interrupted")}
			}
			return nil
		},
	}
}

// geomean of hit ratios; a cell with no hit counts as 1/(2N) so that one
// miss does not zero a strategy's mean (the table marks such cells).
func geomean(cells []benchCell) float64 {
	if len(cells) == 0 {
		return 0
	}
	sum := 0.0
	for _, c := range cells {
		r := c.ratio()
		if r == 0 {
			r = 1 / (2 * float64(max(c.Trials, 1)))
		}
		sum += math.Log(r)
	}
	return math.Exp(sum / float64(len(cells)))
}

// fewerTrials names the bugs whose cells ran fewer trials than the table's
// nominal count (a merged table can mix runs).
func fewerTrials(cells []benchCell, bugs []string, trials int) string {
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

func writeBenchMarkdown(w io.Writer, cells []benchCell, strategies []string, trials int) {
	bugs := []string{}
	seen := map[string]bool{}
	by := map[string]benchCell{}
	for _, c := range cells {
		if !seen[c.Bug] {
			seen[c.Bug] = true
			bugs = append(bugs, c.Bug)
		}
		by[c.Bug+"|"+c.Strategy] = c
	}
	var u unix.Utsname
	unix.Uname(&u)
	fmt.Fprintf(w, "Measured %s on %d CPUs, Linux %s.\n\n", time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), unix.ByteSliceToString(u.Release[:]))
	fmt.Fprintf(w, "Hit ratio (failing trials / trials), %d trials per cell%s; `0*` = no failure found; native = plain runs without lockstep.\n\n", trials, fewerTrials(cells, bugs, trials))
	fmt.Fprintf(w, "| bug |")
	for _, s := range strategies {
		fmt.Fprintf(w, " %s |", s)
	}
	fmt.Fprintf(w, "\n|---|")
	for range strategies {
		fmt.Fprintf(w, "---|")
	}
	fmt.Fprintln(w)
	for _, b := range bugs {
		fmt.Fprintf(w, "| %s |", b)
		for _, s := range strategies {
			c := by[b+"|"+s]
			if c.Failures == 0 {
				fmt.Fprintf(w, " 0* |")
			} else {
				fmt.Fprintf(w, " %.4f |", c.ratio())
			}
		}
		fmt.Fprintln(w)
	}
	means := map[string]float64{}
	fmt.Fprintf(w, "| **geomean** |")
	for _, s := range strategies {
		var cs []benchCell
		for _, b := range bugs {
			cs = append(cs, by[b+"|"+s])
		}
		means[s] = geomean(cs)
		fmt.Fprintf(w, " %.4f |", means[s])
	}
	fmt.Fprintln(w)
	if ref, ok := means["pos+"]; ok && ref > 0 {
		fmt.Fprintf(w, "| ratio to POS+ |")
		for _, s := range strategies {
			fmt.Fprintf(w, " %.2f |", means[s]/ref)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "| mean trials to first failure |")
	for _, s := range strategies {
		sum, n := 0, 0
		for _, b := range bugs {
			if c := by[b+"|"+s]; c.FirstFailure >= 0 {
				sum += c.FirstFailure + 1
				n++
			}
		}
		if n == 0 {
			fmt.Fprintf(w, " – |")
		} else {
			fmt.Fprintf(w, " %.1f |", float64(sum)/float64(n))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "| real time per trial |")
	for _, s := range strategies {
		var d time.Duration
		for _, b := range bugs {
			d += by[b+"|"+s].PerTrial
		}
		fmt.Fprintf(w, " %v |", (d / time.Duration(max(len(bugs), 1))).Round(time.Millisecond))
	}
	fmt.Fprintln(w)
	var imps []string
	keys := make([]string, 0, len(means))
	for s := range means {
		keys = append(keys, s)
	}
	sort.Strings(keys)
	for _, s := range keys {
		if strings.HasSuffix(s, "+") {
			if base, ok := means[strings.TrimSuffix(s, "+")]; ok && base > 0 {
				imps = append(imps, fmt.Sprintf("%s over %s: %+.1f%%", s, strings.TrimSuffix(s, "+"), 100*(means[s]/base-1)))
			}
		}
	}
	if len(imps) > 0 {
		fmt.Fprintf(w, "\nImprovement from conflict analysis (geomean): %s\n", strings.Join(imps, "; "))
	}
}

func writeBenchCSV(w io.Writer, cells []benchCell) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"bug", "strategy", "trials", "failures", "hit_ratio", "first_failure", "ms_per_trial"})
	for _, c := range cells {
		cw.Write([]string{c.Bug, c.Strategy, fmt.Sprint(c.Trials), fmt.Sprint(c.Failures), fmt.Sprintf("%.6f", c.ratio()),
			fmt.Sprint(c.FirstFailure), fmt.Sprintf("%.1f", float64(c.PerTrial.Microseconds())/1000)})
	}
	cw.Flush()
	return cw.Error()
}

// mergeTables rebuilds the table from earlier runs' CSV files, so a bug
// rerun on its own replaces its row without rerunning the rest.
func mergeTables(c *cli.Context) error {
	if c.NArg() == 0 {
		return badInput(errors.New("bench --from-csv: want one or more table.csv files"))
	}
	var order []string
	byKey := map[string]benchCell{}
	var strategies []string
	seenStrat := map[string]bool{}
	trials := 0
	for _, p := range c.Args().Slice() {
		f, err := os.Open(p)
		if err != nil {
			return badInput(err)
		}
		rows, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil || len(rows) == 0 || rows[0][0] != "bug" {
			return badInput(fmt.Errorf("%s: not a lockstep bench table.csv", p))
		}
		for i, r := range rows[1:] {
			if len(r) != 7 {
				return badInput(fmt.Errorf("%s:%d: want 7 fields, got %d", p, i+2, len(r)))
			}
			var cell benchCell
			var ms float64
			cell.Bug, cell.Strategy = r[0], r[1]
			_, err1 := fmt.Sscan(r[2], &cell.Trials)
			_, err2 := fmt.Sscan(r[3], &cell.Failures)
			_, err3 := fmt.Sscan(r[5], &cell.FirstFailure)
			_, err4 := fmt.Sscan(r[6], &ms)
			if err := errors.Join(err1, err2, err3, err4); err != nil {
				return badInput(fmt.Errorf("%s:%d: %w", p, i+2, err))
			}
			cell.PerTrial = time.Duration(ms * float64(time.Millisecond))
			key := cell.Bug + "|" + cell.Strategy
			if _, ok := byKey[key]; !ok {
				order = append(order, key)
			}
			byKey[key] = cell
			if !seenStrat[cell.Strategy] {
				seenStrat[cell.Strategy] = true
				strategies = append(strategies, cell.Strategy)
			}
			trials = max(trials, cell.Trials)
		}
	}
	var cells []benchCell
	for _, k := range order {
		cells = append(cells, byKey[k])
	}
	out := c.String("out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	md, err := os.Create(filepath.Join(out, "table.md"))
	if err != nil {
		return err
	}
	defer md.Close()
	writeBenchMarkdown(md, cells, strategies, trials)
	writeBenchMarkdown(c.App.Writer, cells, strategies, trials)
	f, err := os.Create(filepath.Join(out, "table.csv"))
	if err != nil {
		return err
	}
	defer f.Close()
	return writeBenchCSV(f, cells)
}
