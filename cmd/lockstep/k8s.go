package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/lockstep-dev/lockstep/k8s"
	"github.com/lockstep-dev/lockstep/spec"
	"github.com/urfave/cli/v2"
)

func k8sCmd() *cli.Command {
	return &cli.Command{
		Name:      "k8s",
		Usage:     "write a Kubernetes Indexed Job that runs a campaign as shards, one pod each, into a shared volume",
		ArgsUsage: "SPEC",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "shards", Usage: "number of shards (the Job's completions)", Required: true},
			&cli.StringFlag{Name: "image", Usage: "the `IMAGE` holding lockstep, the spec and its programs", Required: true},
			&cli.StringFlag{Name: "pvc", Usage: "the ReadWriteMany PersistentVolumeClaim `NAME` the shards write to", Required: true},
			&cli.StringFlag{Name: "results", Value: "/results", Usage: "where the claim is mounted in the pods"},
			&cli.StringFlag{Name: "spec-path", Usage: "the spec's `PATH` inside the image (default: SPEC as given)"},
			&cli.StringFlag{Name: "name", Usage: "the Job's name (default: lockstep-SPECNAME)"},
			&cli.StringFlag{Name: "namespace", Usage: "the Job's namespace"},
			&cli.IntFlag{Name: "parallelism", Usage: "pods running at once (default: --shards)"},
			&cli.BoolFlag{Name: "caps", Usage: "grant the capabilities lockstep needs instead of a privileged container (the runtime must give a writable cgroup v2)"},
			&cli.StringFlag{Name: "cpu", Value: "1", Usage: "CPUs requested per pod"},
			&cli.IntFlag{Name: "retries", Value: 1, Usage: "times a shard's pod may fail before its index is failed"},
			&cli.IntFlag{Name: "trials", Aliases: []string{"n"}, Usage: "trials of the whole campaign (default: the spec's)"},
			&cli.StringFlag{Name: "strategy", Aliases: []string{"s"}, Usage: "the campaign's strategy (default: the spec's)"},
			&cli.Int64Flag{Name: "seed", Usage: "campaign seed (default: the spec's)"},
			&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Usage: "trials in parallel in each pod"},
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "write the manifest to `FILE` (default: standard output)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return badInput(errors.New("k8s: want exactly one SPEC argument"))
			}
			sp, err := loadSpec(c.Context, c.Args().First())
			if err != nil {
				return badInput(err)
			}
			if n := c.Int("trials"); n < 0 || n > spec.MaxTrials {
				return badInput(fmt.Errorf("k8s: --trials must be between 0 and %d", spec.MaxTrials))
			}
			j := &k8s.Job{
				Name: c.String("name"), SpecName: sp.Name, Spec: c.Args().First(), Image: c.String("image"),
				Shards: c.Int("shards"), Parallel: c.Int("parallelism"), PVC: c.String("pvc"),
				Results: c.String("results"), Namespace: c.String("namespace"), Caps: c.Bool("caps"),
				CPU: c.String("cpu"), Retries: c.Int("retries"),
			}
			if p := c.String("spec-path"); p != "" {
				j.Spec = p
			}
			if c.Int("jobs") < 0 || c.IsSet("jobs") && c.Int("jobs") < 1 {
				return badInput(errors.New("k8s: --jobs must be at least 1"))
			}
			for _, f := range []struct {
				name, value string
			}{
				{"trials", strconv.Itoa(c.Int("trials"))}, {"strategy", c.String("strategy")},
				{"seed", strconv.FormatInt(c.Int64("seed"), 10)}, {"jobs", strconv.Itoa(c.Int("jobs"))},
			} {
				if c.IsSet(f.name) {
					j.RunArgs = append(j.RunArgs, "--"+f.name, f.value)
				}
			}
			b, err := j.YAML()
			if err != nil {
				return badInput(fmt.Errorf("k8s: %w", err))
			}
			write := func(w io.Writer) error { _, err := w.Write(b); return err }
			if p := c.String("out"); p != "" {
				if err := writeFile(p, write); err != nil {
					return &exitError{code: 2, err: fmt.Errorf("--out: %w", err)}
				}
				fmt.Fprintf(c.App.Writer, "wrote %s: Job %s, %d shards into %s on claim %s; then `lockstep merge %s`\n",
					p, j.JobName(), j.Shards, j.OutDir(), j.PVC, j.OutDir())
				return nil
			}
			return write(c.App.Writer)
		},
	}
}
