package tracer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/internal/sockdiag"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/tracer/internal/launch"
	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
	"github.com/lockstep-dev/lockstep/tracer/stats"
)

// Clock is the virtual time the tracer answers clock reads from. vclock.Clock
// implements it. Read returns false for clocks that are not virtualized (CPU
// time clocks), which then run natively.
type Clock interface {
	Now() time.Duration
	Read(clockid int32) (ns int64, virtualized bool)
}

// Options configure a Tracer.
type Options struct {
	// Clock answers clock reads and turns sleeps and timeouts into virtual
	// deadlines. Nil leaves time to the kernel (then sleeps are not gated).
	Clock Clock
	// Wakes are the owner's own virtual deadlines (the engine's node
	// starts, hold ends and fault deadlines). They join the tracer's one
	// deadline queue, which State.NextWake reads.
	Wakes []Wake
	// Random returns the seeded byte stream that answers getrandom and
	// /dev/urandom reads of a node; nil leaves them to the kernel.
	Random func(node string) io.Reader
	// Gated reports whether traffic with this peer address is inter-node
	// (gated and scheduled). Nil gates every non-loopback address.
	Gated func(peer netip.Addr) bool
	// Host reports whether a node of the cluster has this (gated)
	// address. A connect to a gated address no node has fails with
	// EHOSTUNREACH (see silentConnect). Nil: every gated address may be
	// a node's.
	Host func(addr netip.Addr) bool
	// Capture turns sends on gated TCP sockets into messages in flight,
	// delivered later as their own ops (DESIGN.md "Messages in flight").
	Capture bool
	// DeliverCap bounds the undelivered bytes per connection direction
	// (past it a send is disabled until deliveries drain) and the bytes
	// delivered and not read yet (past it a delivery is disabled until the
	// receiver reads: the receiver's buffer). Default 4 MiB, which the
	// namespaces' socket buffers hold (netns): beyond what they hold,
	// bytes wait in the sending socket for room (flowHeld) and how many
	// a recv finds depends on the kernel's autotuning.
	DeliverCap int
	// Data is how many of a message's first bytes a send, a delivery and a
	// recv report in Released.Data (0: none). They are copies of bytes
	// lockstep reads anyway, so keeping them changes no schedule.
	Data int
	// MatchBytes is how many of a message's first bytes each deliver op
	// carries in sched.Op.Msg (0: none), for faults that hold one kind of
	// message; a copy of bytes lockstep captures anyway.
	MatchBytes int
	// SiteFrames is how many user frames a call site records (1 for the
	// pc and pid+pc schemes, K for pid+stack:K). Default 1.
	SiteFrames int
	// ClockSyscalls answers every clock read at a syscall stop, with the
	// vDSO hidden, instead of through the clock page (clockpage.go): the
	// slower path, kept to compare the two.
	ClockSyscalls bool
	// Grace bounds how long Settle waits for threads that run without
	// reaching a gated syscall. Default 2s.
	Grace time.Duration
	// CPU pins the tracer thread and every tracee to one CPU when >= 0.
	// Lockstep runs one thread at a time anyway, and on virtual machines a
	// ptrace stop that crosses CPUs costs twice as much. Use -1 to leave
	// placement to the kernel; the zero value pins to CPU 0.
	CPU    int
	Logger *slog.Logger
	// Serialize runs every traced thread under SCHED_RR at priority 1 (on
	// the CPU of CPU): a thread that wakes another runs on until it blocks,
	// stops or has used a 100 ms slice, and the woken one waits its turn,
	// so the threads of a Go or JVM process interleave in an order their
	// own actions set rather than real time, as under rr on one core. Under
	// the default policy the kernel preempts on wake-up by timing, and the
	// same schedule took other paths through a runtime's threads (2 in 3
	// replays of a Redis failure with Go clients diverged). The tracer
	// thread joins the same queue: below it, it waited behind every
	// runnable tracee (etcd trials 2.5 times as long, 4 in 10).
	Serialize bool
	// Socks lists the nodes' connected TCP sockets in each State (for
	// reset faults).
	Socks bool
	// Zygote forks the nodes when set (see Zygote); otherwise the tracer
	// thread forks them itself, which is simpler but slows lockstep down
	// while children are young.
	Zygote *Zygote
	// Images caches what lockstep learns of the nodes' executables (see
	// tsc.go); a job shares one across its trials. nil: one per tracer.
	Images *Images
}

