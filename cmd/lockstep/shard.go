package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lockstep-dev/lockstep/engine"
	"github.com/lockstep-dev/lockstep/report"
	"github.com/lockstep-dev/lockstep/shard"
	"github.com/lockstep-dev/lockstep/spec"
	"github.com/urfave/cli/v2"
)

var (
	shardFlag    = &cli.StringFlag{Name: "shard", Usage: "run only shard `I/N` of the campaign (trials I, I+N, I+2N, ...), into OUT/shard-I-of-N for `lockstep merge`; N alone takes I from --shard-index-env"}
	shardEnvFlag = &cli.StringFlag{Name: "shard-index-env", Value: shard.IndexEnv, Usage: "with --shard N: the environment `VARIABLE` holding the shard's index (SLURM_ARRAY_TASK_ID on Slurm)"}
)

// shardRun narrows run's options to the shard --shard names: its trials,
// written below the output directory in the shard's own directory.
func shardRun(c *cli.Context, sp *spec.Spec, opts *engine.RunOptions) error {
	sh, err := shard.Parse(c.String("shard"), c.String("shard-index-env"), os.Getenv)
	if err != nil {
		return badInput(err)
	}
	if opts.StopOnFirst {
		// Each shard would stop at its own first failure: the merged
		// campaign would be no campaign one process runs.
		return badInput(errors.New("run: --stop-on-first cannot be combined with --shard"))
	}
	out := opts.OutDir
	if out == "" {
		if out, err = filepath.Abs(filepath.Join("lockstep-out", sp.Name)); err != nil {
			return badInput(err)
		}
	}
	opts.Shard = sh
	opts.OutDir = filepath.Join(out, shard.DirName(sh))
	return nil
}

// shardDone writes a shard's result for the merge and says what the shard
// found. Its exit status says whether it ran, not what it found (a job
// engine would retry a shard that exits 1): merge's status says that.
// dir is the shard's output directory, as shardRun chose it.
func shardDone(c *cli.Context, sum *engine.Summary, dir string, start time.Time) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return &exitError{code: 2, err: err}
	}
	if err := shard.Write(dir, sum, start); err != nil {
		return &exitError{code: 2, err: err}
	}
	fmt.Fprintf(c.App.Writer, "shard %v of spec %s, strategy %s: %d of the campaign's %d trials in %v, %d failures; result in %s\n",
		sum.Shard, sum.Spec.Name, sum.Strategy, sum.Trials, sum.Planned, sum.Duration.Round(time.Millisecond), sum.Failures,
		filepath.Join(dir, shard.ResultFile))
	if err := writeCIReports(c, report.Campaign{Spec: sum.Spec.Name, Summary: sum}); err != nil {
		return err
	}
	if sum.Interrupted {
		return interruptedStatus(c.Context)
	}
	return nil
}

func mergeCmd() *cli.Command {
	return &cli.Command{
		Name:      "merge",
		Usage:     "join the results of a campaign's shards (run --shard) into the campaign's summary and reports",
		ArgsUsage: "DIR... (shard directories, or output directories holding shard-I-of-N directories)",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "stats", Usage: "print conflict-prediction accuracy (+ strategies) and where real time went"},
			&cli.StringFlag{Name: "junit", Usage: "also write the result as JUnit XML to `FILE` (a test case per campaign)"},
			&cli.StringFlag{Name: "json", Usage: "also write the summary as JSON to `FILE`"},
			&cli.StringFlag{Name: "history", Usage: "write the merged conflict history (+ strategies) to `FILE`"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return badInput(errors.New("merge: want at least one DIR"))
			}
			camp, err := shard.Merge(c.Args().Slice())
			if err != nil {
				return withCIReports(c, badInput(fmt.Errorf("merge: %w", err)), report.Campaign{Spec: c.Args().First(), Err: err})
			}
			sum := camp.Summary
			if p := c.String("history"); p != "" {
				if camp.History == nil {
					return badInput(fmt.Errorf("merge: --history: strategy %s keeps no conflict history", sum.Strategy))
				}
				if err := camp.History.Save(p); err != nil {
					return &exitError{code: 2, err: fmt.Errorf("--history: %w", err)}
				}
			}
			report.WriteSummary(c.App.Writer, sum, c.Bool("stats"))
			if err := writeCIReports(c, report.Campaign{Spec: sum.Spec.Name, Summary: sum}); err != nil {
				return err
			}
			return runStatus(c.Context, sum)
		},
	}
}
