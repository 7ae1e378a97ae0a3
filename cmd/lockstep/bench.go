package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/engine"
	"github.com/lockstep-dev/lockstep/report"
	"github.com/lockstep-dev/lockstep/spec"
	"github.com/urfave/cli/v2"
)

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
			var specs []*spec.Spec
			for _, p := range c.Args().Slice() {
				s, err := loadSpec(c.Context, p)
				if err != nil {
					return badInput(err)
				}
				specs = append(specs, s)
			}
			out := c.String("out")
			if err := os.MkdirAll(out, 0o755); err != nil {
				return err
			}
			var cells []report.BenchCell
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
						OutDir: filepath.Join(out, "runs", s.Name, strings.ReplaceAll(st, "*", "star")), Replace: true,
						Logger: logger(c, c.App.ErrWriter), DropRecords: true,
					})
					if err != nil {
						if sig := interruption(c.Context); sig != nil {
							stopped = true
							break specs
						}
						return &exitError{code: 2, err: fmt.Errorf("%s with %s: %w", s.Name, st, err)}
					}
					cell := report.BenchCell{Bug: s.Name, Strategy: st, Trials: sum.Trials, Failures: sum.Failures, FirstFailure: -1,
						PerTrial: time.Since(start) / time.Duration(max(sum.Trials, 1))}
					if sum.First != nil {
						cell.FirstFailure = sum.First.Index
					}
					fmt.Fprintf(c.App.ErrWriter, "%-12s %-8s %4d/%d failures (%.4f), %v per trial\n",
						s.Name, st, cell.Failures, cell.Trials, cell.Ratio(), cell.PerTrial.Round(time.Millisecond))
					cells = append(cells, cell)
					// Keep the CSV current: a long run stopped early still has
					// every finished cell (merge runs with --from-csv).
					if f, err := os.Create(filepath.Join(out, "table.csv")); err == nil {
						report.WriteBenchCSV(f, cells)
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
			if err := writeTables(c, cells, strategies, trials); err != nil {
				return err
			}
			if stopped {
				return interruptedStatus(c.Context)
			}
			return nil
		},
	}
}

// mergeTables rebuilds the table from earlier runs' CSV files, so a bug
// rerun on its own replaces its row without rerunning the rest.
func mergeTables(c *cli.Context) error {
	if c.NArg() == 0 {
		return badInput(errors.New("bench --from-csv: want one or more table.csv files"))
	}
	t, err := report.MergeBenchCSV(c.Args().Slice())
	if err != nil {
		return badInput(err)
	}
	return writeTables(c, t.Cells, t.Strategies, t.Trials)
}

// writeTables writes table.md and table.csv to --out and the markdown
// table to standard output.
func writeTables(c *cli.Context, cells []report.BenchCell, strategies []string, trials int) error {
	out := c.String("out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	md, err := os.Create(filepath.Join(out, "table.md"))
	if err != nil {
		return err
	}
	defer md.Close()
	report.WriteBenchMarkdown(md, cells, strategies, trials)
	report.WriteBenchMarkdown(c.App.Writer, cells, strategies, trials)
	f, err := os.Create(filepath.Join(out, "table.csv"))
	if err != nil {
		return err
	}
	defer f.Close()
	return report.WriteBenchCSV(f, cells)
}
