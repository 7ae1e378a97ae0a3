package tracer

import "time"

// Wake is a virtual deadline the tracer's owner keeps (the engine: a node's
// start, the end of a delay hold, a fault trigger or a fault's end). It
// answers the owner's current deadline, read at the time the queue is read,
// or false when it has none now.
type Wake func() (Deadline, bool)

// wakeOwner queues an Options.Wakes entry in the tracer's one deadline
// queue. It is never gone: its owner's deadline comes and goes with the
// owner's state, so it is asked again at every read rather than re-queued.
type wakeOwner struct{ wake Wake }

func (w *wakeOwner) pendingDeadline(*vtime) (Deadline, bool, bool) {
	d, ok := w.wake()
	return d, false, !ok
}

// nextWake is the earliest deadline in the queue, the owner's wakes
// included, leaving out the deadlines of the ops in skip (held enabled ops:
// theirs passed already, and moving to them would not move the clock).
func (vt *vtime) nextWake(skip map[uint64]bool) (time.Duration, bool) {
	vt.pruneTimers()
	var next time.Duration
	ok := false
	vt.queue.each(vt, func(_ deadlineOwner, d Deadline, hidden bool) {
		if hidden || d.Op != 0 && skip[d.Op] {
			return
		}
		if !ok || d.At < next {
			next, ok = d.At, true
		}
	})
	return next, ok
}
