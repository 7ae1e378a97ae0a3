package sched

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Change is what a Branch does where its forced prefix ends: the mutation
// an exploring campaign makes to a trial it keeps (package explore).
type Change uint8

const (
	// Extend changes nothing: the strategy takes over after the prefix.
	Extend Change = iota
	// Flip reverses a race: with Before, it keeps the thread of the
	// parent's op there back until an op like Before is released;
	// without, it releases another op than the parent's, one racing with
	// it (the same object, another process) when one is enabled.
	Flip
	// Early takes the injection on offer at once (a fault the parent's
	// budget had left, or the parent's next one sooner), else the delay
	// on offer.
	Early
	// Late declines injections and delays for Wait decisions: the
	// parent's next fault or delay lands later.
	Late
	// Drop declines the injections of the parent's next fault's kind for
	// the rest of the trial (Fault is its kind): that fault, and those
	// the injector would have offered after it, are not made.
	Drop
	// Aim injects Hold where the prefix ends: a fault the planner aimed
	// at what the parent's run showed (a hold of one learned kind of
	// message on one link), which the engine would never draw. The
	// strategy offers it (Extra) and releases it at the branch, or at
	// the next decision when the prefix diverged before its end.
	Aim
	// Longer makes the parent's fault that ends the prefix last longer:
	// the prefix's last decision is that injection, its record carrying
	// the new length (Op.Delay, which the injector keeps from the record
	// as a replay's), and the strategy takes over after it as with
	// Extend. What the fault did for longer decides what follows: a
	// detector that times out, a member that gives up on a peer.
	Longer
)

var changeNames = [...]string{Extend: "extend", Flip: "flip", Early: "early", Late: "late", Drop: "drop", Aim: "aim", Longer: "longer"}

func (c Change) String() string {
	if int(c) < len(changeNames) {
		return changeNames[c]
	}
	return fmt.Sprintf("change(%d)", c)
}

// Changes are the changes a Branch knows, in order.
func Changes() []Change { return []Change{Extend, Flip, Early, Late, Drop, Aim, Longer} }

// Branch forces a recorded prefix exactly as Replay forces a trace (the
// same identity, draws, remade faults and advances, forks and waits),
// makes one Change where it ends and leaves every later choice to Then,
// reset with Seed. A prefix that diverges (the run took another path)
// ends there: the branch is made at that point instead.
type Branch struct {
	// Prefix are the records forced; Auto ones (a quiet period's
	// recoveries) are skipped, as replay skips them.
	Prefix []Record
	// Parent is the op the recorded run released right after the prefix
	// (nil at its end): what Flip releases something else than.
	Parent *Op
	Change Change
	// Before is the op of the recorded run that raced with Parent and
	// came after it: Flip keeps Parent's thread back until the Skip+1-th
	// op like Before is released (Skip ops like it came between the two
	// there).
	Before *Op
	Skip   int
	// Wait is how many decisions Late declines injections and delays,
	// and the most Flip keeps Parent back.
	Wait int
	// Fault is the kind Drop declines.
	Fault Kind
	// Hold is the fault Aim injects, with all it needs recorded
	// (Op.Made): what it holds and for how long.
	Hold *Op
	// Then chooses after the branch; Seed resets it (the engine's reset
	// seed is the run's environment, the recorded trial's).
	Then   Strategy
	Seed   int64
	Faults FaultReplays

	fork func(seed int64)
	// prefix forces Prefix; nil once it is done or has diverged.
	prefix   *Replay
	begun    bool
	r        *rand.Rand
	recalled *Op
	branched bool
	aimed    bool // Aim's Hold was released
	// delegated: Then made the last decision (LastImmediate is its).
	delegated bool
	after     int // decisions made after the branch
	// reversing: Flip keeps Parent's thread back, until passed ops like
	// Before exceed Skip.
	reversing bool
	passed    int
	// Diverged is the step of the prefix at which the run offered no op
	// the trace recorded (0: the prefix replayed whole), and Why what it
	// wanted there and what it was offered instead.
	Diverged int
	Why      string
}

func (b *Branch) Name() string { return "branch+" + b.Then.Name() }

// OnFork is told the engine's fork (Forker): the prefix forks where its
// records say the recorded run did, and the branch where it ends, so that
// what follows draws its faults and delays afresh.
func (b *Branch) OnFork(fork func(seed int64)) { b.fork = fork }

