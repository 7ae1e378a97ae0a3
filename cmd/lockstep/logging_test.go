package main

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestLogFlags: --log-level and -v, before the command or among its
// flags and arguments, reach the logger a command hands down; a bad level
// is bad input.
func TestLogFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want slog.Level // the lowest level logged
	}{
		{[]string{"probe"}, slog.LevelWarn},
		{[]string{"--log-level", "debug", "probe"}, slog.LevelDebug},
		{[]string{"--log-level=info", "probe", "arg"}, slog.LevelInfo},
		{[]string{"--log-level", "ERROR", "probe"}, slog.LevelError},
		{[]string{"-v", "probe"}, slog.LevelDebug},
		{[]string{"probe", "arg", "-v"}, slog.LevelDebug},
		{[]string{"probe", "--log-level", "info", "arg"}, slog.LevelInfo},
		{[]string{"probe", "arg", "--log-level=error", "--out", "x"}, slog.LevelError},
		{[]string{"--log-level", "error", "-v", "probe"}, slog.LevelDebug},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			app := newApp()
			var errb bytes.Buffer
			app.ErrWriter = &errb
			var got *slog.Logger
			var gotArgs []string
			app.Commands = append(app.Commands, &cli.Command{
				Name:  "probe",
				Flags: []cli.Flag{&cli.StringFlag{Name: "out"}},
				Action: func(c *cli.Context) error {
					got, gotArgs = logger(c, c.App.ErrWriter), c.Args().Slice()
					return nil
				},
			})
			if err := runApp(context.Background(), app, append([]string{"lockstep"}, tc.args...)); err != nil {
				t.Fatal(err)
			}
			if got == nil {
				t.Fatal("the command did not run")
			}
			for _, l := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
				if on := got.Enabled(context.Background(), l); on != (l >= tc.want) {
					t.Errorf("level %v enabled: %v, want lowest %v", l, on, tc.want)
				}
			}
			var wantArgs []string
			if slices.Contains(tc.args, "arg") {
				wantArgs = []string{"arg"}
			}
			if !slices.Equal(gotArgs, wantArgs) {
				t.Errorf("arguments %q, want %q", gotArgs, wantArgs)
			}
			got.Debug("to stderr")
			if (tc.want == slog.LevelDebug) != strings.Contains(errb.String(), "level=DEBUG msg=\"to stderr\"") {
				t.Errorf("stderr %q", errb.String())
			}
		})
	}
	for _, args := range [][]string{{"--log-level", "loud", "version"}, {"version", "--log-level", "trace"}} {
		code, _, stderr := runCLI(t, args...)
		if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "lockstep: --log-level: unknown level") ||
			!strings.Contains(stderr, "(want debug, info, warn or error)") {
			t.Errorf("%q: exit %d, stderr %q; want 2 and one line naming --log-level", args, code, stderr)
		}
	}
	if code, stdout, _ := runCLI(t, "--version"); code != 0 || !strings.HasPrefix(stdout, "lockstep version ") {
		t.Errorf("--version: exit %d, %q", code, stdout)
	}
}
