package sched

// Strategy chooses which enabled operation is released next. A strategy is
// deterministic: for the same seed and the same sequence of enabled sets it
// makes the same choices.
type Strategy interface {
	// Name is the strategy's spec name ("random", "pct", "pos", "pos*",
	// "replay", with "+" appended for the conflict-analysis variants).
	Name() string
	// Reset starts a new trial with the trial's seed. stepsHint is an
	// estimate of the number of steps a trial takes (0 if unknown); PCT uses
	// it to place its change points.
	Reset(seed int64, stepsHint int)
	// Next returns the index in enabled of the op to release. enabled is
	// never empty and is sorted by Op.ID. An error ends the trial (replay
	// divergence).
	Next(enabled []*Op) (int, error)
}

// Forker is a strategy that may leave the run it forces at some decision
// (Branch, and Replay where its trace did): it calls fork with a seed, at
// most once per trial, during the Next that makes that decision, and the
// engine draws faults and delays from that seed from then on.
type Forker interface {
	OnFork(fork func(seed int64))
}

// Awaiter is a strategy that forces a recorded run (Replay): the engine
// settles again rather than decide while Ready says the op it must release
// next is not offered yet, and, for a while, once Done says its records
// have run out before the run reported the outcome they ended with.
type Awaiter interface {
	Done() bool
	Ready(enabled []*Op) bool
}

// Ender is a strategy whose records say where a run ends (Replay). The
// clients' exits end a run once each is seen, and the recorded run may have
// released an op or two more (a child process's last poll) before it saw
// them: while Owes the run a decision, the run goes on.
type Ender interface {
	// Owes says whether the records have a decision left (a back-off
	// aside), and whether it is here, among enabled.
	Owes(enabled []*Op) (left, here bool)
}

// Predictor is what conflict analysis offers the "+" variants: whether an
// operation with this signature may take part in a conflict. A signature
// never seen before may conflict.
type Predictor interface {
	MayConflict(Signature) bool
}

// Counter is a Predictor whose keys count how many ops of a signature a
// trial offered before an op (Op.Nth, the "+nth" schemes). CountKey is
// what the count is by: the key without the count.
type Counter interface {
	Counts() bool
	CountKey(Signature) string
}

// Numberer is a strategy that numbers the ops it is offered (Op.Nth, a
// "+" strategy under a counting scheme). A strategy that decides only
// after a forced prefix (Branch) shows it every decision's ops, so that
// its counts start at the trial's first op, as the history's do.
type Numberer interface {
	Number(enabled []*Op)
}
