package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/spec"
	"github.com/lockstep-dev/lockstep/tracer"
	"github.com/lockstep-dev/lockstep/vclock"
)

func ops(ids ...uint64) []*sched.Op {
	var out []*sched.Op
	for _, id := range ids {
		out = append(out, &sched.Op{ID: id, LPID: "n/0/t0", Kind: sched.Deliver})
	}
	return out
}

const ms = time.Millisecond

// The advance op on offer: which deadlines are in the window, and which
// count.
func TestTimingOffer(t *testing.T) {
	net := &sched.Op{ID: 99, LPID: "app/0/t0", Kind: sched.Recv}
	tests := []struct {
		name      string
		budget    int
		maxDelay  time.Duration
		deadlines []tracer.Deadline
		want      []time.Duration // the possible targets; nil: no offer
	}{
		{"no budget", 0, time.Second, []tracer.Deadline{{At: 100 * ms, LPID: "c/0/t0", Kind: sched.Poll}}, nil},
		{"no deadline", 2, time.Second, nil, nil},
		{"poll timeout", 2, time.Second, []tracer.Deadline{{At: 100 * ms, LPID: "c/0/t0", Kind: sched.Poll}}, []time.Duration{100 * ms}},
		{"beyond max delay", 2, 50 * ms, []tracer.Deadline{{At: 100 * ms, LPID: "c/0/t0", Kind: sched.Poll}}, nil},
		{"housekeeping sleep", 2, time.Second, []tracer.Deadline{{At: 20 * time.Microsecond, LPID: "go/0/t1", Kind: sched.Sleep, What: "nanosleep"}}, nil},
		{"application sleep", 2, time.Second, []tracer.Deadline{{At: 300 * ms, LPID: "app/0/t0", Kind: sched.Sleep, What: "nanosleep"}}, []time.Duration{300 * ms}},
		{"timer", 2, time.Second, []tracer.Deadline{{At: 200 * ms, LPID: "erl/0/t2", What: "timerfd"}}, []time.Duration{200 * ms}},
		{"node start", 2, time.Second, []tracer.Deadline{{At: 500 * ms, LPID: "late", What: "start", Kind: sched.Sleep}}, []time.Duration{500 * ms}},
		{"several", 2, time.Second, []tracer.Deadline{
			{At: 100 * ms, LPID: "a/0/t0", Kind: sched.Poll},
			{At: 100 * ms, LPID: "b/0/t0", Kind: sched.Recv},
			{At: 400 * ms, LPID: "a/0/t1", Kind: sched.Accept},
			{At: 2 * time.Second, LPID: "a/0/t2", Kind: sched.Poll},
		}, []time.Duration{100 * ms, 400 * ms}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen := map[time.Duration]bool{}
			for seed := int64(0); seed < 40; seed++ {
				tm := newTiming(tt.budget, tt.maxDelay, seed)
				tm.released(net)
				adv := tm.advance(tm.ready(ops(1, 2), ops(1, 2), 0), listOf(tt.deadlines), 0)
				if tt.want == nil {
					if adv != nil {
						t.Fatalf("offered %v, want nothing", adv)
					}
					return
				}
				if adv == nil {
					t.Fatal("nothing offered")
				}
				if adv.Kind != sched.Advance || adv.ID <= advanceIDBase || adv.Delay != adv.At {
					t.Fatalf("bad advance op %+v", adv)
				}
				seen[time.Duration(adv.At)] = true
			}
			if len(seen) != len(tt.want) {
				t.Fatalf("targets %v, want %v", seen, tt.want)
			}
			for _, w := range tt.want {
				if !seen[w] {
					t.Fatalf("target %v never drawn (got %v)", w, seen)
				}
			}
		})
	}
}

