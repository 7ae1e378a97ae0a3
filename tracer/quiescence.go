package tracer

import (
	"log/slog"
	"os"

	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
)

// quiescence owns waiting until no traced thread can make progress without
// lockstep: collecting the tracees' events (which it hands to handle),
// telling asleep from runnable threads, the sentinel that wakes a blocking
// wait, and the disk syscalls held until nothing else runs.
type quiescence struct {
	opts  *Options
	log   *slog.Logger
	stats *Stats
	pt    *procTable
	ops   *opTable
	net   *network
	// handle dispatches one event of a tracee (Tracer.handle).
	handle func(tid int, st ptrace.Status)

	spinning []string
	// sentinel is a paused child of the tracer thread; stopping it wakes a
	// blocking wait4 when no tracee will report (see blockingWait).
	sentinel     int
	sentinelPipe *os.File // the sentinel's stdin, never written
	alarm        *alarm   // stops the sentinel when a blocking wait ends
	// switches is the tracer thread's involuntary context switches at its
	// last yield (see nothingRan).
	switches int64
}
