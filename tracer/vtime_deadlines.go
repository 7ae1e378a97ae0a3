package tracer

import (
	"sort"
	"time"

	"github.com/lockstep-dev/lockstep/sched"
)

// deadlineOwner is something waiting for a virtual time: a pending op (a
// sleep, a poll's or a socket's timeout, a connect no one answers), a
// thread in a timed wait, a kernel timer.
type deadlineOwner interface {
	// pendingDeadline is the owner's pending deadline. gone says it has none any
	// more (released, woken, disarmed, exited) until it is queued again;
	// hidden, that it is not to be listed now (a wait being interrupted).
	pendingDeadline(vt *vtime) (d Deadline, gone, hidden bool)
}

// deadlineQueue is the one queue of the tracer's virtual deadlines. Their
// owners queue themselves when they start waiting (numberFresh, takeTimeout,
// arm) and leave it when they stop; the state's deadlines, the timers that
// fire and the timed waits woken when the clock moves are read from it.
type deadlineQueue struct {
	owners []deadlineOwner // in the order they were queued
	queued map[deadlineOwner]bool
}

// add queues o, once.
func (q *deadlineQueue) add(o deadlineOwner) {
	if q.queued == nil {
		q.queued = map[deadlineOwner]bool{}
	}
	if !q.queued[o] {
		q.queued[o] = true
		q.owners = append(q.owners, o)
	}
}

// each calls f for every queued owner with a pending deadline, in queue
// order, and drops the owners whose deadline is gone.
func (q *deadlineQueue) each(vt *vtime, f func(o deadlineOwner, d Deadline, hidden bool)) {
	keep := q.owners[:0]
	for _, o := range q.owners {
		d, gone, hidden := o.pendingDeadline(vt)
		if gone {
			delete(q.queued, o)
			continue
		}
		keep = append(keep, o)
		f(o, d, hidden)
	}
	clear(q.owners[len(keep):])
	q.owners = keep
}

// deadlines lists every pending deadline of the tracer's (State.Deadlines)
// and, with listed, the owner's listed wakes (Queue.List), sorted by time,
// then LPID, then what waits.
func (vt *vtime) deadlines(listed bool) []Deadline {
	vt.pruneTimers()
	var out []Deadline
	vt.queue.each(vt, func(o deadlineOwner, d Deadline, hidden bool) {
		if w, owners := o.(*wakeOwner); !hidden && (!owners || listed && w.wake.Listed) {
			out = append(out, d)
		}
	})
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.At != b.At {
			return a.At < b.At
		}
		if a.LPID != b.LPID {
			return a.LPID < b.LPID
		}
		return a.What < b.What
	})
	return out
}

// pendingDeadline: an op's, while it is pending.
func (p *pendingOp) pendingDeadline(vt *vtime) (Deadline, bool, bool) {
	if p.dropped || p.op.ID == 0 || vt.ops.pending[p.op.ID] != p || p.deadline < 0 || p.deadline >= never {
		return Deadline{}, true, false
	}
	d := Deadline{At: time.Duration(p.deadline), Node: p.op.Node, LPID: p.op.LPID, What: p.op.Syscall, Kind: p.op.Kind, Op: p.op.ID}
	if vt.ops.kinds[p.op.Kind].threadName {
		d.Thread = p.th.name()
	}
	return d, false, false
}

// pendingDeadline: a timed wait's, while the thread is in it; hidden while it is
// being interrupted.
func (th *thread) pendingDeadline(vt *vtime) (Deadline, bool, bool) {
	if th.state != tsTimedWait || vt.pt.threads[th.tid] != th {
		return Deadline{}, true, false
	}
	if th.interrupted {
		return Deadline{}, false, true
	}
	return Deadline{At: time.Duration(th.waitDeadline), Node: th.proc.node.name, LPID: th.lpid, What: vt.ops.syscallName(th.waitNr), Kind: sched.Sleep, Thread: th.name()}, false, false
}

// pendingDeadline: a timer's expiry, while it is armed and exists.
func (v *vtimer) pendingDeadline(*vtime) (Deadline, bool, bool) {
	if v.removed || !v.armed {
		return Deadline{}, true, false
	}
	return Deadline{At: time.Duration(v.expiry), Node: v.proc.node.name, LPID: v.lpid, What: v.what()}, false, false
}