// LaunchConfig describes a node's first process.
type LaunchConfig struct {
	Node      string
	Addr      netip.Addr // the node's address, for classifying peers; may be zero
	Argv      []string   // Argv[0] is resolved through PATH when it has no '/'
	Env       []string
	Dir       string
	Netns     string // path of a network namespace to enter, "" = stay
	HostsFile string // bind-mounted over /etc/hosts when set
	// Sandbox isolates the node (see Sandbox); nil leaves it the host's
	// filesystems, /proc and capabilities.
	Sandbox *Sandbox
	Cgroup  string // cgroup v2 directory to join when set
	// LimitCgroups are cgroup v1 directories (memory, pids) the node's
	// first process joins as well, where the host keeps those controllers
	// out of cgroup v2: its limits.
	LimitCgroups []string
	Stdout       *os.File
	Stderr       *os.File
	// NoFilter runs the program traced but without the seccomp filter
	// (benchmark baseline for launch costs only).
	NoFilter bool
	// PIDNamespace starts the program as pid 1 of a PID namespace of its
	// own, so that the pids its processes and threads see (and seed random
	// number generators with, as Redis does) are the same in every run.
	// As a container's init, it does not die of signals it has no handler
	// for when they come from inside, and when it exits every process it
	// left behind in the namespace is killed.
	PIDNamespace bool
	// ClockOffset sets the node's wall clock apart from the cluster's when
	// its first process starts (a restart keeps the node's clock).
	ClockOffset time.Duration
	// Disk, when set, is told of the node's calls on its files before
	// they run (storage faults; see Disk).
	Disk Disk
}

// Exit reports that a traced process ended.
type Exit struct {
	Node   string
	LPID   string
	Pid    int
	Root   bool // the node's first process
	Code   int  // exit code, when Signal is 0
	Signal syscall.Signal
}

// String words the exit as a clause: "db1/0 was killed by SIGKILL",
// "db1/0 exited with code 1".
func (e Exit) String() string {
	if e.Signal != 0 {
		return fmt.Sprintf("%s was killed by %s", e.LPID, signalName(e.Signal))
	}
	return fmt.Sprintf("%s exited with code %d", e.LPID, e.Code)
}

// signalName is a signal's name (SIGKILL), or its number when it has none:
// syscall.Signal's String is a description ("killed"), which read "killed
// by killed".
func signalName(s syscall.Signal) string {
	if n := unix.SignalName(s); n != "" {
		return n
	}
	return fmt.Sprintf("signal %d", int(s))
}

