package faults

import (
	"net/netip"
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
// the engine's (package coverage knows kinds; faults does not import it).
type Pattern struct {
	Prefix, Contains, Lacks []byte
	OfKind                  func(msg string) bool
}

func (p Pattern) matches(msg string) bool {
	return strings.HasPrefix(msg, string(p.Prefix)) &&
		(len(p.Contains) == 0 || strings.Contains(msg, string(p.Contains))) &&
		(len(p.Lacks) == 0 || !strings.Contains(msg, string(p.Lacks))) &&
		(p.OfKind == nil || p.OfKind(msg))
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
			held = in.plan.matches(o.Msg)
		}
	}
	return held
}

// matches reports whether a message is of the kind the plan's holds hold.
func (p Plan) matches(msg string) bool {
	for _, pt := range p.Match {
		if pt.matches(msg) {
			return true
		}
	}
	return false
}
