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

// TestPatternKind: a pattern naming a learned kind by its label holds
// that kind's messages whatever their values: raft's vote requests of any
// term, not its AppendEntries; a label copied with its "…" too.
func TestPatternKind(t *testing.T) {
	vote := "\x01\x88\xa4Addr\xae10.77.0.3:7000\xa9Candidate\xae10.77.0.3:7000\xa2ID\xa2n3\xacLastLogIndex\x0c"
	vote2 := "\x01\x88\xa4Addr\xae10.77.0.1:7000\xa9Candidate\xae10.77.0.1:7000\xa2ID\xa2n1\xacLastLogIndex\xcd\x01\x00"
	appendEntries := "\x00\x89\xa4Addr\xae10.77.0.3:7000\xa7Entries\x90\xa2ID\xa2n3"
	for _, label := range []string{"\x01{Addr:s Candidate:s", "\x01{Addr:s Candidate:s ID:s…"} {
		p := Pattern{Kind: []byte(label)}
		for _, tc := range []struct {
			msg  string
			want bool
		}{{vote, true}, {vote2, true}, {appendEntries, false}, {"", false}, {"PUT k1 v1\n", false}} {
			if got := p.matches(tc.msg); got != tc.want {
				t.Errorf("kind %q, %q: %v, want %v", label, tc.msg, got, tc.want)
			}
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
