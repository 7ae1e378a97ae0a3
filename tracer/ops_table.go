package tracer

import (
	"cmp"
	"log/slog"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/tracer/internal/callsite"
)

// opKind is what the tracer does with the pending ops of one kind: what
// their readiness depends on, when they are enabled and how they are
// released. kindTable has one entry per kind the tracer makes; a new kind
// is an entry there and its functions, in the part that owns its state.
type opKind struct {
	// polls appends the descriptors the op's readiness depends on; nil:
	// none.
	polls func(fds []unix.PollFd, p *pendingOp) []unix.PollFd
	// books answers the op's readiness from lockstep's books, when ok,
	// without a poll (see network.knownRecv); notePolled records that a
	// poll found it not ready, for books. Nil: always polled.
	books      func(p *pendingOp) (ready, ok bool)
	notePolled func(p *pendingOp)
	// enabled says whether releasing the op now would not block.
	enabled func(p *pendingOp) bool
	// interruptible: a signal lockstep knows was sent ends the wait
	// (vtime.interruptedBySignal), which enables it.
	interruptible bool
	// wakesPeer stirs the nodes besides the op's own that its release may
	// wake threads on (see network.stirOp); nil: none.
	wakesPeer func(p *pendingOp)
	// calm: releasing the op changes no socket lockstep's books vouch
	// for, so netGen stays (network.knownRecv).
	calm bool
	// threadName: the op's deadline records its thread's name
	// (Deadline.Thread).
	threadName bool
	// release lets the op proceed and says what it did.
	release func(p *pendingOp) (Released, error)
}

// opTable owns the pending ops: their creation at a stop, their numbering
// at a quiescent point, and the batched readiness polls that say which are
// enabled.
type opTable struct {
	opts  *Options
	log   *slog.Logger
	stats *Stats
	pt    *procTable
	net   *network
	vt    *vtime
	kinds map[sched.Kind]*opKind

	// seq orders ops within a quiescent round (pendingOp.seq); per tracer,
	// since the tracers of concurrent jobs run at once.
	seq     uint64
	pending map[uint64]*pendingOp
	// ordered are the pending ops in ID order: a state lists them so, at
	// every step, and a bulk transfer keeps dozens of chunks pending.
	ordered []*pendingOp
	fresh   []*pendingOp
	nextID  uint64
	sites   *callsite.Cache
	// pollGen numbers the batched readiness polls (pollPending); the
	// buffers are reused from state to state.
	pollGen    uint64
	pollFds    []unix.PollFd
	pollSpans  []pollSpan
	pendingBuf []*pendingOp
	enabledBuf []bool
	// noBooks makes pollPending ask the kernel for every op.
	noBooks bool
	// pollAll makes the next state's readiness all polls (see Run).
	pollAll bool
}

func newOpTable(opts *Options, log *slog.Logger, stats *Stats, pt *procTable) *opTable {
	var symbols *callsite.Symbols // a job's, across its trials
	if opts.Images != nil {
		symbols = opts.Images.symbols
	}
	return &opTable{
		opts: opts, log: log, stats: stats, pt: pt,
		pending: map[uint64]*pendingOp{},
		sites:   callsite.NewSharedCache(symbols),
	}
}

func (ot *opTable) newPending(th *thread, kind sched.Kind, c call) *pendingOp {
	ot.seq++
	p := &pendingOp{th: th, call: c, fd: -1, deadline: -1, seq: ot.seq}
	p.op = sched.Op{
		Node: th.proc.node.name, LPID: th.lpid, Kind: kind,
		Syscall: syscallName(c.nr),
	}
	if th.comm == "" {
		th.readState(false) // once; quiescence's reads keep it current
	}
	p.op.Thread = th.comm
	t0 := time.Now()
	p.op.Site, p.op.Caller = ot.sites.SiteAndCaller(&th.proc.site, th.regs.SP(), th.regs.FP(), ot.opts.SiteFrames)
	ot.stats.SiteTime += time.Since(t0)
	if th.firstCause != 0 {
		p.causes = append(p.causes, th.firstCause)
		th.firstCause = 0
	}
	ot.pt.setState(th, tsGated)
	th.pending = p
	ot.fresh = append(ot.fresh, p)
	ot.stats.Ops++
	return p
}

