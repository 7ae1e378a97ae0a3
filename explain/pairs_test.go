package explain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/engine"
	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/sched"
)

// run builds a minimized run from ops in release order, each with the IDs
// of the ops offered beside it at its decision (its own always is).
type runSpec struct {
	recs    []sched.Record
	choices [][]sched.Op
}

// op appends an op; offered names the indices of later ops (by their
// position in the run) that were offered when it was released.
func (r *runSpec) op(lpid string, kind sched.Kind, object string, data string, offered ...int) *runSpec {
	i := len(r.recs)
	o := sched.Op{ID: uint64(100 + i), LPID: lpid, Node: lpid[:1], Kind: kind, Object: object, Site: "prog+0x" + lpid[:1] + string(kind)}
	if kind == sched.Send || kind == sched.Deliver {
		o.Conn = lpid[:1] + ">s" // each client its connection to s
	}
	if kind == sched.Advance {
		o.At, o.Syscall = int64(300*time.Millisecond), "poll"
	}
	r.recs = append(r.recs, sched.Record{Step: i + 1, Op: o, Data: []byte(data)})
	c := []sched.Op{o}
	for _, j := range offered {
		c = append(c, sched.Op{ID: uint64(100 + j)})
	}
	r.choices = append(r.choices, c)
	return r
}

// from makes the last op's cause op j (a delivery's send).
func (r *runSpec) from(j int) *runSpec {
	r.recs[len(r.recs)-1].Causes = []uint64{uint64(100 + j)}
	return r
}

// fix gives the offered placeholders the ops they stand for, once all are
// known (the choices are copies of ops, as a Recorder keeps them).
func (r *runSpec) fix() *failingRun {
	for c := range r.choices {
		for k := range r.choices[c] {
			r.choices[c][k] = r.recs[r.choices[c][k].ID-100].Op
		}
	}
	return newFailingRun(r.recs, r.choices)
}

