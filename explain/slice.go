package explain

import "github.com/lockstep-dev/lockstep/sched"

// causality answers happens-before questions over a run's records: an op
// happens after its causes (a delivery's send, the deliveries a recv read,
// the connect an accept returned: eBPF-matched or lockstep's own books)
// and after the earlier ops of its thread. A delivery follows its send
// only, not its sender's later ops, though it carries the sender's LPID.
type causality struct {
	recs []sched.Record
	pred [][]int // direct predecessors of each record
}

func newCausality(recs []sched.Record) *causality {
	c := &causality{recs: recs, pred: make([][]int, len(recs))}
	byID := map[uint64]int{}
	last := map[string]int{} // LPID → its last traced op
	for i := range recs {
		op := &recs[i].Op
		for _, id := range recs[i].Causes {
			if j, ok := byID[id]; ok {
				c.pred[i] = append(c.pred[i], j)
			}
		}
		if threadOp(op) {
			if j, ok := last[op.LPID]; ok {
				c.pred[i] = append(c.pred[i], j)
			}
			last[op.LPID] = i
		}
		if op.ID != 0 {
			byID[op.ID] = i
		}
	}
	return c
}

// threadOp says whether an op is its thread's own, in its program order.
func threadOp(op *sched.Op) bool {
	return op.Kind != sched.Deliver && op.Kind != sched.Advance && !op.Kind.IsFault()
}

// past is the set of records in i's causal past, i included.
func (c *causality) past(i int) map[int]bool {
	seen := map[int]bool{i: true}
	stack := []int{i}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, p := range c.pred[x] {
			if !seen[p] {
				seen[p] = true
				stack = append(stack, p)
			}
		}
	}
	return seen
}

// before says whether record a happens before record b.
func (c *causality) before(a, b int) bool { return a != b && c.past(b)[a] }

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
