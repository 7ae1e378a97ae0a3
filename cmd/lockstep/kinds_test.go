package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKinds: `kinds` lists a trace's kinds by protocol, and an output
// directory's over all its trials' traces, numbered in trial order.
func TestKinds(t *testing.T) {
	trace := "../../coverage/testdata/locks-1.trace.jsonl"
	code, stdout, stderr := runCLI(t, "kinds", trace)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{
		"8 kinds of 23 messages in 1 trace\n",
		"\nport :7001: 4 kinds, 10 messages\n",
		"\nport :7000: 4 kinds, 13 messages\n",
		`  k2 "ACQUIRE"`, `"ACQUIRE x\n"`,
		`  k8 "RELEASED"`,
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}

	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	for _, trial := range []string{"00000", "00001"} {
		dir := filepath.Join(out, "trials", trial)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "trace.jsonl"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, stdout, stderr = runCLI(t, "kinds", out)
	if code != 0 || !strings.HasPrefix(stdout, "8 kinds of 46 messages in 2 traces\n") {
		t.Errorf("kinds OUTDIR: exit %d, stderr %q, stdout\n%s", code, stderr, stdout)
	}
	// A trial's directory stands for its trace.
	if code, stdout, _ := runCLI(t, "kinds", filepath.Join(out, "trials", "00001")); code != 0 || !strings.HasPrefix(stdout, "8 kinds of 23 messages in 1 trace\n") {
		t.Errorf("kinds TRIALDIR: exit %d, stdout\n%s", code, stdout)
	}
	// A run that kept no trace says so.
	empty := t.TempDir()
	os.MkdirAll(filepath.Join(empty, "trials", "00000"), 0o755)
	if code, _, stderr := runCLI(t, "kinds", empty); code != 2 || !strings.Contains(stderr, "--trace-all") {
		t.Errorf("kinds of a run with no traces: exit %d, stderr %q", code, stderr)
	}
}
