package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCLI runs the app in-process and returns its exit status and output.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	app := newApp()
	var out, errb bytes.Buffer
	app.Writer, app.ErrWriter = &out, &errb
	err := app.RunContext(context.Background(), append([]string{"lockstep"}, args...))
	code := 0
	if err != nil {
		code = 2
		if ec, ok := err.(exitCoder); ok {
			code = ec.ExitCode()
		}
		if msg := err.Error(); msg != "" {
			errb.WriteString("lockstep: " + msg + "\n")
		}
	}
	return code, out.String(), errb.String()
}

// TestBadInputExitsTwo: bad specs, traces and usage exit with status 2
// and a single line naming the problem.
func TestBadInputExitsTwo(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.jsonl")
	os.WriteFile(junk, []byte("{not json\n"), 0o644)
	bad, _ := filepath.Glob("../../testdata/specs/bad/*.yaml")
	if len(bad) == 0 {
		t.Fatal("no bad specs found")
	}
	cases := [][]string{
		{"run"},
		{"run", "/no/such/spec.yaml"},
		{"run", "--jobs", "0", bad[0]},
		{"run", "--strategy", "dfs", "../../testdata/demo/demo.yaml"},
		{"replay", "/no/such/trace.jsonl"},
		{"replay", junk},
		{"show", junk},
		{"run", "--no-such-flag", "x.yaml"},
	}
	for _, f := range bad {
		cases = append(cases, []string{"run", f})
	}
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, _, stderr := runCLI(t, args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2 (stderr %q)", code, stderr)
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if stderr == "" || len(lines) != 1 || !strings.HasPrefix(lines[0], "lockstep: ") {
				t.Fatalf("want one error line, got %q", stderr)
			}
		})
	}
}

func TestFewerTrials(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cells []benchCell
		want  string
	}{
		{"uniform", []benchCell{{Bug: "a", Trials: 1000}, {Bug: "b", Trials: 1000}}, ""},
		{"one bug short", []benchCell{{Bug: "a", Trials: 1000}, {Bug: "b", Trials: 100}, {Bug: "b", Trials: 200}}, " (fewer for b: 100)"},
		{"two bugs short", []benchCell{{Bug: "a", Trials: 10}, {Bug: "b", Trials: 1000}, {Bug: "c", Trials: 100}}, " (fewer for a: 10, c: 100)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fewerTrials(tc.cells, []string{"a", "b", "c"}, 1000); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
