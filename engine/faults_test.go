package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/spec"
)

func runFaultSpec(t *testing.T, name string, trials int, traceAll bool) *Summary {
	t.Helper()
	sp, err := spec.Load(repoPath("testdata", "specs", "faults", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Run(context.Background(), sp, RunOptions{Trials: trials, OutDir: t.TempDir(), TraceAll: traceAll})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Errors != 0 {
		t.Fatalf("lockstep errors: %v", sum.FirstError.Outcome)
	}
	return sum
}

func traceRecords(t *testing.T, r *TrialResult) []sched.Record {
	t.Helper()
	tr, err := LoadTrace(r.TracePath)
	if err != nil {
		t.Fatal(err)
	}
	return tr.Records
}

// A crash kills the node's whole process tree (no op of it runs after the
// crash), the injected death is not reported as a bug, and the restart runs
// the same command in the same {{tmp}}: the node's file survives.
func TestFaultCrashRestart(t *testing.T) {
	requireTrials(t)
	sum := runFaultSpec(t, "restart-data", 20, true)
	crashed := 0
	for _, r := range sum.Results {
		if r.Outcome.Kind == NodeCrashed {
			t.Fatalf("trial %d: the injected crash reported as a bug: %v", r.Index, r.Outcome)
		}
		recs := traceRecords(t, r)
		at, restarted := -1, false
		for i, rec := range recs {
			switch {
			case rec.Op.Kind == faults.Restart:
				restarted = true
			case rec.Op.Kind == faults.Crash:
				at = i
			case at >= 0 && strings.HasPrefix(rec.Op.LPID, "server/0"):
				t.Fatalf("trial %d: %v of the crashed incarnation ran after the crash", r.Index, rec.Op.String())
			}
		}
		if at < 0 || !restarted {
			continue // no crash, or the client was done before a restart
		}
		crashed++
		out, err := os.ReadFile(filepath.Join(r.Dir, "server.out"))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Fields(string(out)); !reflect.DeepEqual(got, []string{"start", "1", "start", "2"}) {
			t.Fatalf("trial %d: server output %q, want its two starts counted in one file", r.Index, out)
		}
	}
	if crashed == 0 {
		t.Fatal("no trial crashed the server")
	}
	t.Logf("%d of %d trials crashed and restarted the server; outcomes %v", crashed, sum.Trials, sum.ByKind)
}

// A paused node runs nothing while time goes on: the client's 200 ms
// timeout expires during the pause.
func TestFaultPause(t *testing.T) {
	requireTrials(t)
	sum := runFaultSpec(t, "pause", 20, true)
	timeouts := 0
	for _, r := range sum.Results {
		recs := traceRecords(t, r)
		for i, rec := range recs {
			if rec.Op.Kind != faults.Pause {
				continue
			}
			end := rec.VTime + rec.Op.Delay
			if end <= rec.VTime {
				t.Fatalf("trial %d: pause ends at %v, chosen at %v", r.Index, time.Duration(end), time.Duration(rec.VTime))
			}
			for _, later := range recs[i+1:] {
				if later.Op.Node == rec.Op.Node && later.Op.Kind != sched.Deliver && later.VTime < end {
					t.Fatalf("trial %d: %v ran at %v during the pause (until %v)", r.Index, later.Op.String(), time.Duration(later.VTime), time.Duration(end))
				}
			}
		}
		if r.Outcome.Kind == ClientFailed && strings.Contains(r.Outcome.Detail, "code 3") {
			timeouts++
		}
	}
	if timeouts == 0 {
		t.Fatalf("no pause outlasted the client's timeout: %v", sum.ByKind)
	}
}

// A partition holds every delivery and connect across the cut until the
// heal (chosen, or the quiet period's); the clients then finish.
func TestFaultPartition(t *testing.T) {
	requireTrials(t)
	sum := runFaultSpec(t, "partition", 20, true)
	if sum.Failures != 0 {
		t.Fatalf("a partition that heals must not fail the ping-pong: %v, first %v", sum.ByKind, sum.First.Outcome)
	}
	cuts := 0
	for _, r := range sum.Results {
		in := false
		for _, rec := range traceRecords(t, r) {
			switch rec.Op.Kind {
			case faults.Partition:
				in = true
				cuts++
			case faults.Heal:
				in = false
			case sched.Deliver, sched.Connect:
				if in && !rec.Op.NonBlocking {
					t.Fatalf("trial %d: %v across the cut to the server", r.Index, rec.Op.String())
				}
			}
		}
	}
	if cuts == 0 {
		t.Fatal("no trial partitioned the server")
	}
}

// A dial with a timeout (a non-blocking connect and a poll, as Go's
// DialTimeout and Java's connect(addr, timeout)) into a partition times out
// in virtual time, and the client dials again after the heal; the attempt
// still waiting at the heal is ended (its SYN was lost) rather than left
// to the kernel's real-time retransmission.
func TestFaultPartitionDial(t *testing.T) {
	requireTrials(t)
	sum := runFaultSpec(t, "partition-dial", 10, true)
	if sum.Failures != 0 {
		t.Fatalf("a client that retries its dials must get through after the heal: %v, first %v", sum.ByKind, sum.First.Outcome)
	}
	timedOut := 0
	for _, r := range sum.Results {
		out, err := os.ReadFile(filepath.Join(filepath.Dir(r.TracePath), "client.out"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(out), "attempt 0: Connection timed out at 200ms\n") {
			timedOut++
		}
		if !strings.HasSuffix(string(out), "done\n") {
			t.Errorf("trial %d: client output %q", r.Index, out)
		}
	}
	if timedOut == 0 {
		t.Fatal("no trial dialed into the partition")
	}
}

// The same seed chooses the same faults at the same points.
func TestFaultsDeterministic(t *testing.T) {
	requireTrials(t)
	a, b := runFaultSpec(t, "restart-data", 8, true), runFaultSpec(t, "restart-data", 8, true)
	for i := range a.Results {
		ra, rb := traceRecords(t, a.Results[i]), traceRecords(t, b.Results[i])
		if len(ra) != len(rb) {
			t.Fatalf("trial %d: %d and %d records", i, len(ra), len(rb))
		}
		for k := range ra {
			// Ports differ between runs; who did what, when, does not.
			x, y := ra[k].Op, rb[k].Op
			if x.LPID != y.LPID || x.Kind != y.Kind || x.Object != y.Object || x.Delay != y.Delay || ra[k].VTime != rb[k].VTime {
				t.Fatalf("trial %d step %d: %v then %v", i, k+1, ra[k].Op.String(), rb[k].Op.String())
			}
		}
	}
}

// A clock fault moves one node's wall clock by the recorded amount, leaves
// its monotonic clock and every other node's clocks alone.
func TestFaultClock(t *testing.T) {
	requireTrials(t)
	sum := runFaultSpec(t, "clock", 3, true)
	jumps := 0
	for _, r := range sum.Results {
		var shift time.Duration
		for _, rec := range traceRecords(t, r) {
			if rec.Op.Kind == faults.ClockJump {
				shift += time.Duration(rec.Op.Delay)
			}
		}
		if shift == 0 {
			continue
		}
		jumps++
		offsets := func(node string) []time.Duration {
			b, err := os.ReadFile(filepath.Join(r.Dir, node+".out"))
			if err != nil {
				t.Fatal(err)
			}
			var out []time.Duration
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				var i int
				var mono, real int64
				if _, err := fmt.Sscanf(line, "i=%d mono_ns=%d real_ns=%d", &i, &mono, &real); err != nil {
					t.Fatalf("%s: %q: %v", node, line, err)
				}
				if mono != int64(i)*int64(time.Second) {
					t.Fatalf("%s: monotonic clock %d at i=%d: a clock fault must leave it alone", node, mono, i)
				}
				out = append(out, time.Duration(real-mono))
			}
			return out
		}
		c := offsets("client")
		for _, o := range c[1:] {
			if o != c[0] {
				t.Fatalf("trial %d: the client's wall clock moved: %v", r.Index, c)
			}
		}
		s := offsets("server")
		if got := s[len(s)-1] - c[0]; got != shift {
			t.Fatalf("trial %d: server wall clock off by %v from the client's, trace says %v", r.Index, got, shift)
		}
	}
	if jumps == 0 {
		t.Fatal("no trial moved the server's clock")
	}
}

// The quiet period sets a moved wall clock back: after it, the server's
// wall clock agrees with the client's again.
func TestFaultClockSetBack(t *testing.T) {
	requireTrials(t)
	sum := runFaultSpec(t, "clock-quiet", 3, true)
	setBack := 0
	for _, r := range sum.Results {
		var moved, undone bool
		for _, rec := range traceRecords(t, r) {
			if rec.Op.Kind == faults.ClockJump {
				if rec.Auto {
					undone = true
				} else {
					moved = true
				}
			}
		}
		if !moved || !undone {
			continue
		}
		setBack++
		last := func(node string) int64 {
			b, err := os.ReadFile(filepath.Join(r.Dir, node+".out"))
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			var i int
			var mono, real int64
			if _, err := fmt.Sscanf(lines[len(lines)-1], "i=%d mono_ns=%d real_ns=%d", &i, &mono, &real); err != nil {
				t.Fatalf("%s: %q: %v", node, lines[len(lines)-1], err)
			}
			return real - mono
		}
		if s, c := last("server"), last("client"); s != c {
			t.Fatalf("trial %d: after the quiet period the server's wall clock is %v off the client's", r.Index, time.Duration(s-c))
		}
	}
	if setBack == 0 {
		t.Fatal("no trial moved the server's clock before the quiet period")
	}
}

// A reset aborts one of the server's connections: the client, its peer,
// sees ECONNRESET; the server sees its own end aborted and goes on serving.
// The reset op names the connection, and a trace with one replays.
func TestFaultReset(t *testing.T) {
	requireTrials(t)
	sum := runFaultSpec(t, "reset", 6, true)
	resets := 0
	for _, r := range sum.Results {
		var reset *sched.Op
		for _, rec := range traceRecords(t, r) {
			if rec.Op.Kind == faults.Reset {
				reset = &rec.Op
			}
		}
		if reset == nil {
			if r.Outcome.Kind != Pass {
				t.Fatalf("trial %d without a reset: %v", r.Index, r.Outcome)
			}
			continue
		}
		resets++
		if reset.Node != "server" || !strings.HasPrefix(reset.Object, "sock:server/0/fd") || !strings.Contains(reset.Conn, ":7000>") {
			t.Fatalf("trial %d: reset %+v does not name the server's connection", r.Index, *reset)
		}
		b, err := os.ReadFile(filepath.Join(r.Dir, "client.err"))
		if err != nil {
			t.Fatal(err)
		}
		if r.Outcome.Kind != ClientFailed || !strings.Contains(string(b), "Connection reset by peer") {
			t.Fatalf("trial %d: outcome %v, client said %q; want ECONNRESET", r.Index, r.Outcome, b)
		}
		if s, _ := os.ReadFile(filepath.Join(r.Dir, "server.err")); strings.Contains(string(s), "reset by peer") {
			t.Fatalf("trial %d: the server saw a reset from its peer: %q", r.Index, s)
		}
	}
	if resets == 0 {
		t.Fatal("no trial reset a connection")
	}
	first := sum.First
	rr, err := Replay(context.Background(), first.TracePath, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !rr.Same {
		t.Fatalf("replaying trial %d: %s", first.Index, rr.Diff)
	}
}

// A drift fault makes one node's wall clock run at the recorded rate: from
// one second to the next the server's wall clock gains rate × 1 s on its
// monotonic clock, which stays exact, as do the client's clocks.
func TestFaultDrift(t *testing.T) {
	requireTrials(t)
	sum := runFaultSpec(t, "drift", 4, true)
	drifts := 0
	for _, r := range sum.Results {
		var ppm, at int64
		for _, rec := range traceRecords(t, r) {
			if rec.Op.Kind == faults.ClockDrift && !rec.Auto {
				ppm, at = rec.Op.Delay, rec.VTime
			}
		}
		if ppm == 0 {
			continue
		}
		drifts++
		offsets := func(node string) (mono, off []int64) {
			b, err := os.ReadFile(filepath.Join(r.Dir, node+".out"))
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				var i int
				var m, real int64
				if _, err := fmt.Sscanf(line, "i=%d mono_ns=%d real_ns=%d", &i, &m, &real); err != nil {
					t.Fatalf("%s: %q: %v", node, line, err)
				}
				if m != int64(i)*int64(time.Second) {
					t.Fatalf("%s: monotonic clock %d at i=%d: a drift must leave it alone", node, m, i)
				}
				mono, off = append(mono, m), append(off, real-m)
			}
			return mono, off
		}
		_, c := offsets("client")
		for _, o := range c[1:] {
			if o != c[0] {
				t.Fatalf("trial %d: the client's wall clock drifted: %v", r.Index, c)
			}
		}
		mono, s := offsets("server")
		gained := 0
		for i := 1; i < len(s); i++ {
			if mono[i-1] < at {
				continue // the drift began later
			}
			want := ppm * int64(time.Second) / 1e6
			if d := s[i] - s[i-1] - want; d < -1 || d > 1 {
				t.Fatalf("trial %d: server wall clock gained %v in a second, want %v (%d ppm from %v)", r.Index, time.Duration(s[i]-s[i-1]), time.Duration(want), ppm, time.Duration(at))
			}
			gained++
		}
		if gained == 0 {
			t.Fatalf("trial %d: the drift at %v came after the last reading", r.Index, time.Duration(at))
		}
	}
	if drifts == 0 {
		t.Fatal("no trial made the server's clock drift")
	}
}

// A run into a directory an earlier run used starts every trial from empty
// node directories: the server of restart-data counts its starts in a file
// of its {{tmp}}, and the second run counts from 1 again, with the same
// schedule.
func TestRerunSameDirectory(t *testing.T) {
	requireTrials(t)
	sp, err := spec.Load(repoPath("testdata", "specs", "faults", "restart-data.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	var runs [2]*Summary
	var outputs [2][]string
	for i := range runs {
		// The second run replaces the first (--replace): without it, a
		// directory holding a run is refused (TestPrepareOut).
		if runs[i], err = Run(context.Background(), sp, RunOptions{Trials: 3, OutDir: out, TraceAll: true, Replace: i > 0}); err != nil {
			t.Fatal(err)
		}
		for _, r := range runs[i].Results {
			b, err := os.ReadFile(filepath.Join(r.Dir, "server.out"))
			if err != nil {
				t.Fatal(err)
			}
			outputs[i] = append(outputs[i], string(b))
		}
	}
	for i, a := range runs[0].Results {
		b := runs[1].Results[i]
		ra, rb := traceRecords(t, a), traceRecords(t, b)
		if a.Outcome.Kind != b.Outcome.Kind || len(ra) != len(rb) {
			t.Fatalf("trial %d: %v in %d ops, then %v in %d ops", i, a.Outcome, len(ra), b.Outcome, len(rb))
		}
		if outputs[0][i] != outputs[1][i] || !strings.HasPrefix(outputs[1][i], "start 1\n") {
			t.Fatalf("trial %d: server output %q, then %q; want the same, from its first start", i, outputs[0][i], outputs[1][i])
		}
	}
	// A replay into the run's own directory would clear the trace it reads.
	if _, err := Replay(context.Background(), runs[1].Results[0].TracePath, out); err == nil || !strings.Contains(err.Error(), "would delete the trace") {
		t.Fatalf("replay into the trace's own trial directory: %v", err)
	}
	if _, err := os.Stat(runs[1].Results[0].TracePath); err != nil {
		t.Fatal(err)
	}
}

// twoRuns runs two trials of sp twice, each passing, and gives what of
// each record pick keeps, per run, in order, and the last trial.
func twoRuns(t *testing.T, sp *spec.Spec, pick func(sched.Record) (string, bool)) (got [2][]string, last *TrialResult) {
	t.Helper()
	for i := range got {
		sum, err := Run(context.Background(), sp, RunOptions{Trials: 2, OutDir: t.TempDir(), TraceAll: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range sum.Results {
			if r.Outcome.Kind != Pass {
				t.Fatalf("trial %d: %v", r.Index, r.Outcome)
			}
			for _, rec := range traceRecords(t, r) {
				if s, ok := pick(rec); ok {
					got[i] = append(got[i], s)
				}
			}
			last = r
		}
	}
	return got, last
}

// TestEphemeralPortsRepeat: the ports clients connect from are lockstep's
// choice, the same in every run of a seed (the kernel's are salted at
// random), counted per node from the start of the range.
func TestEphemeralPortsRepeat(t *testing.T) {
	requireTrials(t)
	sp, err := spec.Load(repoPath("testdata", "specs", "pingpong-c.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	conns, _ := twoRuns(t, sp, func(rec sched.Record) (string, bool) { return rec.Op.Node + " " + rec.Op.Conn, true })
	if !slices.Equal(conns[0], conns[1]) {
		t.Fatalf("connections differ between two runs of one seed:\n%v\n%v", conns[0], conns[1])
	}
	first := false
	for _, c := range conns[0] {
		first = first || strings.HasPrefix(c, "client1 ") && strings.Contains(c, ":32768>")
	}
	if !first {
		t.Fatalf("client1's first connection is not from port 32768: %v", conns[0])
	}
}

// TestAnyPortRepeats: a listener bound to port 0 gets lockstep's port,
// not the kernel's (salted at random), the same in every run: the first
// from the top of the range. Its accepts and its client's connect are
// named by it, so the trace replays; with the kernel's port the replay's
// connect went to another listener than the trace's.
func TestAnyPortRepeats(t *testing.T) {
	requireTrials(t)
	if _, err := os.Stat(repoPath("testdata", "bin", "c", "anyport")); err != nil {
		t.Skipf("skipping: %v (make testdata builds it)", err)
	}
	sp, err := spec.Load(repoPath("testdata", "specs", "anyport.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objects, last := twoRuns(t, sp, func(rec sched.Record) (string, bool) {
		k := rec.Op.Kind
		return rec.Op.Node + " " + k.String() + " " + rec.Op.Object, k == sched.Connect || k == sched.Accept
	})
	if !slices.Equal(objects[0], objects[1]) {
		t.Fatalf("listeners differ between two runs of one seed:\n%v\n%v", objects[0], objects[1])
	}
	if len(objects[0]) == 0 || !strings.HasSuffix(objects[0][0], ":60999") {
		t.Fatalf("connects and accepts %v: want the first on port 60999", objects[0])
	}
	out, err := os.ReadFile(filepath.Join(last.Dir, "client.out"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "port 60999 echoed hello") {
		t.Errorf("client output %q: want the echo through port 60999", out)
	}
	rr, err := Replay(context.Background(), last.TracePath, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !rr.Same {
		t.Fatalf("replay differs: %s", rr.Diff)
	}
}

// TestLocalPortsRepeat: a connection within a node (to the loopback, no
// op) gets lockstep's port, not the kernel's (salted at random), the same
// in every trial: counted per node from 61000. The program prints them.
func TestLocalPortsRepeat(t *testing.T) {
	requireTrials(t)
	bin := repoPath("testdata", "bin", "c", "loopports")
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("skipping: %v (make testdata builds it)", err)
	}
	sp := clientSpec(t, "loopports", bin, "3")
	sum, err := Run(t.Context(), sp, RunOptions{Trials: 2, Strategy: "pos", OutDir: filepath.Join(t.TempDir(), "out"), KeepTmp: true})
	if err != nil {
		t.Fatal(err)
	}
	want := "local port 61000\nlocal port 61001\nlocal port 61002\n"
	for _, r := range sum.Results {
		out, err := os.ReadFile(filepath.Join(r.Dir, "c1.out"))
		if err != nil || r.Outcome.Kind != Pass || string(out) != want {
			t.Errorf("trial %d: %v, printed %q (%v); want %q", r.Index, r.Outcome, out, err, want)
		}
	}
}

// The suite's crash-1 fails through lockstep's faults alone: POS finds a
// crash between a write's acknowledgement and its group commit, with the
// restart that loses it, and the trace replays to the same failure.
func TestFaultBugCrashRestart(t *testing.T) {
	requireTrials(t)
	if _, err := os.Stat(repoPath("testdata", "bin", "bugs", "crash-1", "crash1")); err != nil {
		t.Skipf("skipping: %v (make testdata builds it)", err)
	}
	sp, err := spec.Load(repoPath("testdata", "bugs", "crash-1", "spec.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	first := firstClientFailure(t, sp, RunOptions{Trials: 100, Strategy: "pos", OutDir: out, StopOnFirst: true})
	var crash, restart bool
	for _, rec := range traceRecords(t, first) {
		crash = crash || rec.Op.Kind == faults.Crash
		restart = restart || (crash && rec.Op.Kind == faults.Restart)
	}
	if !crash || !restart {
		t.Fatalf("trial %d failed without a crash and a restart in its trace", first.Index)
	}
	for i := 0; i < 3; i++ {
		rr, err := Replay(context.Background(), first.TracePath, filepath.Join(out, "replay"))
		if err != nil {
			t.Fatal(err)
		}
		if !rr.Same {
			t.Fatalf("replay %d differs: %s", i, rr.Diff)
		}
	}
}

// firstClientFailure runs sp with o and returns its first failing trial,
// which must end client-failed.
func firstClientFailure(t *testing.T, sp *spec.Spec, o RunOptions) *TrialResult {
	t.Helper()
	sum, err := Run(context.Background(), sp, o)
	if err != nil {
		t.Fatal(err)
	}
	if sum.First == nil {
		t.Fatalf("POS found no failure in %d trials: %v", sum.Trials, sum.ByKind)
	}
	if sum.First.Outcome.Kind != ClientFailed {
		t.Fatalf("want client-failed, got %v", sum.First.Outcome)
	}
	return sum.First
}

// TestReplayTimedFault: a forced run whose fault is due at a time
// (explain's faults at their times) declines the engine's offer of it in
// the lulls before that time, and the clock moves on to the next wake; a
// replay of its trace declines it there too, and gives the run again. (It
// took such a fault at the first lull that offered it, and parted from
// the trace at the next op: the minimized trace of NATS's loss,
// examples/nats.)
func TestReplayTimedFault(t *testing.T) {
	requireTrials(t)
	sum := runFaultSpec(t, "placement", 1, true)
	tr, err := LoadTrace(sum.Results[0].TracePath)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rr, _, all := traceDecisions(t, tr)
	i := slices.IndexFunc(all, func(d sched.Decision) bool {
		return d.Kind == sched.InjectDecision && d.Op.Kind.IsFault() && d.VTime != nil
	})
	if i < 0 {
		t.Fatal("the trial made no fault")
	}
	for _, late := range []time.Duration{0, 1, 45 * time.Millisecond} {
		d := all[i]
		at := *d.VTime + int64(late)
		d.VTime = &at
		run, err := rr.Run(ctx, sched.NewForced([]sched.Decision{d.AtItsTime()}, faults.ReplayOf), true)
		if err != nil {
			t.Fatal(err)
		}
		j := slices.IndexFunc(run.Records, func(r sched.Record) bool { return r.Op.Kind == d.Op.Kind })
		if j < 0 || run.Records[j].VTime < at {
			t.Fatalf("%v later: the %s was not made at its time %v", late, d.Op.Kind, time.Duration(at))
		}
		t.Logf("%v later: due %v, made at %v (step %d); the trace had it at step %d", late, time.Duration(at), time.Duration(run.Records[j].VTime), run.Records[j].Step, d.Step)
		rep, err := rr.Replay(ctx, run.TracePath)
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Same {
			t.Errorf("%v later: the forced run (its %s at %v) does not replay: %s", late, d.Op.Kind, time.Duration(run.Records[j].VTime), rep.Diff)
			continue
		}
		// At the same times: a fault taken earlier, in a lull the run
		// declined it in, can leave the ops' order as it was and still
		// move every timeout after it.
		if rep.Clock != "" {
			t.Errorf("%v later: the replay's clock: %s", late, rep.Clock)
		}
	}
}

// traceDecisions replays tr on a rerunner of its own, recording what was
// offered at each decision, and reads the trace's decisions from that (as
// explain does); the rerunner is closed when the test ends.
func traceDecisions(t *testing.T, tr *sched.Trace) (*Rerunner, *TrialResult, []sched.Decision) {
	t.Helper()
	ctx := context.Background()
	rr, err := NewRerunner(ctx, tr, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rr.Close() })
	rec := &sched.Recorder{Strategy: sched.NewReplay(tr, sched.NewReplayTail(100), faults.ReplayOf)}
	res, err := rr.Run(ctx, rec, false)
	if err != nil {
		t.Fatal(err)
	}
	all, err := sched.Decisions(res.Records, rec.Choices)
	if err != nil {
		t.Fatal(err)
	}
	return rr, res, all
}
