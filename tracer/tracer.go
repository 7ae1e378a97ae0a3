package tracer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/tracer/internal/callsite"
	"github.com/lockstep-dev/lockstep/tracer/internal/launch"
	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
	"github.com/lockstep-dev/lockstep/tracer/internal/sockdiag"
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
	Stdout  *os.File
	Stderr  *os.File
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

func (e Exit) String() string {
	if e.Signal != 0 {
		return fmt.Sprintf("%s killed by %v", e.LPID, e.Signal)
	}
	return fmt.Sprintf("%s exited with code %d", e.LPID, e.Code)
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
	// timeouts, timed futex waits, virtual timers), sorted by time, then
	// LPID; NextDeadline is the first. The engine offers the later ones as
	// advance ops.
	Deadlines []Deadline
	// Spinning lists threads that ran past the grace period without
	// reaching a gated syscall or sleeping; the state is then not quiescent.
	Spinning []string
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
}

// Released is the result of releasing one op.
type Released struct {
	// Causes are ops of other threads that happen before the released one
	// (the send of a delivery, the deliveries a recv consumed).
	Causes []uint64
	// Result is the syscall's return value when lockstep produced it.
	Result int64
}

// Tracer traces process trees. Create it with New; all methods may be called
// from any goroutine, one at a time.
type Tracer struct {
	opts Options
	// seq orders ops within a quiescent round (pendingOp.seq); per tracer,
	// since the tracers of concurrent jobs run at once.
	seq   uint64
	log   *slog.Logger
	calls chan func()
	quit  chan struct{}
	done  chan struct{}

	// Everything below is owned by the tracer thread.
	vdso     *vdsoEntries           // the vDSO's clock entry points, found at the first exec
	cut      map[[2]netip.Addr]bool // address pairs a partition separates
	finsHeld []*conn                // connections whose FIN waits for a heal
	nodes    map[string]*nodeInfo
	byAddr   map[netip.Addr]*nodeInfo
	threads  map[int]*thread
	procs    map[int]*process
	pending  map[uint64]*pendingOp
	fresh    []*pendingOp
	nextID   uint64
	exits    []Exit
	conns    map[string]*conn
	connects map[string][]uint64 // released connects per listener, for accept causes
	sites    *callsite.Cache
	gates    map[int]gate
	filter   []unix.SockFilter // the seccomp program, from gates
	selfPid  int
	stats    Stats
	spinning []string
	// sentinel is a paused child of the tracer thread; stopping it wakes a
	// blocking wait4 when no tracee will report (see blockingWait).
	sentinel     int
	sentinelPipe *os.File // the sentinel's stdin, never written
	finWaits     []finWait
	held         []*conn     // connections whose sender holds delivered bytes back for want of window
	bufs         bufPool     // capture buffers
	timers       *timerTable // virtual kernel timers (timers.go), made on first use
}

// Stats counts what the tracer did, for benchmarks and reports.
type Stats struct {
	Stops      uint64 // seccomp stops
	Released   uint64 // stops released at once (not ops)
	ClockReads uint64
	Ops        uint64
	Deliveries uint64
	// ArrivalPolls counts extra sock_diag polls while delivered bytes
	// crossed the network.
	ArrivalPolls int
	// WindowFull counts deliveries whose bytes the sending socket held
	// back because the receiver's window was full (not waited for: they
	// move when the receiver reads).
	WindowFull  int
	TimedWaits  uint64
	SettleSpins uint64
	TSCReads    uint64 // rdtsc/rdtscp answered from virtual time
	// FinWaits counts closes after which lockstep waited for a FIN to
	// reach the peer; FinWaitsExpired those it waited for in vain (real
	// time lost: connectWaitLimit each).
	FinWaits, FinWaitsExpired int
	// Resets counts connections a reset fault aborted, Drops datagrams a
	// drop fault discarded.
	Resets, Drops int
	// Time spent, for the benchmark's breakdown: handling stops (register
	// reads, decoding, call sites included), call sites alone, waiting for
	// tracees to run (quiescence), the caller's decisions, releases.
	HandleTime  time.Duration
	SiteTime    time.Duration
	SettleTime  time.Duration
	DecideTime  time.Duration
	ReleaseTime time.Duration
}

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
	if opts.Gated == nil {
		opts.Gated = func(a netip.Addr) bool { return a.IsValid() && !a.IsLoopback() && !a.IsUnspecified() }
	}
	t := &Tracer{
		opts:     opts,
		log:      opts.Logger,
		calls:    make(chan func()),
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
		nodes:    map[string]*nodeInfo{},
		byAddr:   map[netip.Addr]*nodeInfo{},
		threads:  map[int]*thread{},
		procs:    map[int]*process{},
		pending:  map[uint64]*pendingOp{},
		conns:    map[string]*conn{},
		connects: map[string][]uint64{},
		sites:    callsite.NewCache(),
		gates:    gateTable(),
		selfPid:  os.Getpid(),
	}
	t.filter = launch.Filter(filteredSyscalls(t.gates))
	go t.loop()
	return t
}

