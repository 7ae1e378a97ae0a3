package tracer

import (
	"errors"
	"log/slog"

	"golang.org/x/sys/unix"
)

// Tracer traces process trees. Create it with New; all methods may be called
// from any goroutine, one at a time.
type Tracer struct {
	opts  Options
	log   *slog.Logger
	calls chan func()
	quit  chan struct{}
	done  chan struct{}

	// Everything below is owned by the tracer thread.
	exits  []Exit
	pt     *procTable  // nodes, processes, threads and their descriptors
	ops    *opTable    // pending ops and their readiness
	net    *network    // connections, bytes in flight, datagrams, FINs, cuts
	q      *quiescence // waiting until no thread can move without lockstep
	sk     *sockets    // the socket syscalls' gates
	vt     *vtime      // virtual time: clocks, sleeps, timed waits, kernel timers
	gates  map[int]gate
	filter []unix.SockFilter // the seccomp program, from gates
	stats  Stats
	rt     realTime // what real time settled since the last state
	dk     *disks   // the gate of the nodes with a Disk
}

// do runs f on the tracer thread and waits for it.
func (t *Tracer) do(f func()) error {
	ch := make(chan struct{})
	select {
	case t.calls <- func() { f(); close(ch) }:
	case <-t.done:
		return errors.New("tracer closed")
	}
	<-ch
	return nil
}

// Close kills every tracee, reaps them and stops the tracer thread.
func (t *Tracer) Close() error {
	select {
	case <-t.done:
		return nil
	default:
	}
	close(t.quit)
	<-t.done
	return nil
}

// Stats returns the counters.
func (t *Tracer) Stats() Stats {
	var s Stats
	t.do(func() { s = t.stats })
	return s
}
