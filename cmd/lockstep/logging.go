package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/urfave/cli/v2"
)

// Global logging flags: lockstep's own log (the engine's, the tracer's,
// explain's) goes to stderr at this level. warn is the default: a quiet
// run says only what went wrong.
var (
	logLevelFlag = &cli.StringFlag{Name: "log-level", Value: "warn", Usage: "log at `LEVEL`: debug, info, warn or error"}
	verboseFlag  = &cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "log everything (--log-level debug)"}
)

// parseLevel reads a --log-level value.
func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	switch strings.ToLower(s) {
	case "debug", "info", "warn", "error":
		if err := l.UnmarshalText([]byte(s)); err != nil {
			return 0, err
		}
		return l, nil
	}
	return 0, fmt.Errorf("--log-level: unknown level %q (want debug, info, warn or error)", s)
}

// checkLogFlags refuses a bad --log-level before any command runs.
func checkLogFlags(c *cli.Context) error {
	if _, err := parseLevel(c.String("log-level")); err != nil {
		return badInput(err)
	}
	return nil
}

// logger is the log the global flags ask for, written to w. -v wins over
// --log-level.
func logger(c *cli.Context, w io.Writer) *slog.Logger {
	level, err := parseLevel(c.String("log-level"))
	if err != nil {
		// checkLogFlags refused it before any command ran.
		level = slog.LevelWarn
	}
	if c.Bool("verbose") {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}