// TestCandidatesOffered: a decision's pair is only an op that was there to
// be reordered. A hold's partners are ops released while its op was
// offered: the first connection's ACQUIRE, delivered before the RELEASE it
// would be named with was even sent, is none (the C lease server of issue
// 46). A delay's are ops offered beside it: a message sent after the
// timeout is none (the sleep that "timed out while REGISTER was in flight"
// when REGISTER was sent after).
func TestCandidatesOffered(t *testing.T) {
	hold := (&runSpec{}).
		op("a/0/t0", sched.Send, "", "ACQUIRE a\n").
		op("a/0/t0", sched.Deliver, "inbox:s", "ACQUIRE a\n").
		op("s/0/t0", sched.Recv, "inbox:s", "ACQUIRE a\n").
		op("b/0/t0", sched.Send, "", "RELEASE\n").
		op("c/0/t0", sched.Deliver, "inbox:s", "HELLO\n", 5).
		op("b/0/t0", sched.Deliver, "inbox:s", "RELEASE\n").fix()
	delay := (&runSpec{}).
		op("s/0/t0", sched.Poll, "inbox:s", "").
		op("a/0/t0", sched.Send, "", "RENEW\n").
		op("s/0/t0", sched.Advance, "", "", 3).
		op("a/0/t0", sched.Deliver, "inbox:s", "RENEW\n").
		op("b/0/t0", sched.Send, "", "REGISTER\n").
		op("b/0/t0", sched.Deliver, "inbox:s", "REGISTER\n").fix()
	// A server ready to answer when the client's wait timed out: the
	// answer was not yet sent, its send was offered.
	ready := (&runSpec{}).
		op("c/0/t0", sched.Poll, "inbox:c", "").
		op("c/0/t0", sched.Advance, "", "", 2).
		op("s/0/t0", sched.Send, "", "OK\n").
		op("s/0/t0", sched.Deliver, "inbox:c", "OK\n").from(2).fix()
	for _, tc := range []struct {
		name string
		run  *failingRun
		d    sched.Decision
		at   int
		want []int // candidates' other op, in order
		// summary is how the pair's sentence starts, inFlight what it
		// says of the message.
		summary, inFlight string
	}{
		{"hold: only ops released while it was offered", hold,
			sched.Decision{Kind: sched.HoldDecision, Key: hold.keys[5], Op: hold.recs[5].Op}, 5,
			[]int{4}, `fails when b's "RELEASE\n" to s is still in flight at c's "HELLO\n" to s`, ""},
		{"delay: only ops offered beside it", delay,
			sched.Decision{Kind: sched.InjectDecision, Key: delay.keys[2], Op: delay.recs[2].Op}, 2,
			[]int{3}, `fails when s's poll times out (to 0.300s`, `while a's "RENEW\n" to s is in flight`},
		{"delay: the message of a send offered beside it", ready,
			sched.Decision{Kind: sched.InjectDecision, Key: ready.keys[1], Op: ready.recs[1].Op}, 1,
			[]int{2, 3}, `fails when c's poll times out (to 0.300s`, `before s's "OK\n" to c arrives, which s was ready to send`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if at := findDecision(tc.d, tc.run.recs, tc.run.keys); at != tc.at {
				t.Fatalf("the decision's op is record %d, want %d", at, tc.at)
			}
			cands, ordered := candidates(tc.d, 0, []sched.Decision{tc.d}, tc.at, tc.run)
			var got []int
			for _, c := range cands {
				other := c.first
				if c.first == tc.at {
					other = c.second
				}
				got = append(got, other)
				if !c.pending && !c.sendReady || c.flip == nil {
					t.Errorf("candidate %d: pending %v, its send pending %v, flip %v: want one pending and a flip", other, c.pending, c.sendReady, c.flip)
				}
			}
			if !ordered || !slices.Equal(got, tc.want) {
				t.Fatalf("candidates %v (ordered %v), want %v", got, ordered, tc.want)
			}
			var r Race
			r.Decision = tc.d
			// Named as firstUndoing tries them: the likely pair first.
			pick := &cands[0]
			for k := range cands {
				if cands[k].likely > pick.likely {
					pick = &cands[k]
				}
			}
			fill(&r, tc.d, pick, tc.run.recs, newSymbolizer(nil), tc.run.past)
			if !strings.HasPrefix(r.Summary, tc.summary) || !strings.Contains(r.Summary, tc.inFlight) || !r.Concurrent || !r.Pending && !r.SendReady {
				t.Errorf("summary %q (concurrent %v, pending %v, send pending %v), want it to start %q and say %q", r.Summary, r.Concurrent, r.Pending, r.SendReady, tc.summary, tc.inFlight)
			}
		})
	}
}

// TestLikelyPool: of a held delivery's partners, the likely pair is a
// message into the same inbox that could have come the other way round:
// another process's, or the same process's on another connection (pool-1:
// the app's producer thread's PUT, held, and its consumer thread's GET,
// each on a connection of the pool), not one sent before it on its own
// connection, which arrives first in any order.
func TestLikelyPool(t *testing.T) {
	for _, tc := range []struct {
		name       string
		getConn    string
		wantLikely int // the GET's rank
		wantPick   int // the record the likeliest candidate names
	}{
		{"another connection of the pool", "10.77.0.2#1>10.77.0.1:7000", 2, 0},
		{"the same connection", "10.77.0.2#0>10.77.0.1:7000", 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := (&runSpec{}).
				op("a/0/t1", sched.Deliver, "inbox:s", "GET r1\n", 2).
				op("s/0/t0", sched.Poll, "inbox:s", "", 2).
				op("a/0/t2", sched.Deliver, "inbox:s", "PUT r1 d1\n")
			rs.recs[0].Op.Conn = tc.getConn
			rs.recs[2].Op.Conn = "10.77.0.2#0>10.77.0.1:7000"
			run := rs.fix()
			d := sched.Decision{Kind: sched.HoldDecision, Key: run.keys[2], Op: run.recs[2].Op}
			cands, _ := candidates(d, 0, []sched.Decision{d}, 2, run)
			likely := map[int]int{}
			pick := -1
			for _, c := range cands {
				likely[c.first] = c.likely
				if pick < 0 || c.likely > likely[pick] {
					pick = c.first
				}
			}
			if _, ok := likely[0]; !ok {
				t.Fatalf("candidates %+v: the GET is none", cands)
			}
			if likely[0] != tc.wantLikely || pick != tc.wantPick {
				t.Errorf("the GET ranks %d, the likeliest pair is record %d; want %d and record %d", likely[0], pick, tc.wantLikely, tc.wantPick)
			}
		})
	}
}

