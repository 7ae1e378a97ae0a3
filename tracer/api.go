package tracer

import (
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/disk"
	"github.com/lockstep-dev/lockstep/netcut"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/tracer/internal/launch"
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
	// delivered later as their own ops (docs/architecture.md "Messages in flight").
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
	// vDSO hidden, instead of through the clock page (vtime_clockpage.go): the
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
	// Firewall is where the cuts of the network (Action.Cuts) take effect,
	// by node address (netns.Cluster.Firewall). Nil keeps them in the
	// tracer's books only: deliveries, FINs and connects across them are
	// held, but the kernel drops nothing.
	Firewall netcut.Firewall[netip.Addr]
	// Zygote forks the nodes when set (see Zygote); otherwise the tracer
	// thread forks them itself, which is simpler but slows lockstep down
	// while children are young.
	Zygote *Zygote
	// Images caches what lockstep learns of the nodes' executables (see
	// vtime_images.go); a job shares one across its trials. nil: one per tracer.
	Images *Images
	// WatchCgroup, when set, counts the activity of a node's cgroup
	// (quiescence compares the counts where it would read cpu.stat); a
	// node whose cgroup it cannot watch falls back to cpu.stat.
	WatchCgroup WatchCgroup
	// WatchThread, when set, counts one thread's activity the same way
	// (of a node whose cgroup WatchCgroup watches): quiescence skips the
	// /proc reads of a thread that neither ran nor was woken since it
	// was last seen asleep.
	WatchThread WatchThread
}

// WatchCgroup starts counting the times a task of the cgroup v2 directory
// (or of one below it) is woken or switched onto a CPU. count may be called
// from the tracer's thread at any time until stop.
type WatchCgroup func(dir string) (count func() uint64, stop func(), err error)

// WatchThread starts counting the same for one thread (the kernel's thread
// id), while its cgroup is watched.
type WatchThread func(tid int) (count func() uint64, stop func(), err error)

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
	// Init, with PIDNamespace, runs lockstep's init as pid 1 and the
	// program as its child, as a container's --init does: processes the
	// program leaves behind live on, orphans are reaped, and the node's
	// first process exits once none is left. Its Exit then tells the last
	// process's (its LPID, code or signal).
	Init bool
	// ClockOffset sets the node's wall clock apart from the cluster's when
	// its first process starts (a restart keeps the node's clock).
	ClockOffset time.Duration
	// Disk, when set, is told of the node's calls on its files before
	// they run (storage faults; see Disk).
	Disk Disk
}

// Sandbox isolates a node the way a container would; see LaunchConfig.
type Sandbox = launch.Sandbox

// PrivateDir is a host directory a sandboxed node sees as its own; see
// Sandbox.Private.
type PrivateDir = launch.PrivateDir

// A Zygote forks nodes on a tracer's behalf (Options.Zygote).
type Zygote = launch.Zygote

// Root is an image's filesystem a sandboxed node sees as its /
// (Sandbox.Root).
type Root = launch.Root

// TrialPath is where a sandboxed node sees its Sandbox.Trial directory.
const TrialPath = launch.TrialPath

// DefaultCaps are the capabilities a sandboxed node keeps.
func DefaultCaps() []int { return launch.DefaultCaps() }

// StartZygote starts a zygote: lockstep re-executed in zygote mode (the
// binary must call MaybeRunZygote first thing in main).
func StartZygote() (*Zygote, error) { return launch.StartZygote() }

// MaybeRunZygote turns the process into a zygote when it was started as
// one, and never returns in that case. Binaries that use a Zygote call it
// first thing in main (and in TestMain).
func MaybeRunZygote() { launch.MaybeRunZygote() }

// TSCTraps says whether rdtsc faults on this machine in a thread that
// asked for it, as every node asks under virtual time; a hypervisor may
// ignore the request. It runs this binary again, so main (and TestMain)
// must call MaybeRunZygote first.
func TSCTraps() (bool, error) { return launch.TSCTraps() }

// Exit reports that a traced process ended.
type Exit struct {
	Node   string
	LPID   string
	Pid    int
	Root   bool // the node's first process
	Code   int  // exit code, when Signal is 0
	Signal syscall.Signal
	// Took counts the other processes of the node the kernel killed
	// because this one, pid 1 of the node's PID namespace, exited: what a
	// command that starts its server in the background and returns leaves.
	Took int
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
	// Timed lists the points since the previous state where real time,
	// not a decision, settled what ran (threads let run beside a loop on
	// the clock or past the grace period, bytes or a FIN no longer waited
	// for): where a replay that parts from its trace may have parted.
	Timed []string
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

// Stats counts what the tracer did, for benchmarks and reports. It lives
// in package stats so that results and reports read it without importing
// the tracer.
type Stats = stats.Trial

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
	// Cuts are cuts of the network to put up or (Heal) take down, in
	// order.
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

// Cut puts up, or with Heal takes down, a cut of the network between two
// sets of node addresses (netcut.Cut: both ways, or one way). The tracer
// owns the cuts in force (a netcut.Set over Options.Firewall) and times
// their firewall: a cut goes up once the connections it crosses have
// acknowledged what they received (see flushAcks), and comes down once
// the connects made into it have been ended (whose SYNs the kernel would
// otherwise retransmit through the opened firewall at a real-time moment),
// before the FINs held across it are sent. While it lasts, the FIN of a
// connection across it is held like its bytes: sent into the firewall it
// would be dropped and come back with a retransmission timed by real time,
// which no replay repeats.
type Cut struct {
	netcut.Cut[netip.Addr]
	Heal bool
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

// Wake is a virtual deadline the tracer's owner keeps (the engine: a node's
// start, the end of a delay hold, a fault trigger or a fault's end).
type Wake struct {
	// Next answers the owner's deadline now, read whenever the queue is
	// read, or false when it has none now.
	Next func() (Deadline, bool)
	// Listed puts it among the deadlines Queue.List lists, the ones the
	// engine offers as advance targets.
	Listed bool
}

// Queue reads the trial's one deadline queue at the time of the call, so
// it sees what the owner changed since the state was taken. Valid during
// the Step that was given the state.
type Queue interface {
	// Next is the earliest deadline, leaving out those of the ops in
	// skip (held enabled ops: theirs passed already, and moving to them
	// would not move the clock).
	Next(skip []*sched.Op) (time.Duration, bool)
	// List is the tracer's deadlines and the owner's listed wakes,
	// sorted as State.Deadlines.
	List() []Deadline
}

// Sock is a connected TCP socket of a node, as a reset fault names it.
type Sock struct {
	Node string
	// Object names it across runs: the logical process that holds it and
	// the descriptor ("sock:db1/0/fd7"). Its ports, which the kernel
	// draws at random, are not part of it.
	Object string
	// Conn is "local>peer", for humans.
	Conn string
}

// Disk keeps a node's storage books (package disk): the tracer tells it of
// each call that changes, reads or syncs the node's files before the call
// runs, and does what it answers (run it, fail it, or hold it for virtual
// time). Only a node launched with one stops at these calls (diskFilter):
// they are stops, not ops, and change no schedule.
type Disk interface {
	Before(disk.Call) disk.Answer
	// Reads reports whether a read may fail (an ioerror of reads): only
	// then do the reads that are not gated anyway (pread64, preadv) stop.
	Reads() bool
}
