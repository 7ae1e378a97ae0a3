package sched

// FaultReplay is how a replay treats the ops of one fault kind. Package
// faults says it for each kind (faults.ReplayOf) and the engine and
// explain hand it to Replay and Forced (FaultReplays): replay decides by
// these traits, never by a kind's name, so a new kind that a replay may
// make up needs no line in sched.
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
	// afresh, and a forced replay puts the trace's back (with a
	// corruption's File and Spot): they are what the failure needs (a power cut's
	// persist mode and pick).
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
