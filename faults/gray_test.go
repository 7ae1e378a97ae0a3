package faults

import (
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/sched"
)

// msg is a delivery from a to b of a text message, its ID id.
func msg(a, b, text string, id uint64) *sched.Op {
	o := deliver(a, b)
	o.ID, o.Msg, o.Bytes = id, text, len(text)
	return o
}

// A gray is drawn only for a node that has had messages; it lets through
// the kind the node had most (each delivery counted once, however often
// it is ready), holds every other kind on every link that way until its
// end, which is then a deadline, and leaves the other way alone.
func TestGray(t *testing.T) {
	p := plan(Gray)
	p.Nodes, p.MaxHold = []string{"s1"}, 300*ms
	p.ShapeOf = func(m string, _ int) string { w, _, _ := strings.Cut(m, " "); return w }
	in := New(p, nodes, 1)
	if o := in.Offer(0, Targets{}); len(o) != 0 {
		t.Fatalf("offered %v before s1 had any message", o)
	}
	id := uint64(0)
	ready := func(a, b, text string) *sched.Op {
		id++
		o := msg(a, b, text, id)
		if in.Holds(o, 10*ms, addrs) {
			t.Fatalf("%s>%s %q held before any gray", a, b, text)
		}
		return o
	}
	for range 3 {
		hb := ready("s2", "s1", "HB 1")
		in.Holds(hb, 20*ms, addrs) // ready again: counted once
		in.Holds(hb, 30*ms, addrs)
	}
	for range 2 {
		ready("s3", "s1", "APPEND 7 x")
	}
	now := 100 * ms
	o, e := inject(t, in, now, Targets{})
	if e.Act != ActHold || o.Kind != Gray || o.Conn != "gray to s1" {
		t.Fatalf("injected %v %q (%v)", o.Kind, o.Conn, e.Act)
	}
	if !strings.Contains(o.Peer, `but "HB"`) {
		t.Fatalf("gray %q: want the heartbeats let through", o.Peer)
	}
	end := now + time.Duration(o.Delay)
	if dl, ok := in.Deadline(now + 1); ok && dl == end {
		t.Fatalf("deadline at the gray's end %v with nothing held", dl)
	}
	for _, tc := range []struct {
		a, b, text string
		held       bool
	}{
		{"s2", "s1", "APPEND 8 y", true},
		{"s3", "s1", "VOTE 2", true},
		{"s2", "s1", "HB 2", false},
		{"s1", "s2", "APPEND 9 z", false}, // the other way
		{"s2", "s3", "APPEND 9 z", false}, // another node
	} {
		id++
		if got := in.Holds(msg(tc.a, tc.b, tc.text, id), now+ms, addrs); got != tc.held {
			t.Errorf("%s>%s %q during the gray: held %v, want %v", tc.a, tc.b, tc.text, got, tc.held)
		}
	}
	if dl, ok := in.Deadline(now + ms); !ok || dl != end {
		t.Errorf("deadline %v %v, want the gray's end %v", dl, ok, end)
	}
	id++
	if in.Holds(msg("s2", "s1", "APPEND 10 w", id), end, addrs) {
		t.Errorf("held at the gray's end %v", end)
	}
}

// The kind let through is the commonest of the node's last grayWindow
// messages that way, not of the whole trial: a node that answered as a
// follower and now sends heartbeats as a leader lets its heartbeats
// through.
func TestGrayRecent(t *testing.T) {
	p := plan(Gray)
	p.Nodes, p.MaxHold = []string{"s1"}, 300*ms
	p.ShapeOf = func(m string, _ int) string { w, _, _ := strings.Cut(m, " "); return w }
	in := New(p, nodes, 1)
	id := uint64(0)
	send := func(text string, n int) {
		for range n {
			id++
			in.Holds(msg("s1", "s2", text, id), 10*ms, addrs)
		}
	}
	send("ACK", 3*grayWindow)  // as a follower
	send("HB", grayWindow/2+1) // then as a leader
	o, _ := inject(t, in, 100*ms, Targets{})
	if o.Conn != "gray from s1" || !strings.Contains(o.Peer, `but "HB"`) {
		t.Fatalf("gray %q %q: want s1's recent heartbeats let through", o.Conn, o.Peer)
	}
}

