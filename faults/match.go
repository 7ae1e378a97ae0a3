package faults

import (
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/sched"
)

// MatchBytes is how many of a message's first bytes a Pattern looks at:
// the tracer copies that many into each deliver op (sched.Op.Msg) when a
// plan holds messages by kind.
const MatchBytes = 1024

// Pattern picks messages by their bytes, for holds of one kind of message
// (Plan.Match). A message is what one send sent (one deliver op); it
// matches when it begins with Prefix, contains Contains and does not
// contain Lacks, within its first MatchBytes bytes, and when OfKind says
// it is of a learned message kind (a nil field says nothing). OfKind is
// the engine's (package coverage knows kinds; faults does not import it);
// it is told the message's whole length n, of which msg may be the first
// MatchBytes, as a kind's shape was learned knowing it.
type Pattern struct {
	Prefix, Contains, Lacks []byte
	OfKind                  func(msg string, n int) bool
}

// matchesAny reports whether a message of n bytes whose first are msg
// matches one of ps.
func matchesAny(ps []Pattern, msg string, n int) bool {
	for _, p := range ps {
		if p.matches(msg, n) {
			return true
		}
	}
	return false
}

func (p Pattern) matches(msg string, n int) bool {
	return strings.HasPrefix(msg, string(p.Prefix)) &&
		(len(p.Contains) == 0 || strings.Contains(msg, string(p.Contains))) &&
		(len(p.Lacks) == 0 || !strings.Contains(msg, string(p.Lacks))) &&
		(p.OfKind == nil || p.OfKind(msg, max(n, len(msg))))
}

// HoldDir is which of a node's messages a hold of one kind holds.
type HoldDir uint8

const (
	// HoldDrawn draws To or From at each injection.
	HoldDrawn HoldDir = iota
	// HoldTo holds the messages the node receives.
	HoldTo
	// HoldFrom holds the messages the node sends.
	HoldFrom
)

// ParseHoldDir reads faults.hold.direction: to or from.
func ParseHoldDir(s string) (HoldDir, bool) {
	switch s {
	case "to":
		return HoldTo, true
	case "from":
		return HoldFrom, true
	}
	return HoldDrawn, false
}

// msgHoldKey names a hold of the messages to or from node; it is the hold
// op's Conn, so traces show it ("holds messages to n1 for 320ms"), and its
// key in Injector.held, where no connection's key ("ip:port>ip:port")
// looks like it.
func msgHoldKey(to bool, node string) string {
	if to {
		return "messages to " + node
	}
	return "messages from " + node
}

// parseMsgHold is the inverse of msgHoldKey.
func parseMsgHold(key string) (to bool, node string, ok bool) {
	if n, ok := strings.CutPrefix(key, "messages to "); ok {
		return true, n, true
	}
	if n, ok := strings.CutPrefix(key, "messages from "); ok {
		return false, n, true
	}
	return false, "", false
}

// msgHoldDirs are the directions a hold of one kind may take under the plan.
func (p Plan) msgHoldDirs() []bool {
	switch p.HoldDir {
	case HoldTo:
		return []bool{true}
	case HoldFrom:
		return []bool{false}
	}
	return []bool{true, false}
}

// possibleMsgHold says whether a hold of one kind can hit node: one of its
// directions is not held yet. It needs no message waiting: it holds those
// that come while it is in force.
func (in *Injector) possibleMsgHold(node string) bool {
	for _, to := range in.plan.msgHoldDirs() {
		if !in.holding(msgHoldKey(to, node)) {
			return true
		}
	}
	return false
}

// drawMsgHold draws the direction and length of a hold of one kind on
// o.Node.
func (in *Injector) drawMsgHold(o *sched.Op) {
	var dirs []bool
	for _, to := range in.plan.msgHoldDirs() {
		if !in.holding(msgHoldKey(to, o.Node)) {
			dirs = append(dirs, to)
		}
	}
	to := dirs[0]
	if len(dirs) > 1 {
		to = dirs[in.r.IntN(len(dirs))]
	}
	o.Conn = msgHoldKey(to, o.Node)
	o.Delay = int64(in.upTo(in.plan.MaxHold))
}

// heldMessage reports whether a hold of one kind in force at now holds the
// delivery o: it goes to (or comes from) the hold's node and its first
// bytes match one of the plan's patterns. Holds that ended are dropped.
func (in *Injector) heldMessage(o *sched.Op, now time.Duration, nodeOf func(netip.Addr) string) bool {
	src, dst, ok := strings.Cut(o.Conn, ">")
	if !ok {
		return false
	}
	from, to := addrNode(src, nodeOf), addrNode(dst, nodeOf)
	held := false
	for key, end := range in.held {
		toNode, node, ok := parseMsgHold(key)
		if !ok {
			continue
		}
		if now >= end {
			delete(in.held, key)
			continue
		}
		if !held && (toNode && to == node || !toNode && from == node) {
			held = in.plan.matches(o.Msg, o.Bytes)
		}
	}
	return held
}

