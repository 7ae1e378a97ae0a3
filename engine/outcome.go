package engine

import "github.com/lockstep-dev/lockstep/sched"

// The outcome of a trial is sched's (one type for the engine, traces,
// replay and reports); these names keep the engine's callers short.
type (
	Outcome     = sched.Outcome
	OutcomeKind = sched.OutcomeKind
)

const (
	Pass          = sched.Pass
	ClientFailed  = sched.ClientFailed
	NodeCrashed   = sched.NodeCrashed
	Deadlock      = sched.Deadlock
	VTimeLimit    = sched.VTimeLimit
	StepLimit     = sched.StepLimit
	CheckerFailed = sched.CheckerFailed
	Livelock      = sched.Livelock
	Diverged      = sched.Diverged
	Error         = sched.Error
	Unreplayable  = sched.Unreplayable
	// PropertyViolated: a never or eventually property of the spec broke.
	PropertyViolated = sched.PropertyViolated
)
