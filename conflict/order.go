package conflict

import (
	"slices"

	"github.com/lockstep-dev/lockstep/sched"
)

// predecessors calls f with the records that record i happens after
// besides the earlier ops of its own lane: its causes (earlier records
// only), for a delivery its connection's previous delivery (TCP is
// FIFO: the connection is the delivery's lane), and for a recv that read a
// connection's end the FIN it read. It notes i as its connection's last
// delivery or FIN. Analyze and HappensBefore share it, so that
// a race explain calls causally related is one the conflict analysis
// orders too.
func predecessors(records []sched.Record, i int, index func(uint64) (int, bool), lastDeliver map[string]int, f func(j int)) {
	for _, c := range records[i].Causes {
		if j, ok := index(c); ok && j < i {
			f(j)
		}
	}
	op := &records[i].Op
	switch {
	case op.Kind == sched.Deliver:
		if j, ok := lastDeliver[op.Conn]; ok {
			f(j)
		}
		lastDeliver[op.Conn] = i
	case finOf(op):
		lastDeliver[finObject(op.Conn)] = i
	case op.Kind == sched.Recv && records[i].Result == 0 && op.Conn != "":
		// A recv that read the end of the connection read its FIN.
		if j, ok := lastDeliver[finObject(op.Conn)]; ok {
			f(j)
		}
	}
}

// Order is happens-before over one run's records, as the package comment
// defines it and Analyze builds it: a vector clock per record, so that
// each question costs one comparison. Analyze keeps the clocks of the ops
// later ops name only, which is all it needs; a caller asking about any
// two ops (explain, naming the pair a decision ordered) needs them all.
type Order struct {
	recs    []sched.Record
	lane    []int32
	clock   [][]uint32
	inboxOf map[string]string // connection -> its deliveries' inbox
}

// HappensBefore builds happens-before over records, in step order.
func HappensBefore(records []sched.Record) *Order {
	o := &Order{recs: records, lane: make([]int32, len(records)), clock: make([][]uint32, len(records)), inboxOf: connInboxes(records)}
	lanes := map[string]int32{}
	byID := make(map[uint64]int, len(records))
	for i := range records {
		l := lane(&records[i].Op)
		n, ok := lanes[l]
		if !ok {
			n = int32(len(lanes))
			lanes[l] = n
		}
		o.lane[i] = n
		byID[records[i].Op.ID] = i
	}
	index := func(id uint64) (int, bool) {
		j, ok := byID[id]
		return j, ok
	}
	cur := make([][]uint32, len(lanes))
	for i := range cur {
		cur[i] = make([]uint32, len(lanes))
	}
	lastDeliver := map[string]int{}
	for i := range records {
		vc := cur[o.lane[i]]
		join := func(c []uint32) {
			for k, v := range c {
				vc[k] = max(vc[k], v)
			}
		}
		predecessors(records, i, index, lastDeliver, func(j int) { join(o.clock[j]) })
		if op := &records[i].Op; finOf(op) {
			// As in Analyze: the closer's earlier ops come before its FIN.
			if k, ok := lanes[op.LPID]; ok {
				join(cur[k])
			}
		}
		vc[o.lane[i]]++
		o.clock[i] = append([]uint32(nil), vc...)
	}
	return o
}

// Before says whether record a happens before record b (never when a is
// b, or either is out of range).
func (o *Order) Before(a, b int) bool {
	if a == b || a < 0 || b < 0 || a >= len(o.lane) || b >= len(o.lane) {
		return false
	}
	l := o.lane[a]
	return o.clock[b][l] >= o.clock[a][l]
}

// Concurrent says whether neither of two records happens before the
// other: only the schedule ordered them.
func (o *Order) Concurrent(a, b int) bool { return !o.Before(a, b) && !o.Before(b, a) }

// Conflict says whether records a and b conflict, as Analyze marks them:
// the same object, neither before the other (which also keeps two ops of
// one lane apart), and not both polls, which only observe. Two ops on
// different objects are no race, whatever order a schedule gave them.
func (o *Order) Conflict(a, b int) bool {
	if a == b || a < 0 || b < 0 || a >= len(o.recs) || b >= len(o.recs) {
		return false
	}
	oa, ob := &o.recs[a].Op, &o.recs[b].Op
	if observes(oa.Kind) && observes(ob.Kind) || !o.Concurrent(a, b) {
		return false
	}
	for _, x := range objects(&o.recs[a], o.inboxOf) {
		if slices.Contains(objects(&o.recs[b], o.inboxOf), x) {
			return true
		}
	}
	return false
}
