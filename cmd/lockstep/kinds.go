package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lockstep-dev/lockstep/coverage"
	"github.com/lockstep-dev/lockstep/engine"
	"github.com/lockstep-dev/lockstep/report"
	"github.com/urfave/cli/v2"
)

func kindsCmd() *cli.Command {
	return &cli.Command{
		Name:      "kinds",
		Usage:     "list the kinds of messages traces hold: each protocol's (serving port's) messages by the shape of their first bytes, values masked",
		ArgsUsage: "OUTDIR|TRACE (a run's output directory, for every trial's trace; or a trace.jsonl, or the trial directory that holds it)",
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return badInput(errors.New("kinds: want exactly one OUTDIR or TRACE argument"))
			}
			paths, err := tracesOf(c.Args().First())
			if err != nil {
				return badInput(err)
			}
			ks := coverage.NewKinds()
			for _, p := range paths {
				tr, err := engine.LoadTrace(p)
				if err != nil {
					return badInput(err)
				}
				ks.Messages(tr)
			}
			report.WriteKinds(c.App.Writer, ks.List(), len(paths))
			return nil
		},
	}
}

// tracesOf is the traces an argument names: a run's output directory's
// trials' (trials/*/trace.jsonl, in trial order), a trial directory's, or
// a trace file.
func tracesOf(arg string) ([]string, error) {
	st, err := os.Stat(arg)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{arg}, nil
	}
	if _, err := os.Stat(filepath.Join(arg, "trials")); err == nil {
		paths, err := filepath.Glob(filepath.Join(arg, "trials", "*", "trace.jsonl"))
		if err != nil {
			return nil, err
		}
		if len(paths) == 0 {
			return nil, fmt.Errorf("kinds: %s: no trial wrote a trace (run with --trace-all to keep every trial's)", arg)
		}
		return paths, nil
	}
	path, err := traceFile(arg)
	if err != nil {
		return nil, err
	}
	return []string{path}, nil
}