// TestSummaryCausalOrder: no clause tells an effect before its cause. A
// message is "in flight" at an op, or a timeout comes "while" it is, only
// when it was offered there (sent before); otherwise the sentence says only
// which came first.
func TestSummaryCausalOrder(t *testing.T) {
	hold := sched.Decision{Kind: sched.HoldDecision}
	adv := sched.Decision{Kind: sched.InjectDecision, Op: sched.Op{Kind: sched.Advance, Syscall: "clock_nanosleep"}}
	register := Event{Node: "waiter", Op: "deliver", To: "server", Data: `"REGISTER\n"`}
	release := Event{Node: "holder", Op: "deliver", To: "server", Data: `"RELEASE\n"`}
	timeout := Event{Node: "service", Op: "advance(clock_nanosleep)", Comment: "to 1.000s (+1s)"}
	for _, tc := range []struct {
		name      string
		d         sched.Decision
		r         Race
		want, not string
	}{
		{"held message, offered", hold, Race{First: release, Second: register, Pending: true},
			`waiter's "REGISTER\n" to server is still in flight at holder's "RELEASE\n"`, ""},
		{"held message, not yet sent", hold, Race{First: release, Second: register},
			`waiter's "REGISTER\n" to server arrives after holder's "RELEASE\n"`, "in flight"},
		{"timeout, message in flight", adv, Race{First: timeout, Second: register, Pending: true},
			`while waiter's "REGISTER\n" to server is in flight`, ""},
		{"timeout, message sent after", adv, Race{First: timeout, Second: register},
			`times out (to 1.000s (+1s)) before waiter's "REGISTER\n" to server arrives`, "in flight"},
		{"timeout, answer ready to send", adv, Race{First: timeout, Second: register, SendReady: true},
			`before waiter's "REGISTER\n" to server arrives, which waiter was ready to send`, "in flight"},
		{"timeout, op ready", adv, Race{First: timeout, Second: Event{Node: "b", Op: "send(write)", Data: `"GET 1\n"`}, Pending: true},
			`times out (to 1.000s (+1s)) before b sends "GET 1\n", which was ready to run`, "in flight"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := summary(tc.d, tc.r)
			if !strings.Contains(got, tc.want) || tc.not != "" && strings.Contains(got, tc.not) {
				t.Errorf("summary %q: want %q in it, not %q", got, tc.want, tc.not)
			}
		})
	}
}

// fakeDecision is a hold of an op of process p, for minimizing by verdicts
// a test chooses.
func fakeDecision(p string) sched.Decision {
	return sched.Decision{Kind: sched.HoldDecision, Key: sched.Key{Process: p, Kind: sched.Deliver}}
}

