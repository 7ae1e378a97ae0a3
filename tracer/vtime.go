package tracer

import (
	"log/slog"
	"os"
)

// vtime owns what the tracer does with virtual time: clock reads (the
// syscalls, the clock page, the patched counter reads), nodes' clock
// faults, sleeps, timed waits and virtual kernel timers, and the one queue
// of their deadlines (deadlines.go).
type vtime struct {
	opts  *Options
	log   *slog.Logger
	stats *Stats
	pt    *procTable
	ops   *opTable

	vdso    *vdsoEntries // the vDSO's clock entry points, found at the first exec
	timers  *timerTable  // virtual kernel timers (timers.go), made on first use
	selfPid int
	// queue holds every virtual deadline of the tracer's: sleeps and
	// timeouts of pending ops, timed waits, kernel timers.
	queue deadlineQueue
}

func newVtime(opts *Options, log *slog.Logger, stats *Stats, pt *procTable, ops *opTable) *vtime {
	return &vtime{opts: opts, log: log, stats: stats, pt: pt, ops: ops, selfPid: os.Getpid()}
}