// newChunkOp makes the pending op that delivers ch, a chunk in flight
// (a captured message, or the rest of one its receiver had no room for),
// as op, caused by causes; the network queues the chunk.
func (ot *opTable) newChunkOp(ch *chunk, op sched.Op, causes []uint64) *pendingOp {
	ot.seq++
	p := &pendingOp{seq: ot.seq, fd: -1, deadline: -1, chunk: ch, op: op, causes: causes}
	ot.fresh = append(ot.fresh, p)
	return p
}

// lastFresh is the op made last since the last quiescent point, or nil.
func (ot *opTable) lastFresh() *pendingOp {
	if n := len(ot.fresh); n > 0 {
		return ot.fresh[n-1]
	}
	return nil
}

// kindOf is what the tracer does with ops of p's kind.
func (ot *opTable) kindOf(p *pendingOp) *opKind {
	if p.kind == nil {
		p.kind = ot.kinds[p.op.Kind]
	}
	return p.kind
}

// forget takes the op numbered id out of the pending ops.
func (ot *opTable) forget(id uint64) {
	delete(ot.pending, id)
	i, ok := slices.BinarySearchFunc(ot.ordered, id, func(p *pendingOp, id uint64) int { return cmp.Compare(p.op.ID, id) })
	if ok {
		ot.ordered = slices.Delete(ot.ordered, i, i+1)
	}
}

// forgetAll takes every op out of the pending ops.
func (ot *opTable) forgetAll() {
	clear(ot.pending)
	clear(ot.ordered)
	ot.ordered = ot.ordered[:0]
}

// byID is the pending op numbered id, or nil.
func (ot *opTable) byID(id uint64) *pendingOp { return ot.pending[id] }

func (ot *opTable) dropPending(p *pendingOp) {
	p.dropped = true
	if p.op.ID != 0 {
		ot.forget(p.op.ID)
	}
	if p.th != nil && p.th.pending == p {
		p.th.pending = nil
	}
}

// pollPending asks the kernel, in one ppoll, for the readiness of every
// op in ops that depends on one: one syscall per state instead of one per
// op, each a microsecond or two. The answers hold until pollGen moves: for
// enabled in this state, and for the release that follows it when nothing
// else was done in between (no tracee runs meanwhile).
func (ot *opTable) pollPending(ops []*pendingOp) {
	ot.pollGen++
	fds, spans := ot.pollFds[:0], ot.pollSpans[:0]
	for _, p := range ops {
		k := ot.kindOf(p)
		if k.books != nil {
			if r, ok := k.books(p); ok && !ot.noBooks {
				p.polled, p.pollReady, p.byBooks = ot.pollGen, r, true
				continue
			}
		}
		p.byBooks = false
		if k.polls == nil {
			continue
		}
		start := len(fds)
		if fds = k.polls(fds, p); len(fds) > start {
			spans = append(spans, pollSpan{p: p, start: start, end: len(fds)})
		}
	}
	ot.pollFds, ot.pollSpans = fds, spans
	if len(fds) == 0 {
		return
	}
	n, err := unix.Poll(fds, 0)
	for _, s := range spans {
		ok := false
		if err == nil && n > 0 {
			for _, f := range fds[s.start:s.end] {
				ok = ok || f.Revents != 0
			}
		}
		s.p.polled, s.p.pollReady = ot.pollGen, ok
		if k := ot.kindOf(s.p); err == nil && !ok && k.notePolled != nil {
			k.notePolled(s.p)
		}
	}
	clear(spans) // drop the references to the ops
}

// invalidate drops this state's batched readiness answers: the caller may
// have changed what they answered (a step's faults, a Release from outside
// the trial loop), so an op's readiness is polled again.
func (ot *opTable) invalidate() { ot.pollGen++ }

// batched returns this state's batched answer for p, if it has one.
func (ot *opTable) batched(p *pendingOp) (ready, ok bool) {
	return p.pollReady, p.polled != 0 && p.polled == ot.pollGen
}

// readyOp says whether p's descriptor fd is ready for ev: this state's
// batched answer when there is one, else a poll of its own.
func (ot *opTable) readyOp(p *pendingOp, fd int, ev int16) bool {
	if r, ok := ot.batched(p); ok {
		return r
	}
	return readyFd(fd, ev)
}

// readyProbe is readyOp for a poll-family op's descriptors.
func (ot *opTable) readyProbe(p *pendingOp) bool {
	if r, ok := ot.batched(p); ok {
		return r
	}
	return ready(p.probe)
}
