package sched

import (
	"fmt"
	"time"
)

// OutcomeKind classifies how a trial ended.
type OutcomeKind string

const (
	Pass          OutcomeKind = "pass"
	ClientFailed  OutcomeKind = "client-failed"
	NodeCrashed   OutcomeKind = "node-crashed"
	Deadlock      OutcomeKind = "deadlock"
	VTimeLimit    OutcomeKind = "virtual-time-limit"
	StepLimit     OutcomeKind = "step-limit"
	CheckerFailed OutcomeKind = "checker-failed"
	// Livelock: a thread kept running without reaching a gated syscall, or
	// ops kept flowing while virtual time stood still (limits.livelock_steps).
	Livelock OutcomeKind = "livelock"
	// PropertyViolated: a node printed a line a never property forbids,
	// or a trial ended without the line an eventually property asks for
	// (spec properties:).
	PropertyViolated OutcomeKind = "property-violated"
	// Diverged: a replay met an op other than the recorded one.
	Diverged OutcomeKind = "diverged"
	// Error is lockstep's own failure, reported apart from bugs in the
	// system under test.
	Error OutcomeKind = "lockstep-error"
	// Unreplayable: a trial failed, but its trace, replayed right after
	// it (run --verify), did not give the same failure and ops. A failure
	// lockstep cannot reproduce is lockstep's own problem, reported apart
	// from bugs in the system under test as an Error is.
	Unreplayable OutcomeKind = "unreplayable"
)

// IsFailure reports whether the kind is a bug found in the system under test.
func (k OutcomeKind) IsFailure() bool {
	return k != Pass && k != Error && k != Diverged && k != Unreplayable
}

// IsLocksteps reports whether the kind is lockstep's own problem rather
// than the system's: an error, or a failure whose trace did not replay.
func (k OutcomeKind) IsLocksteps() bool { return k == Error || k == Unreplayable }

// Outcome is how one trial ended: the engine decides it, the trace
// records it and replay compares it.
type Outcome struct {
	Kind   OutcomeKind `json:"kind"`
	Detail string      `json:"detail,omitempty"`
	Node   string      `json:"node,omitempty"` // the node it names, if any
	// Property names the spec's property a PropertyViolated broke: what
	// identifies the failure across runs (the line may hold other
	// numbers).
	Property string        `json:"property,omitempty"`
	Steps    int           `json:"steps"`
	VTime    time.Duration `json:"vtime"` // virtual time at the end, in ns
}

func (o Outcome) String() string {
	s := string(o.Kind)
	if o.Detail != "" {
		s += ": " + o.Detail
	}
	return s + fmt.Sprintf(" (step %d, virtual time %v)", o.Steps, o.VTime)
}