// An aimed gray (AimedGray, made by an exploring branch) is a gray of the
// node one way that lets through the kind it had most, as a drawn one
// does, and says what it was aimed before; it holds nothing, spending
// nothing, when that way has had no message, is gray already, or the
// budget is spent.
func TestAimedGray(t *testing.T) {
	p := plan(Gray)
	p.Nodes, p.MaxHold, p.Budget = []string{"s1", "s2"}, 300*ms, 2
	p.ShapeOf = func(m string, _ int) string { w, _, _ := strings.Cut(m, " "); return w }
	p.Shape = func(m string, _ int, shape string) bool { return p.ShapeOf(m, 0) == shape }
	in := New(p, nodes, 1)
	id := uint64(0)
	ready := func(a, b, text string, at time.Duration) bool {
		id++
		return in.Holds(msg(a, b, text, id), at, addrs)
	}
	early := AimedGray("s1", true, "YES", `k5 "YES"`, 200*ms)
	if !early.Made() || early.Kind != Gray || early.Conn != "gray to s1" {
		t.Fatalf("AimedGray = %+v, not a made gray to s1", early)
	}
	if _, err := in.Chose(early, 10*ms); err != nil {
		t.Fatal(err)
	}
	if in.budget != 2 || !strings.HasPrefix(early.Peer, "holds nothing: no message has gone to s1 yet") {
		t.Fatalf("a gray before any message: budget %d, peer %q", in.budget, early.Peer)
	}
	for range 3 {
		ready("s2", "s1", "BEAT 1", 20*ms)
	}
	ready("s3", "s1", "GO", 30*ms)
	o := AimedGray("s1", true, "YES", `k5 "YES"`, 200*ms)
	if _, err := in.Chose(o, 100*ms); err != nil {
		t.Fatal(err)
	}
	if in.budget != 1 || !strings.Contains(o.Peer, `but "BEAT" for 200ms, from before a "YES"`) {
		t.Fatalf("after the gray: budget %d, peer %q", in.budget, o.Peer)
	}
	for _, tc := range []struct {
		a, b, text string
		held       bool
	}{
		{"s2", "s1", "YES 2", true},
		{"s3", "s1", "ASK 3", true},
		{"s2", "s1", "BEAT 3", false},
		{"s1", "s2", "ASK 2", false}, // the other way
	} {
		if got := ready(tc.a, tc.b, tc.text, 150*ms); got != tc.held {
			t.Errorf("%s>%s %q during the gray: held %v, want %v", tc.a, tc.b, tc.text, got, tc.held)
		}
	}
	again := AimedGray("s1", true, "ASK", `k4 "ASK"`, 50*ms)
	if _, err := in.Chose(again, 150*ms); err != nil {
		t.Fatal(err)
	}
	if in.budget != 1 || !strings.HasPrefix(again.Peer, "holds nothing: its node is gray that way already") {
		t.Errorf("a second gray of s1's way: budget %d, peer %q", in.budget, again.Peer)
	}
	if ready("s2", "s1", "YES 2", 300*ms) {
		t.Error("held at the gray's end")
	}
	from := AimedGray("s1", false, "ASK", `k4 "ASK"`, 50*ms)
	if _, err := in.Chose(from, 310*ms); err != nil {
		t.Fatal(err)
	}
	if in.budget != 0 || !strings.Contains(from.Peer, `holds every message from s1 but "ASK"`) {
		t.Errorf("a gray from s1: budget %d, peer %q", in.budget, from.Peer)
	}
	spent := AimedGray("s2", true, "YES", `k5 "YES"`, 50*ms)
	if _, err := in.Chose(spent, 330*ms); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(spent.Peer, "holds nothing: the budget is spent") {
		t.Errorf("a gray with the budget spent: %q", spent.Peer)
	}
	// In the quiet period, whose recovery closed the books (a branch's
	// prefix may run into it): nothing, and no error.
	in.budget = 1
	in.Recover()
	quiet := AimedGray("s2", true, "YES", `k5 "YES"`, 50*ms)
	if _, err := in.Chose(quiet, 400*ms); err != nil {
		t.Fatalf("an aimed gray in the quiet period: %v", err)
	}
	if !strings.HasPrefix(quiet.Peer, "holds nothing: outside the fault window") || in.budget != 1 {
		t.Errorf("an aimed gray in the quiet period: budget %d, %q", in.budget, quiet.Peer)
	}
}