// TestVerifyDropsNoise: ddmin rules a decision necessary on one run of the
// set without it; a system's noise can make that run pass (issue 46: a
// kept decision whose flip still failed). The check runs each decision's
// flip afresh, drops the one whose run still fails, and minimizes again:
// here the failure needs a and c, and the first run of {a, c} passed.
func TestVerifyDropsNoise(t *testing.T) {
	a, b, c := fakeDecision("a/0"), fakeDecision("b/0"), fakeDecision("c/0")
	asked := map[string]int{}
	fails := &engine.TrialResult{Outcome: sched.Outcome{Kind: sched.Deadlock}}
	passes := &engine.TrialResult{Outcome: sched.Outcome{Kind: sched.Pass}}
	e := &explainer{deadline: time.Now().Add(time.Hour), log: discard(), cache: map[string]failure{},
		want: failure{kind: sched.Deadlock}}
	e.fake = func(ds []sched.Decision) *engine.TrialResult {
		k := subsetKey(ds)
		asked[k]++
		has := map[string]bool{}
		for _, d := range ds {
			has[d.Key.Process] = true
		}
		if has["a/0"] && has["c/0"] && !(len(ds) == 2 && asked[k] == 1) {
			return fails
		}
		return passes
	}
	ctx := context.Background()
	min, oneMin, err := e.minimize(ctx, []sched.Decision{a, b, c})
	if err != nil || !oneMin || len(min) != 3 {
		t.Fatalf("ddmin gave %d decisions (1-minimal %v, %v): the noise should have kept all three", len(min), oneMin, err)
	}
	got, checked, dropped, err := e.verify(ctx, min)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range got {
		names = append(names, d.Key.Process)
	}
	if !slices.Equal(names, []string{"a/0", "c/0"}) || dropped != 1 || checked != 4 {
		t.Errorf("checked %d, dropped %d, kept %v; want 4 checked (a's and b's flips, then the new set's two), b dropped, a and c kept", checked, dropped, names)
	}
}

// TestJumpRace: the jump names the race whose decision its op is, an
// injection at that step before a hold whose stretch spans it.
func TestJumpRace(t *testing.T) {
	races := []Race{
		{Decision: sched.Decision{Kind: sched.HoldDecision, First: 10, Step: 70}},
		{Decision: sched.Decision{Kind: sched.InjectDecision, Step: 59}},
		{Decision: sched.Decision{Kind: sched.HoldDecision, First: 80}}, // never released
	}
	for step, want := range map[int]int{5: 0, 10: 1, 59: 2, 69: 1, 70: 0, 80: 3, 500: 3} {
		if got := jumpRace(races, step); got != want {
			t.Errorf("step %d: race %d, want %d", step, got, want)
		}
	}
}

// TestClearRise: a jump is a rise beyond the noise of the runs behind its
// two points.
func TestClearRise(t *testing.T) {
	for _, tc := range []struct {
		a, b Point
		want bool
	}{
		{Point{Runs: 10, Failed: 2}, Point{Runs: 10, Failed: 10}, true},
		{Point{Runs: 10, Failed: 3}, Point{Runs: 10, Failed: 6}, false},
		{Point{Runs: 10, Failed: 8}, Point{Runs: 10, Failed: 10}, false},
		{Point{Runs: 4, Failed: 0}, Point{Runs: 4, Failed: 4}, true},
		{Point{Runs: 10, Failed: 6}, Point{Runs: 10, Failed: 3}, false},
	} {
		if got := clearRise(tc.a, tc.b); got != tc.want {
			t.Errorf("%d/%d to %d/%d: clear %v, want %v", tc.a.Failed, tc.a.Runs, tc.b.Failed, tc.b.Runs, got, tc.want)
		}
	}
}

