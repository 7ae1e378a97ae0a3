package faults

import (
	"net/netip"
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
		if got := p.matches(tc.msg); got != tc.want {
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
	nodeOf := func(a netip.Addr) string {
		for n, s := range addr {
			if a.String() == s {
				return n
			}
		}
		return ""
	}
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
