package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/lockstep-dev/lockstep/engine"
	"github.com/lockstep-dev/lockstep/explain"
	"github.com/lockstep-dev/lockstep/report"
	"github.com/lockstep-dev/lockstep/sched"
)

func explainCmd() *cli.Command {
	return &cli.Command{
		Name:      "explain",
		Usage:     "explain a failing trace: the few decisions that cause it, the racing ops by name, when it became inevitable",
		ArgsUsage: "TRACE (a trace.jsonl, or the trial directory that holds it)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "output directory for the runs and the minimized trace (default: beside the trace)"},
			&cli.DurationFlag{Name: "budget", Value: explain.DefaultBudget, Usage: "real time the explanation may take"},
			&cli.IntFlag{Name: "continuations", Value: explain.DefaultContinuations, Usage: "runs per prefix for the probability curve (0: no curve)"},
			&cli.StringFlag{Name: "json", Usage: "also write the explanation as JSON to `FILE`"},
			&cli.StringFlag{Name: "html", Usage: "also write the minimized trace's diagram, with the races highlighted and the probability curve, to `FILE`"},
		},
		Action: func(c *cli.Context) error {
			trace, out, err := traceArgs(c)
			if err != nil {
				return err
			}
			// -v (global, also after the command) logs every run.
			opts := explain.Options{Budget: c.Duration("budget"), Out: out, Continuations: c.Int("continuations"), Logger: logger(c, c.App.ErrWriter)}
			if opts.Continuations == 0 {
				opts.Continuations = -1
			}
			ex, err := explain.Explain(c.Context, trace, opts)
			if err != nil {
				return traceFailed(c.Context, err)
			}
			explain.WriteText(c.App.Writer, ex)
			if p := c.String("json"); p != "" {
				if err := writeFile(p, func(w io.Writer) error {
					enc := json.NewEncoder(w)
					enc.SetIndent("", "  ")
					return enc.Encode(ex)
				}); err != nil {
					return &exitError{code: 2, err: fmt.Errorf("--json: %w", err)}
				}
			}
			if p := c.String("html"); p != "" {
				if err := writeExplainHTML(p, ex); err != nil {
					return &exitError{code: 2, err: fmt.Errorf("--html: %w", err)}
				}
				fmt.Fprintf(c.App.Writer, "wrote %s\n", p)
			}
			return nil
		},
	}
}

// writeExplainHTML draws the minimized trace with the explanation's
// highlights.
func writeExplainHTML(path string, ex *explain.Explanation) error {
	src := ex.MinimizedTrace
	if src == "" {
		src = ex.Trace
	}
	tr, err := engine.LoadTrace(src)
	if err != nil {
		return err
	}
	return writeFile(path, func(w io.Writer) error { return report.WriteHTMLExplained(w, tr, htmlNotes(ex)) })
}

func htmlNotes(ex *explain.Explanation) report.Explained {
	n := report.Explained{Failure: ex.Failure, Highlight: map[int]string{}, Slice: ex.Slice}
	for _, v := range ex.Faults {
		if v.Needed {
			n.Faults = append(n.Faults, fmt.Sprintf("needed: %s; without it: %s", v.Fault, v.Without))
		} else {
			n.Faults = append(n.Faults, "not needed: "+v.Fault)
		}
	}
	if c := ex.Chance; c != nil && c.With.Runs > 0 {
		n.Chance = c.Summary()
		for _, f := range c.Without {
			n.ChanceFaults = append(n.ChanceFaults, f.String())
		}
		if c.None != nil {
			n.ChanceFaults = append(n.ChanceFaults, c.NoneSaid())
		}
		if c.Bare != nil {
			n.ChanceFaults = append(n.ChanceFaults, c.BareSaid())
		}
	}
	for i, r := range ex.Races {
		n.Races = append(n.Races, r.Summary)
		for j, s := range r.Steps {
			if s != 0 {
				n.Highlight[s] = fmt.Sprintf("race %d, %s", i+1, [2]string{"first", "second"}[j])
			}
		}
	}
	for _, p := range ex.Curve {
		label := fmt.Sprintf("%d/%d", p.Failed, p.Runs)
		if j := ex.Jump; j != nil && j.Clear && p.Step == j.Step {
			label += ", the jump: " + j.Op.String()
		}
		n.Curve = append(n.Curve, report.CurvePoint{Step: p.Step, P: p.P(), Label: label})
	}
	return n
}

// explainFirst prints the explanation of a campaign's first failure under
// its summary; an explanation that cannot be made is said so, and the
// campaign's result stands.
func explainFirst(c *cli.Context, trace string, budget time.Duration) {
	fmt.Fprintln(c.App.Writer)
	ex, err := explain.Explain(c.Context, trace, explain.Options{Budget: budget, Out: filepath.Join(filepath.Dir(trace), "explain"), Logger: logger(c, c.App.ErrWriter)})
	if err != nil {
		fmt.Fprintf(c.App.Writer, "no explanation of the first failure: %v\n", err)
		return
	}
	explain.WriteText(c.App.Writer, ex)
}

// showSlice is show --slice: the trace's ops in its failure's causal past.
func showSlice(c *cli.Context, tr *sched.Trace) error {
	node := ""
	if tr.Outcome != nil {
		node = tr.Outcome.Node
	}
	steps := explain.Slice(tr.Records, explain.FailingNode(node))
	if p := c.String("html"); p != "" {
		if err := writeFile(p, func(w io.Writer) error {
			return report.WriteHTMLExplained(w, tr, report.Explained{Slice: steps})
		}); err != nil {
			return &exitError{code: 2, err: fmt.Errorf("--html: %w", err)}
		}
		fmt.Fprintf(c.App.Writer, "wrote %s (%d ops, %d in the slice)\n", p, len(tr.Records), len(steps))
		return nil
	}
	in := map[int]bool{}
	for _, s := range steps {
		in[s] = true
	}
	sliced := *tr
	sliced.Records = nil
	for _, r := range tr.Records {
		if in[r.Step] {
			sliced.Records = append(sliced.Records, r)
		}
	}
	report.WriteTrace(c.App.Writer, &sliced)
	fmt.Fprintf(c.App.Writer, "(the causal slice: %d of the trace's %d ops)\n", len(sliced.Records), len(tr.Records))
	return nil
}