// discard is a logger that says nothing.
func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestHeldDatagramData: a datagram held to the end of the run (lost to a
// drop fault) is described with its own bytes: the send its key places
// among its process's sends to that peer (a datagram's deliver is named by
// its place among the datagrams sent), not the last send there, which the
// run delivered (faults/drop.yaml, seed 2: "ping 1" lost, the clause said
// "ping 4" was in flight).
func TestHeldDatagramData(t *testing.T) {
	op := func(id uint64, kind sched.Kind, conn string) sched.Op {
		o := sched.Op{ID: id, Node: "client", LPID: "client/0/t0", Kind: kind, Site: "udp_client+0x1229", Peer: "10.77.0.1:7000", Conn: conn, Syscall: "sendto"}
		if kind == sched.Deliver {
			o.Object, o.Syscall = "inbox:server", sched.DatagramSyscall
		}
		return o
	}
	const conn = "10.77.0.2:32768>10.77.0.1:7000"
	var recs []sched.Record
	add := func(o sched.Op, data string, causes ...uint64) {
		recs = append(recs, sched.Record{Step: len(recs) + 1, Op: o, Data: []byte(data), Causes: causes})
	}
	// The first send's socket was not bound yet: its conn has port 0.
	add(op(2, sched.Send, "10.77.0.2:0>10.77.0.1:7000"), "ping 0")
	add(op(4, sched.Send, conn), "ping 1")
	add(op(3, sched.Deliver, conn), "ping 0", 2)
	add(op(6, sched.Send, conn), "ping 2")
	add(op(7, sched.Deliver, conn), "ping 2", 6)
	add(op(8, sched.Send, conn), "ping 3")
	add(op(9, sched.Deliver, conn), "ping 3", 8)
	held := sched.Decision{Kind: sched.HoldDecision, Op: op(5, sched.Deliver, conn),
		Key: sched.Key{Process: "client/0", Kind: sched.Deliver, Object: "inbox:server", Site: "udp_client+0x1229", Conn: "10.77.0.2#0>10.77.0.1:7000", N: 1}}
	if ev := heldEvent(held, recs, newSymbolizer(nil)); !strings.Contains(ev.Data, "ping 1") {
		t.Errorf("the datagram held to the end is described as %+v, want ping 1's", ev)
	}
}

// TestWhoRecvUnknown: a recv whose bytes and peer the trace does not
// hold (a UDP server's recvfrom on an unconnected socket) is named by its
// call, not as "a read of no bytes (its peer's close)", which a TCP recv
// without bytes is.
func TestWhoRecvUnknown(t *testing.T) {
	for _, c := range []struct {
		ev   Event
		want string
	}{
		{Event{Node: "server", Op: "recv(recvfrom)"}, "server's recv(recvfrom)"},
		{Event{Node: "server", Op: "recv(read)", Peer: "10.77.0.2:32768"}, "server's read of no bytes from 10.77.0.2:32768 (its peer's close)"},
		{Event{Node: "server", Op: "recv(read)", Peer: "10.77.0.2:32768", Data: `"WRITE\n"`}, `server's read of "WRITE\n"`},
	} {
		if got := who(c.ev); got != c.want {
			t.Errorf("who(%+v) = %q, want %q", c.ev, got, c.want)
		}
	}
}

// TestNeededFaults: each fault is taken out alone with every other
// decision kept; one the failure does not need stays out for the next
// (here the partition), one it needs stays in with what the run gave
// without it, and holds and recoveries are not tried.
func TestNeededFaults(t *testing.T) {
	fault := func(kind sched.Kind, node string, step int) sched.Decision {
		return sched.Decision{Kind: sched.InjectDecision, Key: sched.Key{Process: "lockstep", Kind: kind, Object: "node:" + node},
			Op: sched.Op{Kind: kind, Node: node}, Step: step}
	}
	crash, part, heal := fault(faults.Crash, "a", 10), fault(faults.Partition, "b", 20), fault(faults.Heal, "b", 30)
	hold := fakeDecision("c/0")
	fails := &engine.TrialResult{Outcome: sched.Outcome{Kind: sched.Deadlock}}
	passes := &engine.TrialResult{Outcome: sched.Outcome{Kind: sched.Pass}}
	var asked []int
	e := &explainer{deadline: time.Now().Add(time.Hour), log: discard(), cache: map[string]failure{},
		want: failure{kind: sched.Deadlock}}
	e.fake = func(ds []sched.Decision) *engine.TrialResult {
		asked = append(asked, len(ds))
		for _, d := range ds {
			if d.Op.Kind == faults.Crash {
				return fails
			}
		}
		return passes
	}
	ex := &Explanation{}
	set, err := e.neededFaults(context.Background(), ex, []sched.Decision{crash, hold, part, heal})
	if err != nil {
		t.Fatal(err)
	}
	if len(set) != 3 || slices.ContainsFunc(set, func(d sched.Decision) bool { return d.Op.Kind == faults.Partition }) {
		t.Errorf("kept %v, want all but the partition", set)
	}
	want := []FaultVerdict{
		{Fault: "the crash of a", Step: 10, Needed: true, Without: "pass"},
		{Fault: "the partition of b", Step: 20},
	}
	if !slices.Equal(ex.Faults, want) {
		t.Errorf("verdicts %+v, want %+v", ex.Faults, want)
	}
	// All four first (that the trace's decisions fail), then one run per
	// fault, the partition's without the crash's.
	if !slices.Equal(asked, []int{4, 3, 3}) {
		t.Errorf("runs of %v decisions, want [4 3 3]", asked)
	}
}

// TestFaultsAtTheirTimes: where the faults alone, each anchored after the
// trace's op, pass but fail at the times the trace made them (a cluster
// whose ops come late in the default order), the minimization goes on
// from the faults at their times, drops the holds, and says so; where
// they fail anchored, nothing is timed.
func TestFaultsAtTheirTimes(t *testing.T) {
	at := int64(1_120_000_000)
	fault := func(node string, step int) sched.Decision {
		return sched.Decision{Kind: sched.InjectDecision, Key: sched.Key{Process: "lockstep", Kind: faults.Partition, Object: "node:" + node},
			Op: sched.Op{Kind: faults.Partition, Node: node}, Step: step, VTime: &at}
	}
	all := []sched.Decision{fakeDecision("c/0"), fault("a", 10), fakeDecision("c/1"), fault("b", 20), fakeDecision("c/2")}
	fails := &engine.TrialResult{Outcome: sched.Outcome{Kind: sched.Deadlock}}
	passes := &engine.TrialResult{Outcome: sched.Outcome{Kind: sched.Pass}}
	for _, timedOnly := range []bool{true, false} {
		e := &explainer{deadline: time.Now().Add(time.Hour), log: discard(), cache: map[string]failure{}, want: failure{kind: sched.Deadlock}}
		e.fake = func(ds []sched.Decision) *engine.TrialResult {
			// Fails with both partitions; anchored, only with the holds too.
			var parts, timed, holds int
			for _, d := range ds {
				switch {
				case d.Op.Kind == faults.Partition:
					parts++
					if d.Timed {
						timed++
					}
				default:
					holds++
				}
			}
			if parts == 2 && (timed == 2 || holds == 3 || !timedOnly) {
				return fails
			}
			return passes
		}
		ex := &Explanation{}
		min, err := e.minimal(context.Background(), ex, all, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		timed := 0
		for _, d := range min {
			if d.Timed {
				timed++
			}
		}
		if len(min) != 2 || !ex.OneMinimal {
			t.Fatalf("timed only %v: kept %v (1-minimal %v), want the two partitions", timedOnly, min, ex.OneMinimal)
		}
		if want := map[bool]int{true: 2, false: 0}[timedOnly]; timed != want || (e.timed > 0) != timedOnly ||
			slices.ContainsFunc(ex.Notes, func(n string) bool { return strings.Contains(n, "at the times the trace made them") }) != timedOnly {
			t.Errorf("timed only %v: %d timed, notes %q", timedOnly, timed, ex.Notes)
		}
	}
}

// TestFlipCutByBudget: a flip whose run the budget cut short confirms
// nothing: the race is left unconfirmed, with no outcome, where it was
// once called confirmed with an empty one ("not this failure, but ").
func TestFlipCutByBudget(t *testing.T) {
	fails := &engine.TrialResult{Outcome: sched.Outcome{Kind: sched.Deadlock}}
	for _, ran := range []int{0, 1, 2} {
		e := &explainer{deadline: time.Now().Add(time.Hour), log: discard(), cache: map[string]failure{}, want: failure{kind: sched.Deadlock}}
		runs := 0
		e.fake = func([]sched.Decision) *engine.TrialResult {
			if runs++; runs >= ran {
				e.deadline = time.Now().Add(-time.Second) // the budget is spent after this run
			}
			return fails
		}
		if ran == 0 {
			e.deadline = time.Now().Add(-time.Second)
		}
		var cands []candidate
		for i := range 4 {
			cands = append(cands, candidate{first: i, second: i + 1, flip: []sched.Decision{fakeDecision(fmt.Sprintf("p%d", i))}})
		}
		r := &Race{}
		if _, err := e.firstUndoing(context.Background(), r, cands); !errors.Is(err, errBudget) {
			t.Fatalf("%d runs: err %v, want the budget's", ran, err)
		}
		if r.Confirmed || (r.FlipOutcome == "") != (ran == 0) {
			t.Errorf("%d runs before the budget ran out: %+v, want unconfirmed, an outcome only of a run made", ran, r)
		}
	}
}

// TestWholeRunNote: a minimization the budget stops with more than a
// tenth of a long trace's decisions left says the failure needs most of
// the trace's order; one that got below a tenth, or a short trace, does
// not.
func TestWholeRunNote(t *testing.T) {
	passes := &engine.TrialResult{Outcome: sched.Outcome{Kind: sched.Pass}}
	fails := &engine.TrialResult{Outcome: sched.Outcome{Kind: sched.Deadlock}}
	for _, tc := range []struct {
		n, needed, runs int
		note            bool
	}{
		{n: 400, needed: 400, runs: 12, note: true}, // every decision needed: nothing goes
		{n: 400, needed: 10, runs: 40, note: false}, // down to a few when the budget ran out
		{n: 40, needed: 40, runs: 12, note: false},  // a short trace
	} {
		var all []sched.Decision
		for i := range tc.n {
			all = append(all, fakeDecision(fmt.Sprintf("p%d", i)))
		}
		e := &explainer{deadline: time.Now().Add(time.Hour), log: discard(), cache: map[string]failure{}, want: failure{kind: sched.Deadlock}}
		e.fake = func(ds []sched.Decision) *engine.TrialResult {
			if e.runs >= tc.runs {
				e.deadline = time.Now().Add(-time.Second)
			}
			// Fails when it keeps the first tc.needed decisions.
			for i := range tc.needed {
				if !slices.ContainsFunc(ds, func(d sched.Decision) bool { return d.Key == all[i].Key }) {
					return passes
				}
			}
			return fails
		}
		ex := &Explanation{}
		if _, err := e.minimal(context.Background(), ex, all, time.Hour); err != nil {
			t.Fatal(err)
		}
		got := slices.ContainsFunc(ex.Notes, func(n string) bool { return strings.Contains(n, "a course of the whole run") })
		if got != tc.note || ex.OneMinimal {
			t.Errorf("%d decisions, %d needed, %d runs: the whole-run note %v (notes %q), 1-minimal %v", tc.n, tc.needed, tc.runs, got, ex.Notes, ex.OneMinimal)
		}
	}
}

// TestWholeRunLeavesCurve: past two thirds of the budget, a minimization
// that still needs most of a long trace's decisions stops and leaves the
// rest to the probability curve, saying so; without a curve (curveAt
// zero) it goes on to the budget's end.
func TestWholeRunLeavesCurve(t *testing.T) {
	var all []sched.Decision
	for i := range 300 {
		all = append(all, fakeDecision(fmt.Sprintf("p%d", i)))
	}
	fails := &engine.TrialResult{Outcome: sched.Outcome{Kind: sched.Deadlock}}
	passes := &engine.TrialResult{Outcome: sched.Outcome{Kind: sched.Pass}}
	for _, curve := range []bool{true, false} {
		e := &explainer{deadline: time.Now().Add(time.Hour), log: discard(), cache: map[string]failure{}, want: failure{kind: sched.Deadlock}}
		if curve {
			e.curveAt = time.Now().Add(-time.Second)
		}
		e.fake = func(ds []sched.Decision) *engine.TrialResult {
			if e.runs >= 30 {
				e.deadline = time.Now().Add(-time.Second)
			}
			if len(ds) == len(all) {
				return fails // every decision needed
			}
			return passes
		}
		ex := &Explanation{}
		min, err := e.minimal(context.Background(), ex, all, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		left := slices.ContainsFunc(ex.Notes, func(n string) bool { return strings.Contains(n, "went to the probability curve") })
		if e.toCurve != curve || left != curve || len(min) != len(all) {
			t.Errorf("curve %v: stopped for it %v, note %v, %d runs, %d kept: %q", curve, e.toCurve, left, e.runs, len(min), ex.Notes)
		}
		if curve && e.runs > 3 {
			t.Errorf("stopped after %d runs, want at the first split's (all, none, then one)", e.runs)
		}
	}
}
