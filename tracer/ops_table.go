package tracer

import (
	"cmp"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/sched"

	"github.com/lockstep-dev/lockstep/tracer/internal/callsite"
)

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
	gates map[int]gate // for the syscalls' names

	// seq orders ops within a quiescent round (pendingOp.seq); per tracer,
	// since the tracers of concurrent jobs run at once.
	seq     uint64
	pending map[uint64]*pendingOp
	fresh   []*pendingOp
	nextID  uint64
	sites   *callsite.Cache
	// pollGen numbers the batched readiness polls (pollPending); the
	// buffers are reused from state to state.
	pollGen    uint64
	pollFds    []unix.PollFd
	pollSpans  []pollSpan
	pendingBuf []*pendingOp
	idsBuf     []uint64
	enabledBuf []bool
	// noBooks makes pollPending ask the kernel for every op.
	noBooks bool
	// pollAll makes the next state's readiness all polls (see Run).
	pollAll bool
}

func newOpTable(opts *Options, log *slog.Logger, stats *Stats, pt *procTable) *opTable {
	return &opTable{
		opts: opts, log: log, stats: stats, pt: pt,
		pending: map[uint64]*pendingOp{},
		sites:   callsite.NewCache(),
	}
}

func (ot *opTable) newPending(th *thread, kind sched.Kind, nr int, args [6]uint64) *pendingOp {
	ot.seq++
	p := &pendingOp{th: th, nr: nr, args: args, fd: -1, deadline: -1, seq: ot.seq}
	p.op = sched.Op{
		Node: th.proc.node.name, LPID: th.lpid, Kind: kind,
		Syscall: ot.syscallName(nr),
	}
	if th.comm == "" {
		th.readState(false) // once; quiescence's reads keep it current
	}
	p.op.Thread = th.comm
	t0 := time.Now()
	p.op.Site = ot.sites.Site(&th.proc.site, th.regs.SP(), th.regs.FP(), ot.opts.SiteFrames)
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

func (ot *opTable) dropPending(p *pendingOp) {
	p.dropped = true
	if p.op.ID != 0 {
		delete(ot.pending, p.op.ID)
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
		k := ot.kinds[p.op.Kind]
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
		if k := ot.kinds[s.p.op.Kind]; err == nil && !ok && k.notePolled != nil {
			k.notePolled(s.p)
		}
	}
	clear(spans) // drop the references to the ops
}

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

// numberFresh gives the ops that appeared since the last quiescent point
// their IDs, in LPID order so that numbering does not depend on the order
// in which the kernel reported the stops.
func (ot *opTable) numberFresh() {
	slices.SortStableFunc(ot.fresh, func(a, b *pendingOp) int {
		if c := strings.Compare(a.op.LPID, b.op.LPID); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	for _, p := range ot.fresh {
		if p.dropped {
			continue
		}
		ot.nextID++
		p.op.ID = ot.nextID
		ot.pending[p.op.ID] = p
		if p.deadline >= 0 {
			ot.vt.queue.add(p)
		}
	}
	ot.fresh = ot.fresh[:0]
}

func (ot *opTable) syscallName(nr int) string {
	if g, ok := ot.gates[nr]; ok {
		return g.name
	}
	if name, ok := ungatedNames[nr]; ok {
		return name
	}
	return "syscall" + strconv.Itoa(nr)
}
