package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/sched"
)

// tcpNodes are two echo servers and two clients that make a round trip
// every 20 ms: what crash, partition, pause, clock, drift and reset act on.
const tcpNodes = `nodes:
  - name: s1
    role: server
    command: ["%[1]s/pingpong_server", "7000"]
    ready: {listen: 7000}
  - name: s2
    role: server
    command: ["%[1]s/pingpong_server", "7000"]
    ready: {listen: 7000}
  - name: c1
    role: client
    command: ["%[1]s/tick_client", "s1", "7000", "20", "20"]
  - name: c2
    role: client
    command: ["%[1]s/tick_client", "s2", "7000", "20", "20"]
`

// udpNodes are two UDP echo servers and their clients, for drops.
const udpNodes = `nodes:
  - name: s1
    role: server
    command: ["%[1]s/udp_echo", "7000"]
  - name: s2
    role: server
    command: ["%[1]s/udp_echo", "7000"]
  - name: c1
    role: client
    start_delay: 10ms
    command: ["%[1]s/udp_client", "s1", "7000", "8"]
  - name: c2
    role: client
    start_delay: 10ms
    command: ["%[1]s/udp_client", "s2", "7000", "8"]
`

// A trace whose byte count was edited does not replay: the divergence
// names the field (issue 36: replay compares byte counts and peers), in
// the outcome and in Diff, which is all a test's failure message prints.
func TestReplayEditedBytes(t *testing.T) {
	requireTrials(t)
	sum := runFaultSpec(t, "restart-data", 1, true)
	r := sum.Results[0]
	b, err := os.ReadFile(r.TracePath)
	if err != nil {
		t.Fatal(err)
	}
	// The first send of 8 bytes now says 9.
	lines := strings.Split(string(b), "\n")
	edited := false
	for i, l := range lines {
		if strings.Contains(l, `"kind":"send"`) && strings.Contains(l, `"bytes":8`) {
			lines[i] = strings.Replace(l, `"bytes":8`, `"bytes":9`, 1)
			edited = true
			break
		}
	}
	if !edited {
		t.Fatal("no send of 8 bytes in the trace")
	}
	path := filepath.Join(t.TempDir(), "edited.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	rr, err := Replay(t.Context(), path, filepath.Join(t.TempDir(), "replay"))
	if err != nil {
		t.Fatal(err)
	}
	if rr.Same {
		t.Fatal("a trace with an edited byte count replayed as the same")
	}
	if got := rr.Trial.Outcome; got.Kind != Diverged || !strings.Contains(got.Detail, "bytes: expected 9, got 8") {
		t.Fatalf("want a divergence naming bytes, got %v (%s)", got, rr.Diff)
	}
	if !strings.Contains(rr.Diff, "bytes: expected 9, got 8") {
		t.Fatalf("Diff %q does not name the field that diverged", rr.Diff)
	}
}

// threeNodes are three echo servers, each with a client making a round
// trip every 20 ms: room for two cuts that share no link.
const threeNodes = tcpNodes + `  - name: s3
    role: server
    command: ["%[1]s/pingpong_server", "7000"]
    ready: {listen: 7000}
  - name: c3
    role: client
    command: ["%[1]s/tick_client", "s3", "7000", "20", "20"]
`

// A trace cut short before its outcome line (lockstep killed, or its disk
// full, while writing it) is refused before anything runs, saying so,
// rather than replayed and compared with an empty outcome.
func TestReplayCutShort(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "trace.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := sched.NewTraceWriter(f)
	w.WriteHeader(sched.Header{Spec: filepath.Join(dir, "missing.yaml"), Trial: 3, Seed: 1})
	w.WriteRecord(sched.Record{Step: 1, Op: sched.Op{ID: 1, Node: "s1", Kind: sched.Send}})
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = ReplayWith(context.Background(), path, filepath.Join(dir, "out"), ReplayOptions{})
	if !errors.Is(err, ErrCutShort) || !strings.HasPrefix(err.Error(), path+": ") {
		t.Fatalf("replaying a trace without its outcome: %v; want %s: %v", err, path, ErrCutShort)
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); !os.IsNotExist(err) {
		t.Errorf("the refused replay made its output directory (%v)", err)
	}
}
