package main

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/lockstep-dev/lockstep/spec"
)

// runContext parses args with run's own flags, as the app would.
func runContext(t *testing.T, args ...string) (*cli.Context, error) {
	t.Helper()
	cmd := runCmd()
	set := flag.NewFlagSet("run", flag.ContinueOnError)
	set.SetOutput(io.Discard)
	for _, f := range cmd.Flags {
		if err := f.Apply(set); err != nil {
			t.Fatalf("applying flag %v: %v", f.Names(), err)
		}
	}
	if err := set.Parse(args); err != nil {
		return nil, err
	}
	return cli.NewContext(newApp(), set, nil), nil
}

// TestConflictFlags: --scheme and --conflict-weight override the spec's
// scheduler.conflict; a value the spec would refuse is refused with one
// line naming the flag and exit status 2, before anything runs.
func TestConflictFlags(t *testing.T) {
	const demo = shellSpec
	for _, tc := range []struct {
		args       []string
		mode       string  // the mode after the flags ("" for an error)
		weight     float64 // the weight after the flags
		scheme     string  // the scheme after the flags
		errContain string  // for a refused value
	}{
		{args: nil, mode: "skip", scheme: "proc+pc+msg+peer+nth"},
		{args: []string{"--conflict-weight", "10"}, mode: "weight", weight: 10, scheme: "proc+pc+msg+peer+nth"},
		{args: []string{"--conflict-weight=0.5"}, mode: "weight", weight: 0.5, scheme: "proc+pc+msg+peer+nth"},
		{args: []string{"--conflict-weight", "1e6", "--scheme", "proc+pc"}, mode: "weight", weight: 1e6, scheme: "proc+pc"},
		{args: []string{"--scheme", "pid+stack:4+kind"}, mode: "skip", scheme: "pid+stack:4+kind"},
		{args: []string{"--conflict-weight", "0"}, errContain: "--conflict-weight: must be positive and at most 1e+06, got 0"},
		{args: []string{"--conflict-weight", "-3"}, errContain: "--conflict-weight: must be positive"},
		{args: []string{"--conflict-weight", "1000001"}, errContain: "--conflict-weight: must be positive and at most 1e+06, got 1.000001e+06"},
		{args: []string{"--conflict-weight", "NaN"}, errContain: "--conflict-weight: must be positive and at most 1e+06, got NaN"},
		{args: []string{"--conflict-weight", "+Inf"}, errContain: "got +Inf"},
		{args: []string{"--conflict-weight", "ten"}, errContain: "conflict-weight"},
		{args: []string{"--scheme", "proc+stack:17"}, errContain: "--scheme"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			// Through the whole command: a refused value exits 2 with one
			// line, a valid spec notwithstanding.
			if tc.errContain != "" {
				code, stdout, stderr := runCLI(t, append(append([]string{"run"}, tc.args...), demo)...)
				lines := strings.Split(strings.TrimSpace(stderr), "\n")
				if code != 2 || len(lines) != 1 || !strings.HasPrefix(lines[0], "lockstep: ") || !strings.Contains(lines[0], tc.errContain) {
					t.Fatalf("exit %d, stderr %q (want 2 and one line with %q); stdout %q", code, stderr, tc.errContain, stdout)
				}
				return
			}
			sp, err := spec.Load(demo)
			if err != nil {
				t.Fatal(err)
			}
			c, err := runContext(t, tc.args...)
			if err != nil {
				t.Fatalf("parsing %q: %v", tc.args, err)
			}
			if err := conflictFlags(c, sp); err != nil {
				t.Fatalf("conflictFlags: %v", err)
			}
			got := sp.Scheduler.Conflict
			if got.Mode != tc.mode || got.Weight != tc.weight || got.Scheme != tc.scheme {
				t.Errorf("scheduler.conflict mode %q weight %v scheme %q, want %q %v %q", got.Mode, got.Weight, got.Scheme, tc.mode, tc.weight, tc.scheme)
			}
		})
	}
}