func (b *Branch) Reset(_ int64, hint int) {
	b.recalled, b.branched, b.aimed, b.after, b.Diverged, b.Why = nil, false, false, 0, 0, ""
	b.reversing, b.passed = false, 0
	b.begin()
	b.r = newRand(b.Seed ^ 0x6272616e6368) // "branch"
	b.Then.Reset(b.Seed, hint)
}

// begin starts forcing the prefix from its first record.
func (b *Branch) begin() {
	b.begun = true
	b.prefix = NewReplay(&Trace{Records: b.Prefix}, nil, b.Faults)
	b.prefix.OnFork(func(seed int64) {
		if b.fork != nil {
			b.fork(seed)
		}
	})
}

// forcing says whether the prefix still has a decision to force (a
// branch asked before its Reset starts there).
func (b *Branch) forcing() bool {
	if !b.begun {
		b.begin()
	}
	if b.prefix != nil && b.prefix.Done() {
		b.prefix = nil
	}
	return b.prefix != nil
}

// LastImmediate reports whether Then made the last decision and released
// its op at once (a "+" strategy's own, past the prefix and the change).
func (b *Branch) LastImmediate() bool {
	im, ok := b.Then.(interface{ LastImmediate() bool })
	return b.delegated && ok && im.LastImmediate()
}

// Recalled is the record the last Next forced (Recaller): a probe-aimed
// fault of the prefix is aimed with its recorded answer. Nil past the
// prefix.
func (b *Branch) Recalled() *Op { return b.recalled }

// Extra remakes the prefix's next advance or fault when the run does not
// offer it (Replay.Extra); past the prefix, it offers Aim's Hold.
func (b *Branch) Extra(now time.Duration, choices []*Op) []*Op {
	if b.forcing() {
		return b.prefix.Extra(now, choices)
	}
	return b.aim()
}

// Ready holds the decision, as a replay does (Awaiter), while the
// prefix's next op is not offered yet: on a loaded machine a starved
// thread may still reach it, and deciding without it would end the
// prefix early.
func (b *Branch) Ready(enabled []*Op) bool {
	return !b.forcing() || b.prefix.Ready(enabled)
}

// Done is false: a branch goes on past its prefix, so the engine never
// waits for the outcome a recorded trace ended with.
func (b *Branch) Done() bool { return false }

// aimID is the ID of Aim's Hold: above every prefix op an Extra makes
// (extraIDBase + its index), whatever the prefix's length.
const aimID = extraIDBase + 1<<40

// aim offers Aim's Hold once the prefix is done (run whole or diverged),
// until it is released.
func (b *Branch) aim() []*Op {
	if b.Change != Aim || b.Hold == nil || b.aimed {
		return nil
	}
	o := *b.Hold
	o.ID = aimID
	return []*Op{&o}
}

func (b *Branch) Next(enabled []*Op) (int, error) {
	b.recalled, b.delegated = nil, false
	if n, ok := b.Then.(Numberer); ok {
		n.Number(enabled)
	}
	if b.forcing() {
		i, err := b.prefix.Next(enabled)
		if err == nil {
			b.recalled = b.prefix.Recalled()
			return i, nil
		}
		// Another path: the branch is made here.
		b.Diverged, b.Why = b.Prefix[b.prefix.step-1].Step, err.Error()
		b.prefix = nil
	}
	if !b.branched {
		b.branched = true
		if b.fork != nil {
			b.fork(b.Seed)
		}
		if i := b.change(enabled); i >= 0 {
			return i, nil
		}
	} else if i := b.releaseAim(enabled); i >= 0 {
		// The prefix diverged at the branch: Extra offered the hold only
		// from the next decision on.
		return i, nil
	}
	b.after++
	b.reversing = b.reversing && b.after <= b.Wait
	keep := enabled
	if b.declining() || b.reversing {
		keep = enabled[:0:0]
		for _, o := range enabled {
			if !b.Declines(o) && !b.keepsBack(o) {
				keep = append(keep, o)
			}
		}
		if len(keep) == 0 {
			keep = enabled
		}
	}
	i, err := b.Then.Next(keep)
	b.delegated = err == nil
	if err == nil && b.reversing {
		b.reversed(keep[i])
	}
	if err != nil || len(keep) == len(enabled) {
		return i, err
	}
	for j, o := range enabled {
		if o == keep[i] {
			return j, nil
		}
	}
	return 0, fmt.Errorf("branch: the strategy chose an op it was not offered")
}