// State is what Settle found at a quiescent point.
type State struct {
	// Pending are all ops waiting for release, sorted by ID.
	Pending []*sched.Op
	// Enabled are the pending ops whose release would not block, sorted by ID.
	Enabled []*sched.Op
	// Exits are processes that ended since the previous Settle.
	Exits []Exit
	// Live counts traced threads.
	Live int
	// NextDeadline is the earliest virtual deadline of a pending sleep,
	// timeout or timed wait; ok is false when there is none.
	NextDeadline time.Duration
	HasDeadline  bool
	// Deadlines are every pending virtual deadline (sleeps, poll and socket
	// timeouts, timed futex waits, virtual timers) of the tracer's when the
	// state was taken, sorted by time, then LPID; NextDeadline is the
	// first. Queue adds the owner's.
	Deadlines []Deadline
	// Queue reads the one deadline queue, the tracer's deadlines and the
	// owner's (Options.Wakes), at the time of the call.
	Queue Queue
	// Spinning lists threads that ran past the grace period without
	// reaching a gated syscall or sleeping; the state is then not quiescent.
	Spinning []string
	// Unsettled lists, when nothing is enabled and no deadline is pending
	// (a deadlock candidate), the threads not known to be blocked: still
	// starting, runnable, or in an uninterruptible sleep (I/O). Only a
	// state without them can be called a deadlock.
	Unsettled []string
	// AllHeld reports, for a deadlock candidate, that every live thread is
	// stopped by lockstep (at a gated syscall or in a group stop): none is
	// asleep in the kernel where something lockstep does not see could wake
	// it, so the state cannot change without a decision and needs no grace.
	AllHeld bool
	// ClockReads counts clock reads answered since the Tracer started.
	ClockReads uint64
	// Socks are the nodes' connected TCP sockets, with Options.Socks.
	Socks []Sock
}

// Deadline is one pending virtual deadline and who waits for it.
type Deadline struct {
	At   time.Duration // virtual time since the trial began
	Node string
	LPID string
	// What names the wait: the syscall ("nanosleep", "epoll_wait", "recvfrom",
	// "futex") or the timer ("timerfd", "alarm").
	What string
	// Kind is the waiting op's kind: Poll, Recv or Accept for a timeout of a
	// wait on sockets, Sleep for sleeps and timed futex waits; KindInvalid
	// for a virtual timer, which belongs to no op.
	Kind sched.Kind
	// Op is the ID of the pending op that waits, 0 for a timed futex wait
	// or a timer (no op).
	Op uint64
	// Thread is the waiting thread's name (/proc/…/comm) for sleeps and
	// timed futex waits, which tells a runtime's housekeeping threads (a
	// JVM's "VM Periodic Tas") from the program's own; "" otherwise.
	Thread string
}

// Released is the result of releasing one op.
type Released struct {
	// Causes are ops of other threads that happen before the released one
	// (the send of a delivery, the deliveries a recv consumed).
	Causes []uint64
	// Result is the syscall's return value when lockstep produced it.
	Result int64
	// Completes is a recv released before and still asleep in the kernel
	// for more bytes (MSG_WAITALL) that a delivery's bytes go to: the
	// delivery is one of that recv's causes too. Zero for none.
	Completes uint64
	// Data is the first bytes (up to Options.Data) the op sent, delivered
	// or read, when lockstep knows them.
	Data []byte
}

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
	dk     *disks // the gate of the nodes with a Disk
}

// Stats counts what the tracer did, for benchmarks and reports. It lives
// in package stats so that results and reports read it without importing
// the tracer.
type Stats = stats.Trial

type nodeInfo struct {
	name  string
	addr  netip.Addr
	netns string         // namespace path, "" for lockstep's own
	diag  *sockdiag.Sock // sock_diag in the node's namespace, opened lazily
	rand  io.Reader
	procs int // processes ever started on the node, for fork paths
	execs int // images exec'd on the node, for their AT_RANDOM streams
	// clockOffset is how far the node's wall clock is from the cluster's
	// (clock faults).
	clockOffset time.Duration
	// drift makes the wall clock gain this many parts per million of the
	// virtual time since driftFrom (clock faults), on top of clockOffset
	// and driftGain, what earlier drifts gained.
	drift     int64
	driftFrom int64
	driftGain time.Duration
	clockPage *clockPage // nil until a process of the node exec'd
	// idx numbers the node in launch order; cpu is its CPU time as
	// quiescence tracks it (nodecpu.go).
	idx int
	cpu nodeCPU
	// inboxName is "inbox:"+name (see inbox).
	inboxName string
	// ports counts the ephemeral ports lockstep has bound on the node
	// (bindEphemeral).
	ports int
	// disk keeps the books of the node's data files (storage faults);
	// nil for most nodes.
	disk Disk
}

