package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/lockstep-dev/lockstep/compose"
	"github.com/lockstep-dev/lockstep/image"
	"github.com/lockstep-dev/lockstep/spec"
)

func importCmd() *cli.Command {
	return &cli.Command{
		Name:      "import",
		Usage:     "write a spec from a compose file (lockstep run also takes the compose file itself)",
		ArgsUsage: "COMPOSE_FILE",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "write the spec to `FILE` (default: standard output)"},
			&cli.BoolFlag{Name: "no-check", Usage: "write the spec without loading it (its images need not exist yet)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return badInput(errors.New("import: want exactly one COMPOSE_FILE argument"))
			}
			path := c.Args().First()
			data, err := os.ReadFile(path)
			if err != nil {
				return badInput(err)
			}
			out, err := compose.Import(path, data)
			if err != nil {
				return badInput(err)
			}
			if !c.Bool("no-check") {
				// As lockstep run would load it: the images exist and hold
				// their programs.
				sp, err := spec.Parse(path, out)
				if err == nil {
					err = image.Resolve(c.Context, sp)
				}
				if err != nil {
					return badInput(fmt.Errorf("%w (in the spec imported from it; --no-check writes it anyway)", err))
				}
			}
			if o := c.String("out"); o != "" {
				if err := os.WriteFile(o, out, 0o644); err != nil {
					return badInput(err)
				}
				return nil
			}
			_, err = c.App.Writer.Write(out)
			return err
		},
	}
}
