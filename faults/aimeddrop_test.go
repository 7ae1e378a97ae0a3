package faults

import (
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/sched"
)

// An aimed drop loses the oldest datagram of its kind in flight on its
// link; with none in flight it is armed and holds back the next one until
// its drop, offered beside the other ops (alone in a lull), is taken,
// spent once. One that would lose nothing (the budget spent, outside the
// window, that link and kind armed already) acts on nothing and is not
// spent.
func TestAimedDrop(t *testing.T) {
	shape := func(msg string, n int, shape string) bool { return strings.Fields(msg)[0] == shape }
	p := Plan{Kinds: []sched.Kind{Drop}, Nodes: []string{"n1", "n2", "n3"}, Budget: 3, From: 100 * ms, Until: 10 * time.Second, Shape: shape}
	addr := map[string]string{"n1": "10.0.0.1", "n2": "10.0.0.2", "n3": "10.0.0.3"}
	nodeOf := nodesAt(addr)
	deliver := func(id uint64, from, to, msg string) *sched.Op {
		return &sched.Op{ID: id, Kind: sched.Deliver, Syscall: sched.DatagramSyscall, Node: from, Conn: addr[from] + ":7000>" + addr[to] + ":7000", Peer: addr[to] + ":7000", Msg: msg, Bytes: len(msg)}
	}
	dg := func(o *sched.Op) Datagram {
		_, to, _ := deliveryEnds(o, nodeOf)
		return Datagram{ID: o.ID, From: o.Node, To: to, Conn: o.Conn, Msg: o.Msg, Bytes: o.Bytes}
	}
	in := New(p, []string{"n1", "n2", "n3"}, 1)
	inFlight := []*sched.Op{deliver(3, "n1", "n2", "HB 1"), deliver(4, "n1", "n3", "YES 2"), deliver(6, "n1", "n2", "YES 3"), deliver(7, "n1", "n2", "YES 4")}
	var tg Targets
	for _, o := range inFlight {
		tg.Datagrams = append(tg.Datagrams, dg(o))
	}
	in.Offer(50*ms, tg)
	chose := func(o *sched.Op, at time.Duration) (lost uint64) {
		t.Helper()
		e, err := in.Chose(o, at)
		if err != nil {
			t.Fatal(err)
		}
		if e.Act == ActDrop {
			return e.Datagram
		}
		return 0
	}
	check := func(name string, lost, want uint64, budget int, peerHead, peer string) {
		t.Helper()
		if lost != want || in.budget != budget || !strings.HasPrefix(peer, peerHead) {
			t.Errorf("%s: lost datagram %d, budget %d, %q; want %d, %d, %q", name, lost, in.budget, peer, want, budget, peerHead)
		}
	}
	o := AimedDrop("n1", "n2", "YES", `k2 "YES"`)
	if !o.Made() || o.Kind != Drop {
		t.Fatalf("AimedDrop = %+v, not a made drop", o)
	}
	check("before the window", chose(o, 50*ms), 0, 3, "drops nothing: outside the fault window", o.Peer)
	o = AimedDrop("n1", "n2", "YES", `k2 "YES"`)
	check("the oldest of its kind on its link", chose(o, 200*ms), 6, 2, `loses #6, the "YES" datagram`, o.Peer)
	if d := sched.Describe(sched.Record{Op: *o}); d != o.Peer {
		t.Errorf("show of an aimed drop: %q, want the text it wrote", d)
	}

	// None in flight n3>n2: armed, spent; the next YES n3>n2 is held and
	// its drop offered.
	o = AimedDrop("n3", "n2", "YES", `k2 "YES"`)
	check("armed", chose(o, 300*ms), 0, 1, `arms: loses the next "YES" datagram n3>n2`, o.Peer)
	again := AimedDrop("n3", "n2", "YES", `k2 "YES"`)
	check("armed already", chose(again, 300*ms), 0, 1, "drops nothing: its link and kind are armed already", again.Peer)
	beat, yes, later := deliver(8, "n3", "n2", "HB 9"), deliver(9, "n3", "n2", "YES 5"), deliver(10, "n3", "n2", "YES 6")
	if in.Holds(beat, 310*ms, nodeOf) || !in.Holds(yes, 310*ms, nodeOf) || in.Holds(later, 310*ms, nodeOf) || !in.Armed() {
		t.Fatal("an armed drop holds another datagram than the first of its kind on its link")
	}
	tg.Datagrams = append(tg.Datagrams, dg(beat), dg(yes), dg(later))
	offers := in.Offer(310*ms, tg)
	var drop *sched.Op
	for _, f := range offers {
		if f.Kind == Drop && f.Object == dropObject(9) {
			drop = f
		}
	}
	if drop == nil || drop.Made() {
		t.Fatalf("offers %v: no drop of the held datagram", offers)
	}
	if got := in.InLull(offers, 0, false); got != drop {
		t.Errorf("in a lull: %v, want the armed drop", got)
	}
	// Were the drop declined, the clock may jump to the quiet period,
	// which lets the datagram go: no deadlock of lockstep's making.
	if d, ok := in.Deadline(310 * ms); !ok || d != p.Until {
		t.Errorf("deadline %v %v while a datagram waits for its drop, want the quiet period at %v", d, ok, p.Until)
	}
	check("the armed drop taken", chose(drop, 320*ms), 9, 1, "", "")
	if in.Armed() || in.Holds(yes, 320*ms, nodeOf) {
		t.Error("still armed after its drop")
	}
	o = AimedDrop("n1", "n2", "YES", `k2 "YES"`)
	check("another", chose(o, 400*ms), 6, 0, `loses #6`, o.Peer)
	o = AimedDrop("n1", "n2", "HB", `k1 "HB"`)
	check("the budget spent", chose(o, 500*ms), 0, 0, "drops nothing: the budget is spent", o.Peer)
}
