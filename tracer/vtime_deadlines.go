package tracer

import (
	"slices"
	"sort"
	"time"

	"github.com/lockstep-dev/lockstep/sched"
)

// pendingDeadline: an op's, while it is pending.
func (p *pendingOp) pendingDeadline(vt *vtime) (Deadline, bool, bool) {
	if p.dropped || p.op.ID == 0 || vt.ops.byID(p.op.ID) != p || p.deadline < 0 || p.deadline >= never {
		return Deadline{}, true, false
	}
	d := Deadline{At: time.Duration(p.deadline), Node: p.op.Node, LPID: p.op.LPID, What: p.op.Syscall, Kind: p.op.Kind, Op: p.op.ID}
	if vt.ops.kindOf(p).threadName {
		d.Thread = p.th.name()
	}
	return d, false, false
}

// pendingDeadline: a timed wait's, while the thread is in it; hidden while it is
// being interrupted.
func (th *thread) pendingDeadline(vt *vtime) (Deadline, bool, bool) {
	if th.state != tsTimedWait || vt.pt.threadOf(th.tid) != th {
		return Deadline{}, true, false
	}
	if th.interrupted {
		return Deadline{}, false, true
	}
	return Deadline{At: time.Duration(th.waitDeadline), Node: th.proc.node.name, LPID: th.lpid, What: syscallName(th.waitNr), Kind: sched.Sleep, Thread: th.name()}, false, false
}

// pendingDeadline: a timer's expiry, while it is armed and exists.
func (v *vtimer) pendingDeadline(*vtime) (Deadline, bool, bool) {
	if v.removed || !v.armed {
		return Deadline{}, true, false
	}
	return Deadline{At: time.Duration(v.expiry), Node: v.proc.node.name, LPID: v.lpid, What: v.what()}, false, false
}

func (v *vtimer) what() string {
	switch v.kind {
	case kindTimerfd:
		return "timerfd"
	case kindItimer:
		if v.alarm {
			return "alarm"
		}
		return "itimer"
	}
	return "timer"
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

// queueReader is vtime's Queue.
type queueReader struct{ vt *vtime }

func (q queueReader) Next(skip []*sched.Op) (time.Duration, bool) {
	return q.vt.nextWake(skip)
}

func (q queueReader) List() []Deadline { return q.vt.deadlines(true) }

// nextWake is the earliest deadline in the queue, the owner's wakes
// included, leaving out the deadlines of the ops in skip.
func (vt *vtime) nextWake(skip []*sched.Op) (time.Duration, bool) {
	vt.pruneTimers()
	var next time.Duration
	ok := false
	vt.queue.each(vt, func(_ deadlineOwner, d Deadline, hidden bool) {
		if hidden || d.Op != 0 && slices.ContainsFunc(skip, func(o *sched.Op) bool { return o.ID == d.Op }) {
			return
		}
		if !ok || d.At < next {
			next, ok = d.At, true
		}
	})
	return next, ok
}
