package faults

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/sched"
)

// An aimed drop (sched.Aim, like a kind-aimed hold: match.go) loses one
// UDP datagram of one learned kind on one link, from one node to another:
// the oldest such datagram in flight when it is made. An exploring branch
// makes it just before its parent's trial delivered a datagram of that
// kind there, so that one is lost; the injector never draws it. Its op
// records what it aims at (AimedDrop), not the datagram's op ID, so a
// replay makes it up from its record (sched.Op.Made) and it picks the
// same datagram from the same state.

// AimedDrop is the op of an aimed drop: the oldest datagram in flight from
// one node to another whose shape is shape (label names the kind for
// people, as `lockstep kinds` does).
func AimedDrop(from, to, shape, label string) *sched.Op {
	return &sched.Op{
		LPID: "fault", Kind: Drop, Node: from, Object: "link:" + from + ">" + to,
		Conn: "datagram " + from + ">" + to + " of " + strconv.Quote(shape), Shape: sched.Bytes(shape), Peer: label,
	}
}

// choseAimedDrop discards the datagram an aimed drop aims at, unless it
// would do nothing: the budget spent, outside the plan's window, or no
// datagram of its kind in flight on its link (of those the plan's
// drop.match lets a drop lose, when it names some). Such a drop is recorded as
// dropping nothing and spends neither the budget nor a trigger; its
// effect acts on nothing.
func choseAimedDrop(in *Injector, o *sched.Op, now time.Duration, e *Effect) {
	from, to, _ := strings.Cut(strings.TrimPrefix(o.Object, "link:"), ">")
	why := in.aimedIdle(now, false, "")
	var target *Datagram
	if why == "" {
		for i := range in.dgrams {
			d := &in.dgrams[i]
			if d.From == from && d.To == to && in.plan.Shape(d.Msg, d.Bytes, string(o.Shape)) &&
				(len(in.plan.DropMatch) == 0 || matchesAny(in.plan.DropMatch, d.Msg)) {
				target = d
				break
			}
		}
		if target == nil {
			why = "no datagram of its kind is in flight " + from + ">" + to
		}
	}
	if why != "" {
		o.Peer = "drops nothing: " + why + "; not spent"
		e.Act = ActHold // nothing for the engine to do
		return
	}
	in.spend(now)
	e.Datagram = target.ID
	o.Peer = fmt.Sprintf("loses #%d, the %q datagram %s", target.ID, short(string(o.Shape)), target.Conn)
}