// loop is the tracer thread: it owns every ptrace call and all state.
func (t *Tracer) loop() {
	runtime.LockOSThread()
	// Never unlocked: a thread that traced processes must not be reused
	// by other goroutines while tracees may still report to it.
	defer close(t.done)
	defer func() {
		for _, ni := range t.nodes {
			if ni.diag != nil {
				ni.diag.Close()
			}
			if ni.clockPage != nil {
				ni.clockPage.close()
			}
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
	t.startSentinel()
	for {
		select {
		case f := <-t.calls:
			f()
		case <-t.quit:
			t.killAll()
			t.stopSentinel()
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

// ErrNotFound says a program to launch does not exist or is not executable.
var ErrNotFound = errors.New("program not found or not executable")

// Launch starts a node's first process traced. It returns once the process
// has exec'd the target (or failed to).
func (t *Tracer) Launch(cfg LaunchConfig) (pid int, err error) {
	cfg, path, err := prepareLaunch(cfg)
	if err != nil {
		return 0, err
	}
	t.do(func() { pid, err = t.launch(cfg, path) })
	return pid, err
}

// prepareLaunch checks a launch and finds its program.
func prepareLaunch(cfg LaunchConfig) (LaunchConfig, string, error) {
	if len(cfg.Argv) == 0 {
		return cfg, "", errors.New("launching: empty command")
	}
	path, err := resolveProgram(cfg.Argv[0], cfg.Dir)
	if err != nil {
		return cfg, "", err
	}
	// Go's asynchronous preemption signals threads on a timer: every signal
	// is a ptrace stop and a source of nondeterminism.
	cfg.Env = withGodebug(cfg.Env, "asyncpreemptoff=1")
	return cfg, path, nil
}

func resolveProgram(argv0, dir string) (string, error) {
	path := argv0
	if !containsSlash(argv0) {
		p, err := lookPath(argv0)
		if err != nil {
			return "", fmt.Errorf("%s: %w", argv0, ErrNotFound)
		}
		path = p
	} else if dir != "" && path[0] != '/' {
		path = dir + "/" + path
	}
	if err := unix.Access(path, unix.X_OK); err != nil {
		return "", fmt.Errorf("%s: %w", argv0, ErrNotFound)
	}
	if st, err := os.Stat(path); err != nil || st.IsDir() {
		return "", fmt.Errorf("%s: %w", argv0, ErrNotFound)
	}
	return path, nil
}

// node returns the launched node's state, made on its first launch.
func (t *Tracer) node(cfg LaunchConfig) *nodeInfo {
	ni := t.nodes[cfg.Node]
	if ni == nil {
		ni = &nodeInfo{name: cfg.Node, addr: cfg.Addr, netns: cfg.Netns, clockOffset: cfg.ClockOffset}
		if t.opts.Random != nil {
			ni.rand = t.opts.Random(cfg.Node)
		}
		t.nodes[cfg.Node] = ni
		if cfg.Addr.IsValid() {
			t.byAddr[cfg.Addr] = ni
		}
	}
	return ni
}

func (t *Tracer) launch(cfg LaunchConfig, path string) (int, error) {
	spawn := launch.Spawn
	if t.opts.Zygote != nil {
		spawn = t.opts.Zygote.Spawn
	}
	lc := launch.Config{
		Path: path, Argv: cfg.Argv, Env: cfg.Env, Dir: cfg.Dir, Netns: cfg.Netns, HostsFile: cfg.HostsFile,
		Sandbox: cfg.Sandbox, Stdout: cfg.Stdout, Stderr: cfg.Stderr,
		TrapTSC: t.opts.Clock != nil, NewPID: cfg.PIDNamespace, ClockFd: -1,
	}
	if !cfg.NoFilter {
		lc.Filter = t.filter
	}
	if cfg.Sandbox != nil && t.opts.Clock != nil && !t.opts.ClockSyscalls {
		// Handed down as a descriptor (see Sandbox).
		pg, err := t.nodeClockPage(t.node(cfg))
		if err != nil {
			return 0, fmt.Errorf("the clock page of node %s: %w", cfg.Node, err)
		}
		lc.ClockFd = pg.fd
	}
	sp, err := spawn(lc)
	if err != nil {
		return 0, fmt.Errorf("starting %s: %w", cfg.Argv[0], err)
	}
	defer sp.Close()
	pid := sp.Pid
	// abort reaps a child that failed or must go; when its setup failed
	// (a bad namespace, directory or hosts file), that failure is the news.
	abort := func(err error) (int, error) {
		unix.Kill(pid, unix.SIGKILL)
		ptrace.Wait(pid, unix.WALL)
		if f := sp.Failure(); f != nil {
			if cfg.Stderr != nil {
				fmt.Fprintf(cfg.Stderr, "lockstep: launching node %s: %v\n", cfg.Node, f)
			}
			return 0, fmt.Errorf("launching %s: %w", cfg.Argv[0], f)
		}
		return 0, err
	}
	if err := ptrace.Seize(pid); err != nil {
		return abort(fmt.Errorf("seizing %s: %w", cfg.Argv[0], err))
	}
	// Affinity and cgroup are set from here while the child waits to be
	// let go: its threads and children inherit both.
	if t.opts.CPU >= 0 {
		var set unix.CPUSet
		set.Set(t.opts.CPU)
		if err := unix.SchedSetaffinity(pid, &set); err != nil {
			return abort(fmt.Errorf("pinning node %s to CPU %d: %w", cfg.Node, t.opts.CPU, err))
		}
	}
	if t.opts.Serialize {
		if err := unix.SchedSetAttr(pid, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_RR, Priority: 1}, 0); err != nil {
			t.log.Warn("threads not serialized: replays of multi-threaded runtimes may diverge", "node", cfg.Node, "err", err)
		}
	}
	if cfg.Cgroup != "" {
		if err := os.WriteFile(cfg.Cgroup+"/cgroup.procs", []byte(strconv.Itoa(pid)), 0); err != nil {
			return abort(fmt.Errorf("moving node %s into cgroup %s: %w", cfg.Node, cfg.Cgroup, err))
		}
	}
	ni := t.node(cfg)
	p := &process{pid: pid, site: callsite.Process{Pid: pid}, node: ni, forkPath: strconv.Itoa(ni.procs), threads: map[int]*thread{}, fds: map[int]*fdInfo{}, root: true, nsInit: cfg.PIDNamespace}
	ni.procs++
	p.rand = ni.rand // the node's first process: the node's stream
	if ni.procs > 1 && t.opts.Random != nil {
		p.rand = t.opts.Random(ni.name + "/" + p.forkPath)
	}
	p.pidfd, _ = unix.PidfdOpen(pid, 0)
	th := &thread{tid: pid, proc: p, state: tsRunning}
	th.lpid = p.lpidFor(0)
	p.threads[pid] = th
	p.nthreads = 1
	t.procs[pid] = p
	t.threads[pid] = th
	if err := sp.Release(); err != nil {
		t.dropThread(th)
		delete(t.procs, pid)
		return abort(fmt.Errorf("releasing %s: %w", cfg.Argv[0], err))
	}
	// Run until the helper has exec'd the target or died.
	deadline := time.Now().Add(10 * time.Second)
	for p.execs == 0 && !p.exited {
		if time.Now().After(deadline) {
			return pid, fmt.Errorf("launching %s: it did not exec within 10s", cfg.Argv[0])
		}
		if n := t.drain(true); n == 0 {
			time.Sleep(50 * time.Microsecond)
		}
	}
	if p.exited && p.execs == 0 {
		err := sp.Failure()
		if err == nil {
			err = errors.New("exited before exec")
		}
		if cfg.Stderr != nil {
			fmt.Fprintf(cfg.Stderr, "lockstep: launching node %s: %v\n", cfg.Node, err)
		}
		return pid, fmt.Errorf("launching %s: %w", cfg.Argv[0], err)
	}
	return pid, nil
}

func containsSlash(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return true
		}
	}
	return false
}

func lookPath(name string) (string, error) { return exec.LookPath(name) }

func (p *process) lpidFor(index int) string {
	return p.node.name + "/" + p.forkPath + "/t" + strconv.Itoa(index)
}

// drain handles every event already waiting. With block false and nothing
// waiting it returns 0 at once.
func (t *Tracer) drain(nohang bool) int {
	n := 0
	flags := ptrace.Tracees
	if nohang {
		flags |= ptrace.NoHang
	}
	for {
		tid, st, err := ptrace.Wait(-1, flags)
		if err != nil || tid <= 0 {
			return n
		}
		n++
		t0 := time.Now()
		t.handle(tid, st)
		t.stats.HandleTime += time.Since(t0)
		flags |= ptrace.NoHang
	}
}

func (t *Tracer) cont(th *thread, sig int) {
	th.state = tsRunning
	if err := ptrace.Cont(th.tid, sig); err != nil && err != unix.ESRCH {
		t.log.Warn("resuming thread", "thread", th.String(), "err", err)
	}
}

// handle dispatches one wait status.
func (t *Tracer) handle(tid int, st ptrace.Status) {
	if tid == t.sentinel {
		if st.Stopped() {
			unix.Kill(tid, unix.SIGCONT)
		} else {
			t.sentinel = 0
		}
		return
	}
	th := t.threads[tid]
	if th == nil {
		if st.Gone() {
			return // a thread that vanished during exec, or a reaped helper
		}
		// A new thread whose stop arrived before its parent's clone event:
		// hold it until the parent names it.
		th = &thread{tid: tid, state: tsHeld, heldStatus: true}
		t.threads[tid] = th
		return
	}
	sig := st.Signal()
	switch st.Kind() {
	case ptrace.Exited, ptrace.Killed:
		t.onExit(th, st)
	case ptrace.SeccompStop:
		t.onSeccomp(th)
	case ptrace.CloneStop:
		t.onClone(th)
	case ptrace.ExecStop:
		t.onExec(th)
	case ptrace.EventStop:
		t.onEventStop(th, sig)
	case ptrace.SyscallTrap:
		t.cont(th, 0)
	default:
		switch {
		case sig == unix.SIGSEGV && t.opts.Clock != nil && t.emulateTSC(th):
			// rdtsc answered from virtual time.
		case th.proc != nil && th.proc.nsInit && t.initSignal(th, sig):
			// Killed for a signal a traced namespace init cannot die of.
		default:
			// Signal-delivery stop: hand the signal on (the JVM relies on
			// SIGSEGV, programs on SIGTERM handlers).
			t.cont(th, int(sig))
		}
	}
}

func (t *Tracer) onEventStop(th *thread, sig syscall.Signal) {
	switch {
	case th.state == tsNew || th.state == tsHeld:
		// The initial stop of a new thread under PTRACE_SEIZE.
		if th.proc == nil {
			th.state = tsHeld
			th.heldStatus = true
			return
		}
		th.openThreadFiles()
		t.cont(th, 0)
	case th.state == tsTimedWait && th.interrupted:
		t.finishTimedWait(th)
	case sig == unix.SIGSTOP || sig == unix.SIGTSTP || sig == unix.SIGTTIN || sig == unix.SIGTTOU:
		// Group-stop: keep it stopped as the signal wants, but listening so
		// SIGCONT and events still reach us.
		th.state = tsGroupStop
		ptrace.Listen(th.tid)
	default:
		t.cont(th, 0)
	}
}

func (t *Tracer) onClone(parent *thread) {
	msg, err := ptrace.EventMsg(parent.tid)
	if err != nil {
		t.cont(parent, 0)
		return
	}
	tid := int(msg)
	p := parent.proc
	child := t.threads[tid]
	if child == nil {
		child = &thread{tid: tid, state: tsNew}
		t.threads[tid] = child
	}
	tgid, err := tgidOf(tid)
	if err == nil && tgid == p.pid {
		child.proc = p
		child.lpid = p.lpidFor(p.nthreads)
		p.nthreads++
	} else {
		np := &process{
			pid: tid, site: callsite.Process{Pid: tid}, node: p.node, forkPath: p.forkPath + "." + strconv.Itoa(p.nforks),
			threads: map[int]*thread{}, fds: map[int]*fdInfo{}, parent: p,
		}
		p.nforks++
		if t.opts.Random != nil {
			np.rand = t.opts.Random(np.node.name + "/" + np.forkPath)
		}
		np.pidfd, _ = unix.PidfdOpen(tid, 0)
		np.nthreads = 1
		child.proc = np
		child.lpid = np.lpidFor(0)
		t.procs[tid] = np
	}
	child.proc.threads[tid] = child
	child.firstCause = parent.lastOp
	if child.heldStatus {
		child.heldStatus = false
		child.openThreadFiles()
		t.cont(child, 0)
	}
	t.cont(parent, 0)
}

func (t *Tracer) onExec(th *thread) {
	p := th.proc
	former, _ := ptrace.EventMsg(th.tid)
	if int(former) != th.tid {
		// A non-leader thread exec'd and took over the leader's tid.
		if old := t.threads[int(former)]; old != nil {
			t.dropThread(old)
		}
	}
	for tid, other := range p.threads {
		if tid != th.tid {
			t.dropThread(other)
		}
	}
	if th.pending != nil {
		t.dropPending(th.pending)
	}
	p.threads = map[int]*thread{th.tid: th}
	p.nthreads = 1
	p.execs++
	th.lpid = p.lpidFor(0)
	th.closeThreadFiles()
	th.openThreadFiles()
	t.forgetAllFds(p)
	p.site.Forget()
	if t.opts.Clock != nil {
		if err := t.clockReadsWithoutStops(th); err != nil {
			t.log.Warn("hiding vDSO", "thread", th.String(), "err", err)
		}
		// execve clears the rdtsc trap, so set it in the new image.
		if ret, err := t.inject(th, unix.SYS_PRCTL, unix.PR_SET_TSC, unix.PR_TSC_SIGSEGV); err != nil || ret != 0 {
			t.log.Warn("trapping rdtsc", "thread", th.String(), "ret", ret, "err", err)
		}
	}
	if p.node.rand != nil {
		if err := t.seedAuxvRandom(th); err != nil {
			t.log.Warn("seeding AT_RANDOM", "thread", th.String(), "err", err)
		}
	}
	t.cont(th, 0)
}

// seedAuxvRandom replaces the 16 random bytes the kernel gives a new image
// (AT_RANDOM) with bytes from the seed. Go's runtime seeds its own random
// generator (scheduling, select, map order) from them; the C library makes
// its stack canary from them.
//
// Precondition: runs on the tracer thread; th is at its exec stop.
func (t *Tracer) seedAuxvRandom(th *thread) error {
	_, addr, err := auxvEntry(th, atRandom)
	if err != nil || addr == 0 {
		return err
	}
	ni := th.proc.node
	// A stream of its own per exec, apart from the one getrandom reads, so
	// that seeding images does not shift what the programs read.
	r := t.opts.Random(fmt.Sprintf("%s/AT_RANDOM/%d", ni.name, ni.execs))
	ni.execs++
	var b [16]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return err
	}
	return ptrace.WriteMem(th.tid, addr, b[:])
}

// inject makes a stopped thread execute one syscall (see ptrace.Inject).
//
// Precondition: runs on the tracer thread; th is in a ptrace stop.
func (t *Tracer) inject(th *thread, nr uint64, args ...uint64) (int64, error) {
	return ptrace.Inject(th.tid, nr, args...)
}

func (t *Tracer) dropThread(th *thread) {
	if th.pending != nil {
		t.dropPending(th.pending)
	}
	th.closeThreadFiles()
	delete(t.threads, th.tid)
	if th.proc != nil {
		delete(th.proc.threads, th.tid)
	}
}

func (t *Tracer) onExit(th *thread, st ptrace.Status) {
	p := th.proc
	t.dropThread(th)
	if p == nil || th.tid != p.pid {
		return
	}
	// The leader's exit is reported once the whole group is gone.
	p.exited = true
	for _, other := range p.threads {
		t.dropThread(other)
	}
	e := Exit{Node: p.node.name, LPID: p.node.name + "/" + p.forkPath, Pid: p.pid, Root: p.root}
	if st.Kind() == ptrace.Killed {
		e.Signal = st.Signal()
		if p.fatal != 0 && e.Signal == unix.SIGKILL {
			e.Signal = p.fatal
		}
	} else {
		e.Code = st.ExitCode()
	}
	t.exits = append(t.exits, e)
	// Its sockets close with it (when no other process shares them): the
	// FINs are in flight now.
	for _, fi := range p.fds {
		if fi.kind == fdInet && t.conns[fi.outKey()] == nil {
			t.expectFin(fi.local, fi.peer)
		}
	}
	t.forgetAllFds(p)
	if p.pidfd > 0 {
		unix.Close(p.pidfd)
		p.pidfd = 0
	}
	delete(t.procs, p.pid)
}

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
	if !t.fireDueTimer() {
		t.wakeDueTimedWaits()
	}
	t.spinning = t.spinning[:0]
	if err := t.waitQuiescent(ctx); err != nil {
		return State{}, err
	}
	t.numberFresh()
	return t.snapshot(), nil
}

