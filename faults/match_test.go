package faults

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/sched"
)

// TestPattern: prefix and lacks together pick raft's AppendEntries that
// are not heartbeats.
func TestPattern(t *testing.T) {
	p := Pattern{Prefix: []byte{0}, Lacks: []byte("\xb1LeaderCommitIndex\x00")}
	for _, tc := range []struct {
		msg  string
		want bool
	}{
		{"\x00\x89\xa7Entries\xc0\xb1LeaderCommitIndex\x00\xacPrevLogEntry\x00", false}, // heartbeat
		{"\x00\x89\xa7Entries\xc0\xb1LeaderCommitIndex\x0c\xacPrevLogEntry\x0c", true},  // append
		{"\x01\x88\xacLastLogIndex\x0c", false},                                         // vote request
		{"", false},
	} {
		if got := p.matches(tc.msg, len(tc.msg)); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.msg, got, tc.want)
		}
	}
}

// TestMessageHold: a hold of one kind holds the matching deliveries to its
// node, on any connection, until its end, and nothing else.
func TestMessageHold(t *testing.T) {
	p := Plan{Kinds: []sched.Kind{Hold}, Nodes: []string{"n1", "n2"}, Budget: 1, MaxHold: 500 * ms, Until: 10 * time.Second,
		Match: []Pattern{{Prefix: []byte{1}}}, HoldDir: HoldTo}
	in := New(p, []string{"n1", "n2"}, 1)
	offers := in.Offer(0, Targets{})
	if len(offers) != 1 || offers[0].Kind != Hold {
		t.Fatalf("offers %v", offers)
	}
	o := offers[0]
	if _, err := in.Chose(o, 0); err != nil {
		t.Fatal(err)
	}
	node := o.Node
	other := map[string]string{"n1": "n2", "n2": "n1"}[node]
	addr := map[string]string{"n1": "10.0.0.1", "n2": "10.0.0.2"}
	nodeOf := nodesAt(addr)
	deliver := func(from, to, msg string) *sched.Op {
		return &sched.Op{Kind: sched.Deliver, Node: from, Conn: addr[from] + ":4000>" + addr[to] + ":7000", Msg: msg}
	}
	end := time.Duration(o.Delay)
	if o.Conn != "messages to "+node || end < 50*ms || end > 500*ms {
		t.Fatalf("hold %q for %v", o.Conn, end)
	}
	for _, tc := range []struct {
		o    *sched.Op
		at   time.Duration
		want bool
	}{
		{deliver(other, node, "\x01vote"), 0, true},
		{deliver(other, node, "\x01vote"), end - 1, true},
		{deliver(other, node, "\x00beat"), 0, false},
		{deliver(node, other, "\x01vote"), 0, false},
		{deliver(other, node, "\x01vote"), end, false}, // over
	} {
		if got := in.Holds(tc.o, tc.at, nodeOf); got != tc.want {
			t.Errorf("%s %q at %v: held %v, want %v", tc.o.Conn, tc.o.Msg, tc.at, got, tc.want)
		}
	}
}

