package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// version is set by the linker for releases.
var version = "0.1.0-dev"

func newApp() *cli.App {
	return &cli.App{
		Name:                 "lockstep",
		Usage:                "find and replay concurrency bugs in unmodified distributed systems",
		HideHelpCommand:      true,
		EnableBashCompletion: false,
		Commands: []*cli.Command{
			{
				Name:  "version",
				Usage: "print the version",
				Action: func(c *cli.Context) error {
					fmt.Fprintln(c.App.Writer, "lockstep", version)
					return nil
				},
			},
		},
	}
}
