package faults

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/sched"
)

// An aimed drop (sched.Aim, like a kind-aimed hold: match.go) loses one
// UDP datagram of one learned kind on one link, from one node to another:
// the oldest such datagram in flight when it is made, or, with none in
// flight, the next one sent, which it holds back until its drop is taken
// (it is armed). An exploring branch makes it just before its parent's
// trial delivered a datagram of that kind there, or, where the budget's
// room ends the prefix sooner, there; the injector never draws it. Its op
// records what it aims at (AimedDrop), not an op ID, so a replay makes it
// up from its record (sched.Op.Made) and it picks the same datagram from
// the same state.

// AimedDrop is the op of an aimed drop: a datagram from one node to
// another whose shape is shape (label names the kind for people, as
// `lockstep kinds` does).
func AimedDrop(from, to, shape, label string) *sched.Op {
	return &sched.Op{
		LPID: "fault", Kind: Drop, Node: from, Object: "link:" + from + ">" + to,
		Conn: "datagram " + from + ">" + to + " of " + strconv.Quote(shape), Shape: sched.Bytes(shape), Peer: label,
	}
}

// armedDrop is an aimed drop made while no datagram of its kind was in
// flight on its link: the next one it holds back and loses.
type armedDrop struct {
	from, to, shape string
	target          uint64    // the deliver op ID of the datagram it holds (0: none yet)
	offer           *sched.Op // the drop of target on offer
}

// choseAimedDrop discards the datagram an aimed drop aims at, or arms it
// when none is in flight, unless it would do nothing: the budget spent,
// outside the plan's window, or that link and kind armed already. Such a
// drop is recorded as dropping nothing and spends neither the budget nor
// a trigger; its effect acts on nothing. Only datagrams the plan's
// drop.match lets a drop lose count, when it names some.
func choseAimedDrop(in *Injector, o *sched.Op, now time.Duration, e *Effect) {
	from, to, _ := strings.Cut(strings.TrimPrefix(o.Object, "link:"), ">")
	e.Act = ActHold // nothing for the engine to do, unless it loses one now
	if why := in.aimedIdle(now, in.armed[o.Conn] != nil, "its link and kind are armed"); why != "" {
		o.Peer = "drops nothing: " + why + "; not spent"
		return
	}
	in.spend(now)
	for _, d := range in.dgrams {
		if d.From == from && d.To == to && in.dropsShape(d.Msg, d.Bytes, string(o.Shape)) {
			e.Act, e.Datagram = ActDrop, d.ID
			o.Peer = fmt.Sprintf("loses #%d, the %q datagram %s", d.ID, short(string(o.Shape)), d.Conn)
			return
		}
	}
	in.armed[o.Conn] = &armedDrop{from: from, to: to, shape: string(o.Shape)}
	o.Peer = fmt.Sprintf("arms: loses the next %q datagram %s>%s", short(string(o.Shape)), from, to)
}

// dropsShape says whether a datagram (its first bytes and length) is of
// the shape and one the plan's drop.match lets a drop lose.
func (in *Injector) dropsShape(msg string, n int, shape string) bool {
	return in.plan.Shape(msg, n, shape) && in.dropMatches(msg, n)
}

// heldForDrop reports whether an armed drop holds the delivery o: the
// datagram it chose, or the first of its kind on its link it sees, which
// it then chooses.
func (in *Injector) heldForDrop(o *sched.Op, nodeOf func(netip.Addr) string) bool {
	if !o.Datagram() {
		return false
	}
	for _, key := range in.armedKeys() {
		a := in.armed[key]
		if a.target == o.ID {
			return true
		}
		if a.target != 0 {
			continue
		}
		if from, to, ok := deliveryEnds(o, nodeOf); ok && from == a.from && to == a.to && in.dropsShape(o.Msg, o.Bytes, a.shape) {
			a.target = o.ID
			return true
		}
	}
	return false
}

// armedKeys are the armed drops' keys in order, so that which one takes a
// datagram does not depend on map order.
func (in *Injector) armedKeys() []string {
	keys := make([]string, 0, len(in.armed))
	for k := range in.armed {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// armedOffers are the drops of the datagrams armed drops hold, to offer
// beside the enabled ops: each is taken like a drawn drop, but was spent
// when armed.
func (in *Injector) armedOffers() []*sched.Op {
	var out []*sched.Op
	for _, key := range in.armedKeys() {
		a := in.armed[key]
		if a.target == 0 {
			continue
		}
		i := slices.IndexFunc(in.dgrams, func(d Datagram) bool { return d.ID == a.target })
		if i < 0 {
			continue
		}
		if a.offer == nil {
			d := in.dgrams[i]
			a.offer = in.op(Drop, a.from, dropObject(d.ID))
			a.offer.Conn, a.offer.Peer, a.offer.Delay = d.Conn, a.to, int64(d.ID)
		}
		out = append(out, a.offer)
	}
	return out
}

// armedInLull is the drop of a datagram an armed drop holds, among
// offers: in a lull it is taken alone, since the datagram waits for it.
func (in *Injector) armedInLull(offers []*sched.Op) *sched.Op {
	for _, key := range in.armedKeys() {
		if o := in.armed[key].offer; o != nil && slices.Contains(offers, o) {
			return o
		}
	}
	return nil
}

// Armed reports whether an armed drop holds a datagram back: its drop is
// then offered even when no other op is ready.
func (in *Injector) Armed() bool {
	if in == nil {
		return false
	}
	for _, a := range in.armed {
		if a.target != 0 {
			return true
		}
	}
	return false
}

// firedArmed reports whether the drop o is the one an armed drop offered
// (or, in a replay, one of the same datagram), and disarms it: it was
// spent when armed.
func (in *Injector) firedArmed(o *sched.Op) bool {
	for _, key := range in.armedKeys() {
		if a := in.armed[key]; a.target != 0 && o.Object == dropObject(a.target) {
			delete(in.armed, key)
			return true
		}
	}
	return false
}