// Choosing an advance op holds what was ready until its target, keeps the
// offer stable until then, and spends the budget.
func TestTimingHold(t *testing.T) {
	ds := []tracer.Deadline{{At: 200 * ms, LPID: "c/0/t0", Kind: sched.Poll}}
	tm := newTiming(1, time.Second, 1)
	pending := ops(1, 2)
	ready := tm.ready(pending, pending, 0)
	a := tm.advance(ready, listOf(ds), 0)
	if b := tm.advance(ready, listOf(ds), 0); a == nil || b != a {
		t.Fatalf("offer not stable: %v then %v", a, b)
	}
	tm.chose(a, ready)
	if r := tm.ready(pending, pending, 0); len(r) != 0 {
		t.Fatalf("held ops still ready: %v", r)
	}
	// A new op enabled during the hold is not held.
	pending = ops(1, 2, 3)
	if r := tm.ready(pending, pending, 50*ms); len(r) != 1 || r[0].ID != 3 {
		t.Fatalf("during the hold: %v", r)
	}
	if end, ok := tm.holdEnd(50 * ms); !ok || end != 200*ms {
		t.Fatalf("hold end %v %v", end, ok)
	}
	if adv := tm.advance(ops(3), listOf(ds), 50*ms); adv != nil {
		t.Fatalf("budget spent, still offered %v", adv)
	}
	// With budget left, a target no later than a hold in force is not
	// offered again (Go's sysmon woke meanwhile and made an op ready).
	tm2 := newTiming(2, time.Second, 1)
	r2 := tm2.ready(ops(1), ops(1), 0)
	tm2.chose(tm2.advance(r2, listOf(ds), 0), r2)
	if adv := tm2.advance(tm2.ready(ops(1, 3), ops(1, 3), 20*time.Microsecond), listOf(ds), 20*time.Microsecond); adv != nil {
		t.Fatalf("offered %v, the same deadline as the hold in force", adv)
	}
	if r := tm.ready(pending, pending, 200*ms); len(r) != 3 {
		t.Fatalf("after the hold: %v", r)
	}
	// An op held since time 0 bounds later delays by max_delay.
	tm = newTiming(5, 300*ms, 1)
	tm.ready(ops(1), ops(1), 0)
	late := []tracer.Deadline{{At: 250 * ms, LPID: "c/0/t0", Kind: sched.Poll}, {At: 350 * ms, LPID: "c/0/t1", Kind: sched.Poll}}
	for seed := 0; seed < 20; seed++ {
		if adv := tm.advance(tm.ready(ops(1), ops(1), 100*ms), listOf(late), 100*ms); adv == nil || adv.At != int64(250*ms) || adv.Delay != int64(150*ms) {
			t.Fatalf("window from the oldest enabled op: %v", adv)
		}
	}
}

// A client that waits 200 ms for an echo (C poll, Go SetReadDeadline, Rust
// set_read_timeout) times out only when a delay holds the request or the
// reply past its timeout: never under ideal timing, never with max_delay
// below the timeout, and its failing traces replay with their delays.
func TestDelaysReachTimeouts(t *testing.T) {
	requireTrials(t)
	for _, lang := range []string{"c", "go", "rust"} {
		t.Run(lang, func(t *testing.T) {
			path := repoPath("testdata", "specs", "timing", "timeout-"+lang+".yaml")
			run := func(delays int, maxDelay time.Duration) *Summary {
				sp, err := spec.Load(path)
				if err != nil {
					t.Fatal(err)
				}
				sp.Time.Delays, sp.Time.MaxDelay = delays, maxDelay
				sum, err := Run(context.Background(), sp, RunOptions{Trials: 20, OutDir: t.TempDir()})
				if err != nil {
					t.Fatal(err)
				}
				if sum.Errors != 0 {
					t.Fatalf("lockstep errors: %v", sum.FirstError.Outcome)
				}
				return sum
			}
			if s := run(0, time.Second); s.Failures != 0 {
				t.Fatalf("ideal timing: %d failures, first %v", s.Failures, s.First.Outcome)
			}
			if s := run(1, 150*ms); s.Failures != 0 {
				t.Fatalf("max_delay 150ms < timeout 200ms: %d failures, first %v", s.Failures, s.First.Outcome)
			}
			s := run(1, time.Second)
			if s.Failures == 0 {
				t.Fatal("delays never reached the client's 200 ms timeout in 20 trials")
			}
			t.Logf("%s: %d/20 trials timed out", lang, s.Failures)
			if k := s.First.Outcome; k.Kind != ClientFailed || !strings.Contains(k.Detail, "code 3") {
				t.Fatalf("want the client's timeout (exit 3), got %v", k)
			}
			tr, err := LoadTrace(s.First.TracePath)
			if err != nil {
				t.Fatal(err)
			}
			advances := 0
			for _, r := range tr.Records {
				if r.Op.Kind == sched.Advance {
					advances++
					if r.Op.At != int64(200*ms) {
						t.Errorf("advance to %v, want the client's timeout at 200ms", time.Duration(r.Op.At))
					}
				}
			}
			if advances != 1 {
				t.Fatalf("%d advance ops in the failing trace, want 1", advances)
			}
			for i := 0; i < 3; i++ {
				rr, err := Replay(context.Background(), s.First.TracePath, filepath.Join(t.TempDir(), "replay"))
				if err != nil {
					t.Fatal(err)
				}
				if !rr.Same {
					t.Fatalf("replay %d: %s", i, rr.Diff)
				}
			}
		})
	}
}

