package main

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/lockstep-dev/lockstep/engine"
)

func doctorCmd() *cli.Command {
	return &cli.Command{
		Name:  "doctor",
		Usage: "say whether this machine can run trials and what it lacks, then run one trial to show that it can",
		Action: func(c *cli.Context) error {
			fs := engine.Doctor(c.Context)
			missing, degraded := writeFindings(c.App.Writer, fs)
			if missing > 0 {
				return &exitError{code: 2, err: fmt.Errorf("this machine cannot run trials: %d thing(s) missing (docs/ci.md says what lockstep needs)", missing)}
			}
			if degraded > 0 {
				fmt.Fprintf(c.App.Writer, "lockstep can run trials here, with %d warning(s)\n", degraded)
			} else {
				fmt.Fprintln(c.App.Writer, "lockstep can run trials here")
			}
			return nil
		},
	}
}

// writeFindings prints one line a finding, its standing first, and counts
// those missing and those degraded.
func writeFindings(w io.Writer, fs []engine.Finding) (missing, degraded int) {
	for _, f := range fs {
		fmt.Fprintf(w, "%-8s %-19s %s\n", f.Standing, f.What, f.Detail)
		switch f.Standing {
		case engine.Lacks:
			missing++
		case engine.Degraded:
			degraded++
		}
	}
	return missing, degraded
}