// matches reports whether a message is of the kind the plan's holds hold.
func (p Plan) matches(msg string, n int) bool {
	for _, pt := range p.Match {
		if pt.matches(msg, n) {
			return true
		}
	}
	return false
}

// A kind-aimed hold (sched.Aim) holds the messages of one learned kind on
// one link, from one node to another, or on every link into a node or out
// of it, while every other message flows: an exploring branch aims it at
// what its parent's run showed, and the injector never draws it. Its op
// records what it aims at (KindHold), so a replay makes it up from its
// record (sched.Op.Made).

// KindHold is the op of a kind-aimed hold: the messages from one node to
// another whose shape is shape (label names the kind for people, as
// `lockstep kinds` does), held for length. One end may be sched.AnyNode:
// every link into to, or out of from. Its Conn names the hold as the
// injector keys it; its Node is the end it names.
func KindHold(from, to, shape, label string, length time.Duration) *sched.Op {
	node := from
	if from == sched.AnyNode {
		node = to
	}
	return &sched.Op{
		LPID: "fault", Kind: Hold, Node: node, Object: "link:" + from + ">" + to,
		Conn: kindHoldKey(from, to, shape), Shape: sched.Bytes(shape), Peer: label, Delay: int64(length),
	}
}

// kindHold is a kind-aimed hold in force: its link and its shape.
type kindHold struct{ from, to, shape string }

// covers reports whether the hold's link is the one from one node to
// another, or includes it: an end of sched.AnyNode stands for every other
// node (a node's messages to itself cross no link).
func (h kindHold) covers(from, to string) bool {
	return from != to && (h.from == sched.AnyNode || h.from == from) && (h.to == sched.AnyNode || h.to == to)
}

// kindHoldKey names a kind-aimed hold in Injector.held, apart from a
// connection's key and a hold of a node's messages: one link and one kind
// are held once at a time.
func kindHoldKey(from, to, shape string) string {
	return "messages " + from + ">" + to + " of " + strconv.Quote(shape)
}

// choseKindHold puts a kind-aimed hold in force, unless it would do
// nothing: its link and kind held already, the budget spent, or outside
// the plan's window (before From, in the quiet period). Such a hold is
// recorded as holding nothing and spends neither the budget nor a
// trigger, as a cut that would share a link does not.
func choseKindHold(in *Injector, o *sched.Op, now time.Duration) {
	if why := in.aimedIdle(now, now < in.held[o.Conn], "its link and kind are held"); why != "" {
		o.Peer = "holds nothing: " + why + "; not spent"
		return
	}
	in.spend(now)
	in.held[o.Conn] = now + time.Duration(o.Delay)
	from, to, _ := strings.Cut(strings.TrimPrefix(o.Object, "link:"), ">")
	in.kindHolds[o.Conn] = kindHold{from: from, to: to, shape: string(o.Shape)}
}

// aimedIdle is why a fault an exploring branch aimed, made at now, would
// do nothing ("": it would act): no shapes, what it aims at taken already
// (taken: what already is, as in "its link and kind are held"), the
// budget spent, or outside the plan's window.
func (in *Injector) aimedIdle(now time.Duration, taken bool, already string) string {
	switch {
	case in.plan.Shape == nil:
		return "the engine shapes no message"
	case taken:
		return already + " already"
	case in.budget <= 0:
		return "the budget is spent"
	case in.quiet || now < in.plan.From || now >= in.plan.Until:
		return "outside the fault window"
	}
	return ""
}

// heldKind reports whether a kind-aimed hold in force at now holds the
// delivery o: it goes over the hold's link and its bytes have the hold's
// shape. Holds that ended are dropped.
func (in *Injector) heldKind(o *sched.Op, now time.Duration, nodeOf func(netip.Addr) string) bool {
	src, dst, ok := strings.Cut(o.Conn, ">")
	if !ok {
		return false
	}
	from, to := addrNode(src, nodeOf), addrNode(dst, nodeOf)
	held := false
	for key, h := range in.kindHolds {
		if now >= in.held[key] {
			delete(in.held, key)
			delete(in.kindHolds, key)
			continue
		}
		if !held && h.covers(from, to) && o.Msg != "" {
			held = in.plan.Shape(o.Msg, o.Bytes, h.shape)
		}
	}
	return held
}
