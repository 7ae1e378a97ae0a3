package tracer

import (
	"context"
	"log/slog"
	"slices"
	"strconv"

	"github.com/lockstep-dev/lockstep/sched"
)

// Quiescence: waiting until no traced thread can make progress without
// lockstep, then reporting what is pending.

// Settle waits until every traced thread is stopped at a gated syscall or
// asleep in the kernel, then reports pending and enabled ops.
func (t *Tracer) Settle(ctx context.Context) (State, error) {
	var st State
	var err error
	if e := t.do(func() { st, err = t.settle(ctx) }); e != nil {
		return st, e
	}
	return st, err
}

func (t *Tracer) settle(ctx context.Context) (State, error) {
	if !t.vt.fireDueTimer() {
		t.vt.wakeDueTimedWaits()
	}
	for {
		t.q.spinning = t.q.spinning[:0]
		if err := t.q.waitQuiescent(ctx); err != nil {
			return State{}, err
		}
		th := t.pt.nextAlone()
		if th == nil {
			break
		}
		th.allow()
	}
	t.ops.numberFresh()
	return t.snapshot(), nil
}

func (t *Tracer) snapshot() State {
	st := State{Live: len(t.pt.threads), ClockReads: t.stats.ClockReads}
	st.Exits, t.exits = t.exits, nil
	st.Spinning = append([]string(nil), t.q.spinning...)
	st.Timed = t.rt.take()
	if t.opts.Socks {
		st.Socks = t.pt.socks()
	}
	ops := append(t.ops.pendingBuf[:0], t.ops.ordered...)
	t.ops.noBooks = t.ops.pollAll
	t.ops.pollPending(ops)
	t.ops.noBooks, t.ops.pollAll = false, false
	st.Pending = make([]*sched.Op, 0, len(ops))
	st.Enabled = make([]*sched.Op, 0, len(ops))
	enabled := t.ops.enabledOps(ops)
	if !slices.Contains(enabled, true) && slices.ContainsFunc(ops, func(p *pendingOp) bool { return p.byBooks }) {
		// Before time moves or a deadlock is called, the kernel's word
		// rather than the books' (known): they miss what no op of
		// lockstep's brings, such as bytes a tracee spliced into a socket.
		t.ops.noBooks = true
		t.ops.pollPending(ops)
		t.ops.noBooks = false
		if enabled = t.ops.enabledOps(ops); slices.Contains(enabled, true) {
			t.stats.BooksMissed++
		}
	}
	for i, p := range ops {
		st.Pending = append(st.Pending, &p.op)
		if enabled[i] {
			st.Enabled = append(st.Enabled, &p.op)
		}
	}
	clear(ops)
	t.ops.pendingBuf = ops[:0]
	st.Deadlines = t.vt.deadlines(false)
	st.Queue = queueReader{t.vt}
	if len(st.Deadlines) > 0 {
		st.NextDeadline, st.HasDeadline = st.Deadlines[0].At, true
	} else if len(st.Enabled) == 0 {
		// A deadlock candidate (rare): worth a look at each thread. Only
		// here: with a deadline ahead, nothing enabled is every lull of
		// a Go cluster, and a dump at each wrote 224 MB of debug log in
		// 90 s of a raft trial.
		st.Unsettled = t.q.unsettled()
		st.AllHeld = t.pt.allHeld()
		t.logThreads()
	}
	return st
}

// logThreads writes, at debug level, what each thread is doing.
func (t *Tracer) logThreads() {
	if !t.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	for _, th := range t.pt.threads {
		ks, _, _ := th.kernelState()
		sc, _ := readSmall("/proc/" + strconv.Itoa(th.tid) + "/syscall")
		t.log.Debug("nothing enabled", "thread", th.String(), "state", th.state, "kernel", string(ks), "syscall", sc)
	}
}
