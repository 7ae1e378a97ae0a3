package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/engine"
)

// TestWriteFindings: a line a finding, its standing first, and the counts
// the exit status goes by.
func TestWriteFindings(t *testing.T) {
	var b bytes.Buffer
	missing, degraded := writeFindings(&b, []engine.Finding{
		{What: "kernel", Standing: engine.Has, Detail: "6.18"},
		{What: "eBPF", Standing: engine.Degraded, Detail: "cannot load"},
		{What: "a trial", Standing: engine.Lacks, Detail: "not run"},
	})
	want := "ok       kernel              6.18\nwarn     eBPF                cannot load\nMISSING  a trial             not run\n"
	if b.String() != want || missing != 1 || degraded != 1 {
		t.Fatalf("got %q (%d missing, %d degraded), want %q (1, 1)", b.String(), missing, degraded, want)
	}
}

// TestDoctorCommand: where trials run, the command says so and exits 0.
func TestDoctorCommand(t *testing.T) {
	requireTrials(t)
	code, out, stderr := runCLI(t, "doctor")
	if code != 0 || !strings.Contains(out, "ok       a trial") || !strings.Contains(out, "lockstep can run trials here") {
		t.Fatalf("exit %d: %s%s", code, out, stderr)
	}
}