// TestKindHold: a kind-aimed hold holds the deliveries of its shape on its
// link until its end, and nothing else: other kinds on the link, its kind
// on the link's other way or on another link; one on every link into a
// node, or out of it, holds its kind on each. One that would do nothing
// (its link and kind held already, no budget left, outside the window)
// spends nothing.
func TestKindHold(t *testing.T) {
	shape := func(msg string, n int, shape string) bool { return strings.Fields(msg)[0] == shape }
	p := Plan{Kinds: []sched.Kind{Hold}, Nodes: []string{"n1", "n2", "n3"}, Budget: 2, MaxHold: 500 * ms, From: 100 * ms, Until: 10 * time.Second, Shape: shape}
	addr := map[string]string{"n1": "10.0.0.1", "n2": "10.0.0.2", "n3": "10.0.0.3"}
	nodeOf := nodesAt(addr)
	deliver := func(from, to, msg string) *sched.Op {
		return &sched.Op{Kind: sched.Deliver, Node: from, Conn: addr[from] + ":7000>" + addr[to] + ":7000", Msg: msg, Bytes: len(msg)}
	}
	in := New(p, []string{"n1", "n2", "n3"}, 1)
	o := KindHold("n1", "n2", "APPEND", `k3 "APPEND"`, 300*ms)
	if !o.Made() || o.Kind != Hold {
		t.Fatalf("KindHold = %+v, not a made hold", o)
	}
	if _, err := in.Chose(o, 200*ms); err != nil {
		t.Fatal(err)
	}
	if in.budget != 1 || o.Peer != `k3 "APPEND"` {
		t.Fatalf("after the hold: budget %d, peer %q", in.budget, o.Peer)
	}
	if d, ok := in.Deadline(200 * ms); !ok || d != 500*ms {
		t.Errorf("deadline %v %v, want the hold's end", d, ok)
	}
	for _, tc := range []struct {
		at       time.Duration
		from, to string
		msg      string
		want     bool
	}{
		{300 * ms, "n1", "n2", "APPEND 4", true},
		{300 * ms, "n1", "n2", "HB", false},
		{300 * ms, "n2", "n1", "APPEND 4", false},
		{300 * ms, "n1", "n3", "APPEND 4", false},
		{499 * ms, "n1", "n2", "APPEND 5", true},
		{500 * ms, "n1", "n2", "APPEND 5", false}, // its end
	} {
		if got := in.Holds(deliver(tc.from, tc.to, tc.msg), tc.at, nodeOf); got != tc.want {
			t.Errorf("at %v %s>%s %q: held %v, want %v", tc.at, tc.from, tc.to, tc.msg, got, tc.want)
		}
	}
	// Held again while in force, then outside the window: not spent.
	in = New(p, []string{"n1", "n2", "n3"}, 1)
	for _, at := range []time.Duration{200 * ms, 250 * ms, 50 * ms} {
		if _, err := in.Chose(KindHold("n1", "n2", "APPEND", "", 300*ms), at); err != nil {
			t.Fatal(err)
		}
	}
	if in.budget != 1 {
		t.Errorf("budget %d after one hold and two that did nothing, want 1", in.budget)
	}
	// Once it ended (no delivery came to drop it), the link and kind may
	// be held again.
	again := KindHold("n1", "n2", "APPEND", "", 300*ms)
	if _, err := in.Chose(again, 600*ms); err != nil || in.budget != 0 {
		t.Errorf("a hold after the first one's end: %q (%v), budget %d", again.Peer, err, in.budget)
	}
	// Every link into a node, or out of it: the kind from any other
	// node, or to any; nothing else.
	for _, tc := range []struct {
		from, to string
		want     map[string]bool // by "from>to"
	}{
		{sched.AnyNode, "n2", map[string]bool{"n1>n2": true, "n3>n2": true, "n2>n1": false, "n1>n3": false, "n2>n2": false}},
		{"n1", sched.AnyNode, map[string]bool{"n1>n2": true, "n1>n3": true, "n2>n1": false, "n3>n2": false, "n1>n1": false}},
	} {
		in := New(p, []string{"n1", "n2", "n3"}, 1)
		o := KindHold(tc.from, tc.to, "APPEND", "", 300*ms)
		if _, err := in.Chose(o, 200*ms); err != nil || in.budget != 1 {
			t.Fatalf("hold %s: %v, budget %d", o.Object, err, in.budget)
		}
		if want := map[bool]string{true: tc.to, false: tc.from}[tc.from == sched.AnyNode]; o.Node != want {
			t.Errorf("hold %s: node %q, want %q", o.Object, o.Node, want)
		}
		for l, want := range tc.want {
			from, to, _ := strings.Cut(l, ">")
			if got := in.Holds(deliver(from, to, "APPEND 4"), 300*ms, nodeOf); got != want {
				t.Errorf("hold %s: %s APPEND held %v, want %v", o.Object, l, got, want)
			}
			if in.Holds(deliver(from, to, "HB"), 300*ms, nodeOf) {
				t.Errorf("hold %s: %s HB held", o.Object, l)
			}
		}
	}
	o = KindHold("n2", "n1", "ACK", "", 300*ms)
	in.budget = 0
	in.Chose(o, 200*ms)
	if !strings.HasPrefix(o.Peer, "holds nothing: the budget is spent") || in.Holds(deliver("n2", "n1", "ACK 1"), 300*ms, nodeOf) {
		t.Errorf("a hold past the budget: %q", o.Peer)
	}
}

// nodesAt names the node of each address in addr (node → address), as
// the engine's nodeOf does.
func nodesAt(addr map[string]string) func(netip.Addr) string {
	return func(a netip.Addr) string {
		for n, s := range addr {
			if a.String() == s {
				return n
			}
		}
		return ""
	}
}