// A readiness condition holds the client back until the server listens:
// without it the Rust client, which does not retry a refused connect, fails
// in some schedules (a start-up race the system's own launch scripts avoid);
// with it, never — under lockstep and natively alike.
func TestReadyCondition(t *testing.T) {
	requireTrials(t)
	path := repoPath("testdata", "specs", "timing", "timeout-rust.yaml")
	run := func(ready bool, native bool) *Summary {
		sp, err := spec.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if sp.Nodes[0].ReadyPort != 7000 {
			t.Fatalf("the spec's server should have ready: {listen: 7000}, has %d", sp.Nodes[0].ReadyPort)
		}
		if !ready {
			sp.Nodes[0].ReadyPort = 0
		}
		sp.Time.Delays = 0
		sum, err := Run(context.Background(), sp, RunOptions{Trials: 20, OutDir: t.TempDir(), Native: native})
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	if s := run(false, false); s.ByKind[ClientFailed] == 0 {
		t.Fatalf("without ready no schedule started the client before the server listened: %v", s.ByKind)
	}
	if s := run(true, false); s.Failures != 0 || s.Errors != 0 {
		t.Fatalf("with ready: %v, first %v", s.ByKind, s.First.Outcome)
	}
	if s := run(true, true); s.Failures != 0 || s.Errors != 0 {
		t.Fatalf("native with ready: %v, first %v", s.ByKind, s.First.Outcome)
	}
}

// With time.tick every released op takes a tick of virtual time, so clock
// readings (and client histories) order what happened; without it ops take
// none.
func TestTick(t *testing.T) {
	requireTrials(t)
	for _, tick := range []time.Duration{0, time.Microsecond} {
		sp, err := spec.Load(repoPath("testdata", "specs", "timing", "timeout-c.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		sp.Time.Delays, sp.Time.Tick = 0, tick
		sum, err := Run(context.Background(), sp, RunOptions{Trials: 2, OutDir: t.TempDir(), TraceAll: true})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Failures != 0 || sum.Errors != 0 {
			t.Fatalf("tick %v: %v", tick, sum.ByKind)
		}
		recs := traceRecords(t, sum.Results[0])
		for i := 1; i < len(recs); i++ {
			d := recs[i].VTime - recs[i-1].VTime
			if tick > 0 && d < int64(tick) || tick == 0 && d != 0 {
				t.Fatalf("tick %v: step %d at %v, step %d at %v", tick, i, time.Duration(recs[i-1].VTime), i+1, time.Duration(recs[i].VTime))
			}
		}
	}
}

// time.skew sets each node's wall clock apart, within the bound, by amounts
// the seed fixes; monotonic clocks stay together.
func TestClockSkew(t *testing.T) {
	requireTrials(t)
	sp, err := spec.Load(repoPath("testdata", "specs", "timing", "skew.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	offsets := func() []map[string]time.Duration {
		sum, err := Run(context.Background(), sp, RunOptions{OutDir: t.TempDir(), TraceAll: true})
		if err != nil {
			t.Fatal(err)
		}
		var out []map[string]time.Duration
		for _, r := range sum.Results {
			if r.Outcome.Kind != Pass {
				t.Fatalf("trial %d: %v", r.Index, r.Outcome)
			}
			m := map[string]time.Duration{}
			for _, node := range []string{"a", "b", "c"} {
				b, err := os.ReadFile(filepath.Join(r.Dir, node+".out"))
				if err != nil {
					t.Fatal(err)
				}
				var i int
				var mono, real int64
				if _, err := fmt.Sscanf(strings.SplitN(string(b), "\n", 2)[0], "i=%d mono_ns=%d real_ns=%d", &i, &mono, &real); err != nil {
					t.Fatalf("%s: %q: %v", node, b, err)
				}
				if mono != int64(time.Second) {
					t.Fatalf("%s: monotonic %d after one second", node, mono)
				}
				off := time.Duration(real - vclock.DefaultEpoch.UnixNano() - mono)
				if off < -5*time.Millisecond || off > 5*time.Millisecond {
					t.Fatalf("%s: wall clock %v off, bound 5ms", node, off)
				}
				m[node] = off
			}
			if m["a"] == m["b"] && m["b"] == m["c"] {
				t.Fatalf("trial %d: no skew: %v", r.Index, m)
			}
			out = append(out, m)
		}
		return out
	}
	first, again := offsets(), offsets()
	if fmt.Sprint(first) != fmt.Sprint(again) {
		t.Fatalf("same seed, other skews: %v then %v", first, again)
	}
	if fmt.Sprint(first[0]) == fmt.Sprint(first[1]) {
		t.Fatalf("two trials drew the same skews: %v", first)
	}
}

// listOf gives fixed deadlines as timing.advance reads them.
func listOf(ds []tracer.Deadline) func() []tracer.Deadline {
	return func() []tracer.Deadline { return ds }
}
