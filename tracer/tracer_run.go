package tracer

import (
	"context"
	"maps"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// Run runs the trial loop on the tracer thread: settle, ask s for an
// action, apply it, report its result, repeat. Running the loop there saves
// two cross-thread handoffs per op, which otherwise cost more than the
// ptrace stops themselves.
func (t *Tracer) Run(ctx context.Context, s Stepper) error {
	var err error
	if e := t.do(func() {
		for {
			var st State
			// Time moves only in Step (or before Run), while every tracee
			// is stopped: publish it before any resumes.
			t.vt.publishClocks()
			t0 := time.Now()
			st, err = t.settle(ctx)
			t1 := time.Now()
			t.stats.SettleTime += t1.Sub(t0)
			if err != nil {
				return
			}
			var a Action
			a, err = s.Step(&st)
			t2 := time.Now()
			t.stats.DecideTime += t2.Sub(t1)
			if err != nil || a.Stop {
				return
			}
			// A step that releases nothing waits for something to change
			// (a replay whose op is not there yet, a jump of time): the
			// next state asks the kernel rather than the books (known).
			t.ops.pollAll = a.Release == 0
			if a.Crash != "" || len(a.Clocks) > 0 || len(a.Drifts) > 0 || len(a.Cuts) > 0 || a.Reset != "" || a.Drop != 0 || a.Launch != nil {
				t.ops.invalidate() // the readiness polled for st may have changed
				t.net.invalidate()
				t.pt.stirAll()
			}
			if a.Crash != "" {
				t.crashNode(a.Crash)
			}
			for node, d := range a.Clocks {
				t.vt.shiftClock(node, d)
			}
			for node, ppm := range a.Drifts {
				t.vt.driftClock(node, ppm)
			}
			for _, c := range a.Cuts {
				if err = t.net.applyCut(c); err != nil {
					return
				}
			}
			if a.Reset != "" {
				if err = t.net.resetSock(a.Reset); err != nil {
					return
				}
			}
			if a.Drop != 0 {
				if err = t.net.dropDatagram(a.Drop); err != nil {
					return
				}
			}
			t.vt.publishClocks()
			if a.Launch != nil {
				cfg, path, lerr := prepareLaunch(*a.Launch, t.opts.CPU >= 0)
				pid := 0
				if lerr == nil {
					pid, lerr = t.launch(cfg, path)
				}
				s.Launched(cfg.Node, pid, time.Since(t2), lerr)
			}
			if a.Release == 0 && a.Wait > 0 {
				t.q.blockingWait(a.Wait)
			}
			if a.Release != 0 {
				var r Released
				r, err = t.ops.release(a.Release)
				t.stats.ReleaseTime += time.Since(t2)
				if err != nil {
					return
				}
				s.Released(a.Release, r)
			}
		}
	}); e != nil {
		return e
	}
	return err
}

// Drive is Run for a plain function: decide gets the state and the result
// of the op its previous action released.
func (t *Tracer) Drive(ctx context.Context, decide func(st *State, last Released) (Action, error)) error {
	return t.Run(ctx, &stepFunc{decide: decide})
}

// stepFunc adapts a decide function to Stepper.
type stepFunc struct {
	decide func(st *State, last Released) (Action, error)
	last   Released
}

func (f *stepFunc) Step(st *State) (Action, error) {
	last := f.last
	f.last = Released{}
	return f.decide(st, last)
}

func (f *stepFunc) Released(_ uint64, r Released) { f.last = r }

func (f *stepFunc) Launched(string, int, time.Duration, error) {}

// Release lets the pending op with this ID proceed.
func (t *Tracer) Release(id uint64) (Released, error) {
	var r Released
	var err error
	if e := t.do(func() {
		t.ops.invalidate() // the caller may have done anything since Settle
		t.pt.stirAll()
		r, err = t.ops.release(id)
	}); e != nil {
		return r, e
	}
	return r, err
}

// KillAll kills every tracee and waits until they are gone.
func (t *Tracer) KillAll() error {
	return t.do(t.killAll)
}

// Kill kills every process of one node (a crash).
func (t *Tracer) Kill(node string) error {
	return t.do(func() {
		for _, p := range t.pt.procs {
			if p.node.name == node {
				t.pt.expectEvent()
				p.node.stir()
				unix.Kill(p.pid, unix.SIGKILL)
			}
		}
	})
}

// crashNode kills every process of a node and drops what they sent that
// lockstep has not delivered: a crashed host's unsent bytes never reach
// the wire. The kernel then closes the node's sockets, so peers see the end
// of their connections as after a process crash; lockstep's duplicates of
// those sockets close now (across a partition, at its heal), and the FINs
// they send are waited for like any other. It returns once the processes
// are reaped, so the next state reports their exits and none of their ops.
//
// Precondition: runs on the tracer thread.
func (t *Tracer) crashNode(name string) {
	ni := t.pt.nodes[name]
	if ni == nil {
		return
	}
	// In a fixed order: the FINs leave in the order the duplicates close,
	// and a peer's epoll reports the connections' ends in that order. A
	// connection across a partition keeps its duplicate until the heal,
	// which sends its FIN (maybeFinishConn): sent now, the firewall would
	// drop it and the kernel retransmit it after the heal whenever its
	// real-time timer said.
	for _, key := range slices.Sorted(maps.Keys(t.net.conns)) {
		c := t.net.conns[key]
		if c.src.Addr().Unmap() != ni.addr || c.dup < 0 {
			continue
		}
		c.closing = true
		t.net.dropQueue(c)
		t.net.maybeFinishConn(c)
	}
	for _, p := range t.ops.pending {
		if p.chunk != nil && p.chunk.dg != nil && p.op.Node == name {
			t.net.dropDgram(p) // a dead host's unsent datagrams are lost too
		}
	}
	if n := t.killAndReap(func(p *process) bool { return p.node == ni }); n > 0 {
		t.log.Warn("crashed node's processes still alive", "node", name, "processes", n)
	}
}
