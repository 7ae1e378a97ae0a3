package explain

import (
	"github.com/lockstep-dev/lockstep/conflict"
	"github.com/lockstep-dev/lockstep/sched"
)

// causality answers happens-before questions over a run's records by the
// conflict analysis's order (conflict.HappensBefore): an op happens after
// its causes (a delivery's send, the deliveries a recv read, the connect
// an accept returned: eBPF-matched or lockstep's own books), after the
// earlier ops of its thread, and a delivery after the earlier ones of its
// connection. A delivery follows its send only, not its sender's later
// ops, though it carries the sender's LPID. A race explain calls causally
// related is one the conflict analysis orders.
type causality struct{ order *conflict.Order }

func newCausality(recs []sched.Record) *causality {
	return &causality{order: conflict.HappensBefore(recs)}
}

// threadOp says whether an op is its thread's own, in its program order.
func threadOp(op *sched.Op) bool {
	return op.Kind != sched.Deliver && op.Kind != sched.Advance && !op.Kind.IsFault()
}

// past is the set of records in i's causal past, i included.
func (c *causality) past(i int) map[int]bool {
	seen := map[int]bool{i: true}
	for j := 0; j < i; j++ {
		if c.order.Before(j, i) {
			seen[j] = true
		}
	}
	return seen
}

// before says whether record a happens before record b.
func (c *causality) before(a, b int) bool { return c.order.Before(a, b) }

// conflict says whether records a and b race on one object, as the
// conflict analysis says (conflict.Order.Conflict).
func (c *causality) conflict(a, b int) bool { return c.order.Conflict(a, b) }

// Slice returns the steps of the records in the failure's causal past: the
// failing node's last op and what happens before it, with every fault and
// advance (they act on ops without being their causes). With no failing
// node (a deadlock, a limit), every thread's last op counts.
func Slice(recs []sched.Record, node string) []int {
	c := newCausality(recs)
	keep := map[int]bool{}
	lastOf := map[string]int{}
	for i := range recs {
		op := &recs[i].Op
		if threadOp(op) && (node == "" || op.Node == node) {
			lastOf[op.LPID] = i
		}
	}
	for _, i := range lastOf {
		for j := range c.past(i) {
			keep[j] = true
		}
	}
	var steps []int
	for i := range recs {
		if keep[i] || !threadOp(&recs[i].Op) && recs[i].Op.Kind != sched.Deliver {
			steps = append(steps, recs[i].Step)
		}
	}
	return steps
}

// FailingNode is the spec node an outcome names ("server" of
// "server/0").
func FailingNode(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return s[:i]
		}
	}
	return s
}
