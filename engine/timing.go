package engine

import (
	"math/rand/v2"
	"time"

	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/tracer"
)

// advanceIDBase puts advance ops' IDs far above the tracer's, which count
// from 1, so the two never collide within a trial.
const advanceIDBase = uint64(1) << 48

// timing decides when virtual time may run ahead of enabled ops (docs/spec.md,
// "Timing"). Under ideal timing the clock moves only when nothing can run;
// with a budget of delays, the scheduler is also offered one advance op: a
// pending deadline at most maxDelay after the oldest enabled op became
// enabled. Choosing it holds every op enabled at that moment until the clock
// reaches the deadline, while time moves on as usual (earlier deadlines fire
// in order, ops enabled later run): the held ops are late by that much, as a
// slow network or a descheduled process would make them.
//
// One advance op is offered at a time, whatever the number of pending
// deadlines: a JVM or Go runtime always has housekeeping timers pending, and
// an op per deadline would make the scheduler spend its budget on them. The
// offered op's target is drawn uniformly among the distinct deadlines in the
// window (from the trial seed, so a seed fixes it) and kept until the op is
// chosen or the target leaves the window; its ID stays the same meanwhile,
// so priority-based strategies treat it as one pending op.
type timing struct {
	budget   int
	maxDelay time.Duration
	r        *rand.Rand

	since map[uint64]time.Duration // op ID → virtual time it was first enabled
	held  map[uint64]time.Duration // op ID → virtual time its hold ends

	offer  *sched.Op // the advance op on offer, nil when none
	nextID uint64
	// net holds the LPIDs that have run a network op: their sleeps are the
	// application's; other threads' sleeps are a runtime's housekeeping.
	net map[string]bool
	// from, placer and step place the delays (see placement.go).
	from   time.Duration
	placer *faults.Placer
	now    time.Duration // at the last observe
	step   int
	// trigger is the kind of the trigger the last delay used.
	trigger string
}

// timingStream is the delays' random stream.
const timingStream = 0x74696d696e67 // "timing"

func newTiming(budget int, maxDelay time.Duration, seed int64) *timing {
	return &timing{
		budget:   budget,
		maxDelay: maxDelay,
		r:        rand.New(rand.NewPCG(uint64(seed), timingStream)),
		since:    map[uint64]time.Duration{},
		held:     map[uint64]time.Duration{},
		nextID:   advanceIDBase,
		net:      map[string]bool{},
	}
}

// ready returns the enabled ops that are not held at now, and records when
// each op was first seen enabled. Ops no longer pending (their thread died)
// are forgotten.
func (t *timing) ready(pending, enabled []*sched.Op, now time.Duration) []*sched.Op {
	if len(t.since) > len(pending) || len(t.held) > 0 {
		live := make(map[uint64]bool, len(pending))
		for _, o := range pending {
			live[o.ID] = true
		}
		for id := range t.since {
			if !live[id] {
				delete(t.since, id)
				delete(t.held, id)
			}
		}
	}
	out := enabled[:0:0]
	for _, o := range enabled {
		if _, ok := t.since[o.ID]; !ok {
			t.since[o.ID] = now
		}
		if until, ok := t.held[o.ID]; ok {
			if until > now {
				continue
			}
			delete(t.held, o.ID)
		}
		out = append(out, o)
	}
	return out
}

// released forgets an op that ran.
func (t *timing) released(op *sched.Op) {
	delete(t.since, op.ID)
	delete(t.held, op.ID)
	switch op.Kind {
	case sched.Connect, sched.Accept, sched.Send, sched.Recv, sched.Poll, sched.Close, sched.Shutdown:
		t.net[op.LPID] = true
	}
}

// matters says whether a delay up to d is worth a choice. The timeouts of
// waits on sockets, virtual timers and node starts are; so are the sleeps of
// threads that have used the network, and a program's own sleeps before it
// has (ownSleep). A runtime's housekeeping (Go's sysmon, a JVM's VM and
// monitor threads, which always have a deadline pending a few µs or ms
// away) is not: a budget spent on it would hold nothing that matters.
func (t *timing) matters(d tracer.Deadline, now time.Duration) bool {
	switch d.Kind {
	case sched.Poll, sched.Recv, sched.Accept, sched.Connect, sched.KindInvalid:
		return true
	}
	return d.What == "start" || t.net[d.LPID] || ownSleep(d, now)
}

// holdEnd is the earliest end of a hold still in force, a deadline of its
// own: the held ops become ready then even if the deadline they were held
// for went away (its waiter was woken by something else).
func (t *timing) holdEnd(now time.Duration) (time.Duration, bool) {
	var end time.Duration
	ok := false
	for _, until := range t.held {
		if until > now && (!ok || until < end) {
			end, ok = until, true
		}
	}
	return end, ok
}

// advance returns the advance op to offer beside ready, or nil. list
// gives the deadlines, sorted by time, then LPID; it is called only when an
// offer is possible, as reading the queue sorts it and asks every wake
// (most steps have no budget or are outside the window).
func (t *timing) advance(ready []*sched.Op, list func() []tracer.Deadline, now time.Duration) *sched.Op {
	if t.budget <= 0 || len(ready) == 0 || !t.due(now) {
		t.offer = nil
		return nil
	}
	deadlines := list()
	oldest := now
	for _, o := range ready {
		if s := t.since[o.ID]; s < oldest {
			oldest = s
		}
	}
	limit := oldest + t.maxDelay
	// A delay already runs up to the latest hold in force: a target before
	// it would spend the budget on what is happening anyway.
	floor := now
	for _, until := range t.held {
		floor = max(floor, until)
	}
	// The window's distinct deadlines, each named by its first waiter.
	var window []tracer.Deadline
	for _, d := range deadlines {
		if d.At <= floor || d.At > limit || !t.matters(d, now) {
			continue
		}
		if n := len(window); n > 0 && window[n-1].At == d.At {
			continue
		}
		window = append(window, d)
	}
	if len(window) == 0 {
		t.offer = nil
		return nil
	}
	if t.offer != nil {
		for _, d := range window {
			if t.offer.At == int64(d.At) && t.offer.LPID == d.LPID && t.offer.Syscall == d.What {
				t.offer.Delay = int64(d.At - now)
				return t.offer
			}
		}
	}
	d := window[t.r.IntN(len(window))]
	t.nextID++
	t.offer = &sched.Op{
		ID: t.nextID, Node: d.Node, LPID: d.LPID, Kind: sched.Advance,
		Object: "time", Syscall: d.What, At: int64(d.At), Delay: int64(d.At - now),
	}
	return t.offer
}

// chose applies a chosen advance op: every ready op is held until its target.
func (t *timing) chose(adv *sched.Op, ready []*sched.Op) {
	t.budget--
	t.trigger = ""
	if t.placer != nil {
		t.trigger = t.placer.Take(t.now, t.step)
	}
	t.offer = nil
	for _, o := range ready {
		t.held[o.ID] = time.Duration(adv.At)
	}
}