// New starts a tracer thread. Close it to kill every tracee and free it.
func New(opts Options) *Tracer {
	if opts.DeliverCap <= 0 {
		opts.DeliverCap = 4 << 20
	}
	if opts.SiteFrames <= 0 {
		opts.SiteFrames = 1
	}
	if opts.Grace <= 0 {
		opts.Grace = 2 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Images == nil {
		opts.Images = NewImages()
	}
	if opts.Gated == nil {
		opts.Gated = func(a netip.Addr) bool { return a.IsValid() && !a.IsLoopback() && !a.IsUnspecified() }
	}
	t := newTracer(opts)
	go t.loop()
	return t
}

// newTracer makes a Tracer's parts, without its thread.
func newTracer(opts Options) *Tracer {
	t := &Tracer{
		opts:  opts,
		log:   opts.Logger,
		calls: make(chan func()),
		quit:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	t.pt = newProcTable(&t.opts, t.log, &t.stats)
	t.ops = newOpTable(&t.opts, t.log, &t.stats, t.pt)
	t.net = newNetwork(&t.opts, t.log, &t.stats, t.pt, t.ops)
	t.ops.net = t.net
	t.vt = newVtime(&t.opts, t.log, &t.stats, t.pt, t.ops)
	t.q = &quiescence{opts: &t.opts, log: t.log, stats: &t.stats, pt: t.pt, ops: t.ops, net: t.net, handle: t.handle}
	t.sk = &sockets{opts: &t.opts, log: t.log, stats: &t.stats, pt: t.pt, ops: t.ops, net: t.net, vt: t.vt}
	t.gates = gateTable(t)
	t.ops.kinds = kindTable(t)
	t.ops.vt = t.vt
	t.ops.gates = t.gates
	t.dk = &disks{opts: &t.opts, ops: t.ops, vt: t.vt, gates: t.gates}
	t.filter = launch.Filter(filteredSyscalls(t.gates))
	return t
}

// pause sleeps the tracer thread for d. Not time.Sleep: that parks the
// goroutine until the runtime's timer wakes it, which on a busy machine
// took 2.5 ms for 20 µs (nanosleep: 0.3 ms), and the tracer thread is
// locked anyway.
func pause(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	for unix.Nanosleep(&ts, &ts) == unix.EINTR {
	}
}

// loop is the tracer thread: it owns every ptrace call and all state.
func (t *Tracer) loop() {
	runtime.LockOSThread()
	// Never unlocked: a thread that traced processes must not be reused
	// by other goroutines while tracees may still report to it.
	// The thread's short pauses (pause) should last what they ask for, not
	// the kernel's default 50 µs slack more.
	unix.Prctl(unix.PR_SET_TIMERSLACK, 1000, 0, 0, 0)
	defer close(t.done)
	defer func() {
		for _, ni := range t.pt.nodeList {
			if ni.diag != nil {
				ni.diag.Close()
			}
			if ni.clockPage != nil {
				ni.clockPage.close()
			}
			ni.closeCPUStat()
		}
	}()
	if t.opts.CPU >= 0 {
		var set unix.CPUSet
		set.Set(t.opts.CPU)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			t.log.Warn("pinning tracer thread", "cpu", t.opts.CPU, "err", err)
		}
	}
	if t.opts.Serialize {
		// In the tracees' round-robin queue, so that neither side starves
		// the other: the tracer's yields let runnable tracees run, and a
		// busy tracee does not hold a stop's handling back for long.
		if err := unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_RR, Priority: 1}, 0); err != nil {
			t.log.Warn("tracer thread keeps the default policy", "err", err)
		}
	}
	if err := ptrace.QuietStops(); err != nil {
		t.log.Warn("tracee stops will signal the tracer", "err", err)
	}
	t.q.startSentinel()
	for {
		select {
		case f := <-t.calls:
			f()
		case <-t.quit:
			t.killAll()
			t.q.stopSentinel()
			return
		}
	}
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

