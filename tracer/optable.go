package tracer

import (
	"log/slog"

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