// maxStarvedRounds bounds the extra grace periods waited for runnable
// threads that got no CPU (a loaded machine) before quiescence is declared
// without calling them spinning.
const maxStarvedRounds = 4

// waitQuiescent returns when no thread can make progress without lockstep.
func (t *Tracer) waitQuiescent(ctx context.Context) error {
	lastProgress := time.Now()
	// CPU time (ns) of threads found runnable when the grace period ran
	// out, and how many more periods starved ones have been watched.
	var runnableCPU map[int]uint64
	starvedRounds := 0
	confirmed := false
	var cpu map[int]uint64
	for spins := 0; ; spins++ {
		if n := t.drain(true); n > 0 {
			lastProgress = time.Now()
			confirmed = false
			spins = 0
			runnableCPU, starvedRounds = nil, 0
			continue
		}
		running := 0
		for _, th := range t.threads {
			switch th.state {
			case tsRunning, tsNew, tsTimedWait:
				running++
			}
		}
		if running == 0 && t.netSettled() {
			return nil
		}
		if spins >= 16 {
			// Every running thread asleep in the kernel twice in a row with
			// no CPU time used in between: nobody can wake them but us.
			asleep := true
			now := make(map[int]uint64, running)
			for _, th := range t.threads {
				if th.state != tsRunning && th.state != tsTimedWait && th.state != tsNew {
					continue
				}
				if th.state == tsTimedWait && th.interrupted {
					asleep = false
					break
				}
				if th.connecting != nil && time.Since(th.connecting.since) < connectWaitLimit {
					// A blocking connect sleeps while its handshake is in
					// flight; it wakes without lockstep.
					asleep = false
					break
				}
				s, c, ok := th.kernelState()
				if !ok {
					continue // gone; its exit event is on its way
				}
				if s == 'D' && !th.inVforkWait() {
					// Uninterruptible sleep is transient (I/O, exec reading
					// the binary) except for a vfork parent waiting for its
					// child, which only lockstep can let go.
					asleep = false
					break
				}
				if s != 'S' && s != 'D' && s != 'Z' && s != 'I' {
					asleep = false
					break
				}
				now[th.tid] = c
			}
			if asleep {
				if confirmed && sameCPU(cpu, now) && t.netSettled() {
					return nil
				}
				confirmed, cpu = true, now
			} else {
				confirmed = false
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if time.Since(lastProgress) > t.opts.Grace {
			// A thread still runnable after the grace period spins only if
			// it got the CPU and used it: on a loaded machine a runnable
			// thread may simply not have been scheduled. Note their CPU
			// time and watch them for more grace periods; flag those that
			// burned a quarter of one, give up on the starved.
			busy := map[int]uint64{}
			for _, th := range t.threads {
				if th.state == tsRunning {
					if s, c, ok := th.kernelState(); ok && s == 'R' {
						busy[th.tid] = c
					}
				}
			}
			if len(busy) > 0 && runnableCPU == nil {
				runnableCPU, lastProgress = busy, time.Now()
				continue
			}
			for tid, c := range busy {
				if c-runnableCPU[tid] >= uint64(t.opts.Grace/4) {
					t.spinning = append(t.spinning, t.threads[tid].lpid)
				}
			}
			if len(t.spinning) == 0 && len(busy) > 0 && starvedRounds < maxStarvedRounds {
				starvedRounds++
				runnableCPU, lastProgress = busy, time.Now()
				continue
			}
			sort.Strings(t.spinning)
			return nil
		}
		t.stats.SettleSpins++
		switch {
		case spins < 16:
			// Most released threads reach their next gated syscall within
			// microseconds: yielding catches them without a timer.
			unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
		case confirmed:
			time.Sleep(20 * time.Microsecond)
		default:
			wd := time.Duration(1<<min(spins/16, 5)) * 100 * time.Microsecond
			if t.blockingWait(wd) {
				lastProgress = time.Now()
				confirmed = false
				spins = 0
				runnableCPU, starvedRounds = nil, 0
			}
		}
	}
}

func sameCPU(a, b map[int]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// numberFresh gives the ops that appeared since the last quiescent point
// their IDs, in LPID order so that numbering does not depend on the order
// in which the kernel reported the stops.
func (t *Tracer) numberFresh() {
	sort.SliceStable(t.fresh, func(i, j int) bool {
		a, b := t.fresh[i], t.fresh[j]
		if a.op.LPID != b.op.LPID {
			return a.op.LPID < b.op.LPID
		}
		return a.seq < b.seq
	})
	for _, p := range t.fresh {
		if p.dropped {
			continue
		}
		t.nextID++
		p.op.ID = t.nextID
		t.pending[p.op.ID] = p
	}
	t.fresh = t.fresh[:0]
}

func (t *Tracer) snapshot() State {
	st := State{Live: len(t.threads), ClockReads: t.stats.ClockReads}
	st.Exits, t.exits = t.exits, nil
	st.Spinning = append([]string(nil), t.spinning...)
	if t.opts.Socks {
		st.Socks = t.socks()
	}
	ids := make([]uint64, 0, len(t.pending))
	for id := range t.pending {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		p := t.pending[id]
		st.Pending = append(st.Pending, &p.op)
		if t.enabled(p) {
			st.Enabled = append(st.Enabled, &p.op)
		}
		if p.deadline >= 0 && p.deadline < never {
			st.Deadlines = append(st.Deadlines, Deadline{At: time.Duration(p.deadline), Node: p.op.Node, LPID: p.op.LPID, What: p.op.Syscall, Kind: p.op.Kind, Op: p.op.ID})
		}
	}
	if len(st.Enabled) == 0 && t.log.Enabled(context.Background(), slog.LevelDebug) {
		for _, th := range t.threads {
			ks, _, _ := th.kernelState()
			sc, _ := readSmall("/proc/" + strconv.Itoa(th.tid) + "/syscall")
			t.log.Debug("nothing enabled", "thread", th.String(), "state", th.state, "kernel", string(ks), "syscall", sc)
		}
	}
	st.Deadlines = append(st.Deadlines, t.timerDeadlines()...)
	for _, th := range t.threads {
		if th.state == tsTimedWait && !th.interrupted {
			st.Deadlines = append(st.Deadlines, Deadline{At: time.Duration(th.waitDeadline), Node: th.proc.node.name, LPID: th.lpid, What: "futex", Kind: sched.Sleep})
		}
	}
	sort.Slice(st.Deadlines, func(i, j int) bool {
		a, b := st.Deadlines[i], st.Deadlines[j]
		if a.At != b.At {
			return a.At < b.At
		}
		if a.LPID != b.LPID {
			return a.LPID < b.LPID
		}
		return a.What < b.What
	})
	if len(st.Deadlines) > 0 {
		st.NextDeadline, st.HasDeadline = st.Deadlines[0].At, true
	}
	return st
}

// Release lets the pending op with this ID proceed.
func (t *Tracer) Release(id uint64) (Released, error) {
	var r Released
	var err error
	if e := t.do(func() { r, err = t.release(id) }); e != nil {
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
		for _, p := range t.procs {
			if p.node.name == node {
				unix.Kill(p.pid, unix.SIGKILL)
			}
		}
	})
}

func (t *Tracer) killAll() {
	t.killAndReap(func(*process) bool { return true })
	for _, p := range t.fresh {
		if p.chunk != nil && p.chunk.dg != nil {
			t.dropDgram(p)
		}
	}
	for id, p := range t.pending {
		if p.chunk != nil && p.chunk.dg != nil {
			t.dropDgram(p)
		}
		p.dropped = true
		delete(t.pending, id)
	}
	for _, c := range t.conns {
		c.queue = nil
		t.closeConn(c)
	}
	clear(t.conns)
	t.held = nil
	t.fresh = t.fresh[:0]
	// Reap anything else this thread started.
	for {
		pid, _, err := ptrace.Wait(-1, ptrace.Tracees|ptrace.NoHang)
		if err != nil || pid <= 0 {
			break
		}
	}
	for tid, th := range t.threads {
		th.closeThreadFiles()
		delete(t.threads, tid)
	}
	t.pruneTimers() // every owner is gone: closes lockstep's timerfd duplicates
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
}

// Cut is a partition between two sets of addresses. While it lasts, the
// FIN of a connection across it is held like its bytes, and sent at the
// heal: sent into the partition's firewall it would be dropped and come
// back with a retransmission timed by real time, which no replay repeats.
type Cut struct {
	A, B []netip.Addr
	Heal bool
}

// Stepper is what Run asks at each quiescent point, on the tracer thread.
// Its methods must not call other Tracer methods.
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
			t.publishClocks()
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
			if a.Crash != "" {
				t.crashNode(a.Crash)
			}
			for node, d := range a.Clocks {
				t.shiftClock(node, d)
			}
			for node, ppm := range a.Drifts {
				t.driftClock(node, ppm)
			}
			for _, c := range a.Cuts {
				t.applyCut(c)
			}
			if a.Reset != "" {
				if err = t.resetSock(a.Reset); err != nil {
					return
				}
			}
			if a.Drop != 0 {
				if err = t.dropDatagram(a.Drop); err != nil {
					return
				}
			}
			t.publishClocks()
			if a.Launch != nil {
				cfg, path, lerr := prepareLaunch(*a.Launch)
				pid := 0
				if lerr == nil {
					pid, lerr = t.launch(cfg, path)
				}
				s.Launched(cfg.Node, pid, time.Since(t2), lerr)
			}
			if a.Release != 0 {
				var r Released
				r, err = t.release(a.Release)
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
func (f *stepFunc) Released(_ uint64, r Released)              { f.last = r }
func (f *stepFunc) Launched(string, int, time.Duration, error) {}

// Drive is Run for a plain function: decide gets the state and the result
// of the op its previous action released.
func (t *Tracer) Drive(ctx context.Context, decide func(st *State, last Released) (Action, error)) error {
	return t.Run(ctx, &stepFunc{decide: decide})
}

func (t *Tracer) startSentinel() {
	pid, keep, err := launch.ForkSentinel()
	if err != nil {
		t.log.Warn("starting the sentinel process; falling back to polling", "err", err)
		return
	}
	t.sentinel, t.sentinelPipe = pid, keep
}

func (t *Tracer) stopSentinel() {
	if t.sentinel > 0 {
		unix.Kill(t.sentinel, unix.SIGKILL)
		ptrace.Wait(t.sentinel, 0)
		t.sentinel = 0
	}
	if t.sentinelPipe != nil {
		t.sentinelPipe.Close()
		t.sentinelPipe = nil
	}
}

// blockingWait waits for one event for at most about d. A blocking wait4
// costs nothing while tracees run, unlike polling, which competes with them
// for the CPU; the sentinel's stop bounds it when every running thread went
// to sleep in the kernel and nothing will report. It reports whether a
// tracee event was handled.
func (t *Tracer) blockingWait(d time.Duration) bool {
	if t.sentinel <= 0 {
		time.Sleep(d)
		return t.drain(true) > 0
	}
	sentinel := t.sentinel
	timer := time.AfterFunc(d, func() { unix.Kill(sentinel, unix.SIGSTOP) })
	defer timer.Stop()
	tid, st, err := ptrace.Wait(-1, ptrace.Tracees|ptrace.Untraced)
	if err != nil || tid <= 0 {
		return false
	}
	t0 := time.Now()
	t.handle(tid, st)
	t.stats.HandleTime += time.Since(t0)
	return tid != sentinel
}

// tscBase makes the virtual time-stamp counter start well above zero, as a
// real one does after boot; it ticks once per virtual nanosecond.
const tscBase = uint64(3600e9)

// emulateTSC answers a faulting rdtsc or rdtscp (PR_TSC_SIGSEGV) from
// virtual time. It reports false for any other SIGSEGV.
func (t *Tracer) emulateTSC(th *thread) bool {
	if err := ptrace.GetRegs(th.tid, &th.regs); err != nil {
		return false
	}
	var code [3]byte
	if ptrace.ReadMem(th.tid, th.regs.PC(), code[:]) != nil {
		return false
	}
	if !th.regs.EmulateTSC(code, tscBase+uint64(t.opts.Clock.Now())) {
		return false
	}
	if err := ptrace.SetRegs(th.tid, &th.regs); err != nil {
		return false
	}
	t.stats.TSCReads++
	t.cont(th, 0)
	return true
}

// withGodebug adds a setting to the environment's GODEBUG, keeping the
// settings it already has (a second GODEBUG entry would hide one of them).
func withGodebug(env []string, setting string) []string {
	out := append([]string(nil), env...)
	for i, e := range out {
		if v, ok := strings.CutPrefix(e, "GODEBUG="); ok {
			if v == "" {
				out[i] = "GODEBUG=" + setting
			} else {
				out[i] = e + "," + setting
			}
			return out
		}
	}
	return append(out, "GODEBUG="+setting)
}

// killAndReap SIGKILLs the processes that match and handles their exits
// until none is left, for at most five seconds; it returns how many are
// still there.
//
// Precondition: runs on the tracer thread.
func (t *Tracer) killAndReap(match func(*process) bool) int {
	alive := func() int {
		n := 0
		for _, p := range t.procs {
			if match(p) {
				n++
			}
		}
		return n
	}
	for _, p := range t.procs {
		if match(p) {
			unix.Kill(p.pid, unix.SIGKILL)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for alive() > 0 && time.Now().Before(deadline) {
		if t.drain(true) == 0 {
			time.Sleep(100 * time.Microsecond)
		}
		for pid, p := range t.procs {
			// A process whose threads all left without a leader report.
			if match(p) && len(p.threads) == 0 && unix.Kill(p.pid, 0) == unix.ESRCH {
				delete(t.procs, pid)
			}
		}
	}
	return alive()
}
