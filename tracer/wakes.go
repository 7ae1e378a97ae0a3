package tracer

import (
	"time"

	"github.com/lockstep-dev/lockstep/sched"
)

// Wake is a virtual deadline the tracer's owner keeps (the engine: a node's
// start, the end of a delay hold, a fault trigger or a fault's end).
type Wake struct {
	// Next answers the owner's deadline now, read whenever the queue is
	// read, or false when it has none now.
	Next func() (Deadline, bool)
	// Listed puts it among the deadlines Queue.List lists, the ones the
	// engine offers as advance targets.
	Listed bool
}

// wakeOwner queues an Options.Wakes entry in the tracer's one deadline
// queue. It is never gone: its owner's deadline comes and goes with the
// owner's state, so it is asked again at every read rather than re-queued.
type wakeOwner struct{ wake Wake }

func (w *wakeOwner) pendingDeadline(*vtime) (Deadline, bool, bool) {
	d, ok := w.wake.Next()
	return d, false, !ok
}

// Queue reads the trial's one deadline queue at the time of the call, so
// it sees what the owner changed since the state was taken. Valid during
// the Step that was given the state.
type Queue interface {
	// Next is the earliest deadline, leaving out those of the ops in
	// skip (held enabled ops: theirs passed already, and moving to them
	// would not move the clock).
	Next(skip []*sched.Op) (time.Duration, bool)
	// List is the tracer's deadlines and the owner's listed wakes,
	// sorted as State.Deadlines.
	List() []Deadline
}

// queueReader is vtime's Queue.
type queueReader struct{ vt *vtime }

func (q queueReader) Next(skip []*sched.Op) (time.Duration, bool) {
	var ids map[uint64]bool
	if len(skip) > 0 {
		ids = make(map[uint64]bool, len(skip))
		for _, o := range skip {
			ids[o.ID] = true
		}
	}
	return q.vt.nextWake(ids)
}

func (q queueReader) List() []Deadline { return q.vt.deadlines(true) }

// nextWake is the earliest deadline in the queue, the owner's wakes
// included, leaving out the deadlines of the ops in skip.
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
