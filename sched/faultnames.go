package sched

// FaultReplay is how a replay treats the ops of one fault kind. Package
// faults says it for each kind (faults.Replay) and the engine and explain
// hand it to Replay and Forced (FaultReplays), so that sched names no
// fault kind: a new kind that a replay may make up needs no line here.
type FaultReplay struct {
	// Remake says a replay may make the op up from its recorded
	// parameters when the engine does not offer it (a crash, a pause):
	// it needs nothing that only the engine knows is there (a crashed
	// node, a cut, a connection, a datagram, a link's traffic).
	Remake bool
	// Recovery says the op ends a fault in force (a restart, a heal):
	// Forced takes one when no traced op can run, as the clock would
	// bring it anyway.
	Recovery bool
	// KeepDraw says the engine's offer draws the op's Disk and Pick
	// afresh, and a forced replay puts the trace's back: they are what
	// the failure needs (a power cut's persist mode and pick).
	KeepDraw bool
}

// FaultReplays says how a replay treats each fault kind; nil, or a kind
// it does not know, gives the zero FaultReplay: taken only as offered.
type FaultReplays func(Kind) FaultReplay

func (f FaultReplays) of(k Kind) FaultReplay {
	if f == nil || !k.IsFault() {
		return FaultReplay{}
	}
	return f(k)
}

// The fault kinds whose show text Describe writes itself, by their names
// in traces: legacy display, for the kinds that existed before a kind
// wrote its own text into Op.Peer when drawn (as slow and every later
// kind do). Package faults defines them; no new kind belongs here.
const (
	crashKind       Kind = "crash"
	partitionKind   Kind = "partition"
	healKind        Kind = "heal"
	dropKind        Kind = "drop"
	pauseKind       Kind = "pause"
	clockJumpKind   Kind = "clock"
	clockDriftKind  Kind = "drift"
	resetKind       Kind = "reset"
	oneWayKind      Kind = "oneway"
	linkKind        Kind = "link"
	bipartitionKind Kind = "bipartition"
	holdKind        Kind = "hold"
	powerKind       Kind = "power"
	corruptKind     Kind = "corrupt"
	ioErrorKind     Kind = "ioerror"
	stallKind       Kind = "stall"
)
