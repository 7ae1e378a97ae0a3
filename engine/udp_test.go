package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/spec"
	"github.com/lockstep-dev/lockstep/tracer"
)

// UDP datagrams are scheduled: every one is a deliver op of its own, in no
// order with the others, so seeds reorder the echo server's answers; a
// trace replays with the same order.
func TestUDPDatagrams(t *testing.T) {
	requireTrials(t)
	sp, err := spec.Load(repoPath("testdata", "specs", "udp.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Run(context.Background(), sp, RunOptions{Trials: 8, OutDir: t.TempDir(), TraceAll: true})
	if err != nil {
		t.Fatal(err)
	}
	orders := map[string]bool{}
	for _, r := range sum.Results {
		if r.Outcome.Kind != Pass {
			t.Fatalf("trial %d: %v", r.Index, r.Outcome)
		}
		b, err := os.ReadFile(filepath.Join(r.Dir, "client.out"))
		if err != nil {
			t.Fatal(err)
		}
		orders[string(b)] = true
		delivered := map[string]int{}
		for _, rec := range traceRecords(t, r) {
			if rec.Op.Kind == sched.Deliver && rec.Op.Syscall == tracer.DatagramSyscall {
				delivered[rec.Op.Node]++
			}
		}
		if delivered["client"] != 5 || delivered["server"] != 5 {
			t.Fatalf("trial %d: datagrams delivered per sender %v, want 5 each way", r.Index, delivered)
		}
	}
	if len(orders) < 2 {
		t.Fatalf("8 seeds, one order of answers: %v", orders)
	}
	rr, err := Replay(context.Background(), sum.Results[3].TracePath, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(filepath.Join(sum.Results[3].Dir, "client.out"))
	got, _ := os.ReadFile(filepath.Join(rr.Trial.Dir, "client.out"))
	if !rr.Same || string(got) != string(want) {
		t.Fatalf("replay: same %v (%s), answers %q, trace's %q", rr.Same, rr.Diff, got, want)
	}
}

// A drop fault loses one datagram in flight, either way: the client waits
// its second in vain and says so; the drop names the datagram.
func TestFaultDrop(t *testing.T) {
	requireTrials(t)
	sum := runFaultSpec(t, "drop", 4, true)
	for _, r := range sum.Results {
		var drop *sched.Op
		for _, rec := range traceRecords(t, r) {
			if rec.Op.Kind == faults.Drop {
				drop = &rec.Op
			}
		}
		if drop == nil {
			t.Fatalf("trial %d: no drop (%v)", r.Index, r.Outcome)
		}
		if !strings.HasPrefix(drop.Object, "datagram:") || !strings.Contains(drop.Conn, ":7000") {
			t.Fatalf("trial %d: drop %+v names no datagram of the echo", r.Index, *drop)
		}
		b, _ := os.ReadFile(filepath.Join(r.Dir, "client.out"))
		if r.Outcome.Kind != ClientFailed || !strings.Contains(string(b), "lost after 4 answers") {
			t.Fatalf("trial %d: %v, client said %q", r.Index, r.Outcome, b)
		}
	}
}

// A drop of one kind (faults.drop.match) loses only a datagram that
// matches: a trial that drops loses "ping 2" (or its echo) and gets the
// four others; one that does not gets all five; its trace replays.
func TestFaultDropKind(t *testing.T) {
	requireTrials(t)
	sum := runFaultSpec(t, "drop-kind", 10, true)
	var traced *TrialResult
	for _, r := range sum.Results {
		dropped := false
		for _, rec := range traceRecords(t, r) {
			dropped = dropped || rec.Op.Kind == faults.Drop
		}
		b, _ := os.ReadFile(filepath.Join(r.Dir, "client.out"))
		out := string(b)
		if !dropped {
			if r.Outcome.Kind != Pass {
				t.Fatalf("trial %d: no drop, %v, client said %q", r.Index, r.Outcome, out)
			}
			continue
		}
		traced = r
		if r.Outcome.Kind != ClientFailed || !strings.Contains(out, "lost after 4 answers") || strings.Contains(out, "ping 2") {
			t.Fatalf("trial %d: %v, client said %q", r.Index, r.Outcome, out)
		}
		for _, p := range []string{"ping 0", "ping 1", "ping 3", "ping 4"} {
			if !strings.Contains(out, p) {
				t.Fatalf("trial %d: %q lost too: client said %q", r.Index, p, out)
			}
		}
	}
	if traced == nil {
		t.Fatal("no trial dropped a datagram")
	}
	rr, err := Replay(t.Context(), traced.TracePath, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !rr.Same {
		t.Fatalf("replay: %s", rr.Diff)
	}
}
