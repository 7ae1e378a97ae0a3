package tracer

import (
	"time"

	"golang.org/x/sys/unix"
)

// crashWait bounds how long a crash waits for the node's processes to be
// reaped; SIGKILL takes microseconds unless a thread is in uninterruptible
// sleep.
const crashWait = 5 * time.Second

// crashNode kills every process of a node and drops what they sent that
// lockstep has not delivered: a crashed host's unsent bytes never reach
// the wire. The kernel then closes the node's sockets, so peers see the end
// of their connections as after a process crash; lockstep's duplicates of
// those sockets close now, and the FINs they send are waited for like any
// other. It returns once the processes are reaped, so the next state
// reports their exits and none of their ops.
//
// Precondition: runs on the tracer thread.
func (t *Tracer) crashNode(name string) {
	ni := t.nodes[name]
	if ni == nil {
		return
	}
	alive := func() int {
		n := 0
		for _, p := range t.procs {
			if p.node == ni {
				n++
			}
		}
		return n
	}
	for _, p := range t.procs {
		if p.node == ni {
			unix.Kill(p.pid, unix.SIGKILL)
		}
	}
	for _, c := range t.conns {
		if c.src.Addr().Unmap() != ni.addr || c.dup < 0 {
			continue
		}
		c.closing = true
		t.closeConn(c)
	}
	deadline := time.Now().Add(crashWait)
	for alive() > 0 && time.Now().Before(deadline) {
		if t.drain(true) == 0 {
			time.Sleep(50 * time.Microsecond)
		}
		for pid, p := range t.procs {
			// A process whose threads all left without a leader report.
			if p.node == ni && len(p.threads) == 0 && unix.Kill(p.pid, 0) == unix.ESRCH {
				delete(t.procs, pid)
			}
		}
	}
	if n := alive(); n > 0 {
		t.log.Warn("crashed node's processes still alive", "node", name, "processes", n)
	}
}