// Release lets the pending op with this ID proceed.
func (t *Tracer) Release(id uint64) (Released, error) {
	var r Released
	var err error
	if e := t.do(func() {
		t.ops.pollGen++ // the caller may have done anything since Settle
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
				t.pt.expect = true
				p.node.stir()
				unix.Kill(p.pid, unix.SIGKILL)
			}
		}
	})
}

// Action is what a Drive callback decides at a quiescent point.
type Action struct {
	// Release is the ID of the op to release; 0 releases nothing (for
	// instance after the caller advanced the virtual clock).
	Release uint64
	// Stop ends Drive.
	Stop bool
	// Crash names a node to crash before settling again: its processes are
	// killed and the bytes they sent that lockstep had not delivered yet are
	// lost, as a dead host's unsent data would be.
	Crash string
	// Launch starts a node (a delayed start, a restart) before settling
	// again; Stepper.Launched reports how it went.
	Launch *LaunchConfig
	// Clocks moves nodes' wall clocks by these amounts (clock faults, and
	// their undoing in the quiet period).
	Clocks map[string]time.Duration
	// Cuts tell the tracer that partitions now separate (or, with Heal, no
	// longer separate) sets of node addresses.
	Cuts []Cut
	// Drifts make nodes' wall clocks run this many parts per million fast
	// or slow; 0 ends a drift and takes back what it gained.
	Drifts map[string]int64
	// Reset aborts the connection with this Sock.Object (a reset fault).
	Reset string
	// Drop discards the datagram whose deliver op has this ID (a drop
	// fault).
	Drop uint64
	// Wait, when nothing is released, lets the tracees run for up to this
	// much real time before the next settle (a deadlock candidate watched
	// for its grace period, a replay waiting for its op). The tracer thread
	// waits for their events and handles them, rather than sleep through
	// them, and settles again at the first.
	Wait time.Duration
}

// Cut is a partition between two sets of addresses. While it lasts, the
// FIN of a connection across it is held like its bytes, and sent at the
// heal: sent into the partition's firewall it would be dropped and come
// back with a retransmission timed by real time, which no replay repeats.
type Cut struct {
	A, B []netip.Addr
	// OneWay cuts only what A sends to B (see netns.Cluster.CutOneWay):
	// B's bytes and FINs reach A, and no connection opens either way.
	OneWay bool
	Heal   bool
	// Open, for a heal, removes the partition's firewall. The tracer calls
	// it once it has ended the connects made into the cut (whose SYNs the
	// kernel would otherwise retransmit through the opened firewall at a
	// real-time moment) and before it sends the FINs held across it.
	Open func() error
	// Close, for a partition, puts up its firewall. The tracer calls it
	// once the connections it crosses have acknowledged what they received
	// (see flushAcks).
	Close func() error
}

// Stepper is what Run asks at each quiescent point, on the tracer thread.
// Its methods must not call other Tracer methods, nor sleep: a step that
// wants the tracees to run a while asks for it (Action.Wait).
type Stepper interface {
	// Step turns the state into an action.
	Step(st *State) (Action, error)
	// Released reports the result of the op the last action released,
	// before the next Step.
	Released(id uint64, r Released)
	// Launched reports the start of the node the last action launched:
	// its pid, the real time it took, or why it failed.
	Launched(node string, pid int, took time.Duration, err error)
}

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
				t.ops.pollGen++ // the readiness polled for st may have changed
				t.net.netGen++
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

// Drive is Run for a plain function: decide gets the state and the result
// of the op its previous action released.
func (t *Tracer) Drive(ctx context.Context, decide func(st *State, last Released) (Action, error)) error {
	return t.Run(ctx, &stepFunc{decide: decide})
}