// change makes the branch's one change at its first decision: the index
// of the op it releases, or -1 to leave the choice to Then.
func (b *Branch) change(enabled []*Op) int {
	switch b.Change {
	case Flip:
		if b.Before != nil && b.Parent != nil {
			b.reversing = true
			return -1
		}
		return b.flip(enabled)
	case Aim:
		return b.releaseAim(enabled)
	case Early:
		for _, pass := range []func(*Op) bool{b.injection, func(o *Op) bool { return o.Kind == Advance }} {
			for i, o := range enabled {
				if pass(o) {
					return i
				}
			}
		}
	}
	return -1
}

// releaseAim is the index of Aim's Hold among enabled (offered by Extra),
// or -1: not offered, or released already.
func (b *Branch) releaseAim(enabled []*Op) int {
	if b.Change != Aim || b.Hold == nil || b.aimed {
		return -1
	}
	for i, o := range enabled {
		if o.ID == aimID && SameOnProcess(o, b.Hold) {
			b.aimed = true
			return i
		}
	}
	return -1
}

// flip picks another op than the parent's: one racing with it (the same
// object, another process) if any is enabled, else any other program op.
func (b *Branch) flip(enabled []*Op) int {
	var racing, other []int
	for i, o := range enabled {
		if o.Kind == Advance || o.Kind.IsFault() || b.Parent != nil && SameOnProcess(o, b.Parent) {
			continue
		}
		if b.Parent != nil && o.Object != "" && o.Object == b.Parent.Object && o.LPID != b.Parent.LPID {
			racing = append(racing, i)
		} else {
			other = append(other, i)
		}
	}
	for _, c := range [][]int{racing, other} {
		if len(c) > 0 {
			return c[b.r.IntN(len(c))]
		}
	}
	return -1
}

// keepsBack says whether a reversing Flip keeps o back: an op of the
// parent's thread (a thread has one op pending: the parent's, then what
// follows it; the prefix was forced, so the thread has the name it had
// in the recorded run), or for a delivery, a delivery like it (a
// delivery's thread is its sender's, which must go on: the op that
// races with it may wait for what that thread sends next).
func (b *Branch) keepsBack(o *Op) bool {
	if !b.reversing {
		return false
	}
	if b.Parent.Kind == Deliver {
		return o.Kind == Deliver && SameOnProcess(o, b.Parent)
	}
	return o.LPID == b.Parent.LPID
}

// LikeBefore says whether o is an op like Before: of Before's thread
// too, where the parent's op is alike (two threads' sends through one
// helper to one connection).
func (b *Branch) LikeBefore(o *Op) bool {
	return SameOnProcess(o, b.Before) && (o.LPID == b.Before.LPID || !SameOnProcess(b.Parent, b.Before))
}

// reversed notes the op released while Flip reverses its race: the race
// is reversed once the Skip+1-th op like Before is, and given up when an
// op of the parent's thread had to go first (nothing else was enabled).
func (b *Branch) reversed(o *Op) {
	switch {
	case b.LikeBefore(o):
		if b.passed++; b.passed > b.Skip {
			b.reversing = false
		}
	case b.keepsBack(o):
		b.reversing = false
	}
}

// injection says whether o is a fault that starts one (not a recovery).
func (b *Branch) injection(o *Op) bool {
	return o.Kind.IsFault() && !b.Faults.of(o.Kind).Recovery
}

// declining says whether the branch declines some ops now.
func (b *Branch) declining() bool {
	return b.branched && (b.Change == Late && b.after <= b.Wait || b.Change == Drop)
}

// Clock tells the prefix's replay the virtual time (Clocked), so that it
// declines a lull's fault the entry took later, as replay does.
func (b *Branch) Clock(now time.Duration) {
	if b.prefix != nil {
		b.prefix.Clock(now)
	}
}

// Declines says whether the branch keeps o back now (Decliner): Late's
// injections and delays while it waits, Drop's kind for good. In the
// prefix it declines what replay declines: a fault offered alone in a
// lull that is not of the prefix's next decision's kind.
func (b *Branch) Declines(o *Op) bool {
	if b.forcing() {
		return b.prefix.Declines(o)
	}
	if !b.declining() {
		return false
	}
	if b.Change == Drop {
		return o.Kind == b.Fault && b.injection(o)
	}
	return b.injection(o) || o.Kind == Advance
}
