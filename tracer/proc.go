package tracer

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/internal/procfs"
	"github.com/lockstep-dev/lockstep/tracer/internal/callsite"
	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
)

// threadState says what the tracer knows of a thread. Stopped and running
// threads are different states: only stopped ones may be inspected.
type threadState uint8

const (
	// tsNew: attached, its first stop not yet handled or its LPID unknown.
	tsNew threadState = iota
	// tsRunning: resumed; it may be executing or asleep in an ungated syscall.
	tsRunning
	// tsGated: stopped at a gated syscall whose op is pending.
	tsGated
	// tsTimedWait: released into a futex wait whose timeout lockstep owns;
	// asleep in the kernel until woken or interrupted at its virtual deadline.
	tsTimedWait
	// tsGroupStop: in a group-stop (SIGSTOP and friends), listening.
	tsGroupStop
	// tsHeld: stopped: a new thread waiting for its parent's clone event,
	// or a parent waiting for its new thread's first stop.
	tsHeld
	// tsAlone: stopped at a syscall that may sleep on the disk, or at a
	// clone, until no other thread runs (see onAlone, onCreate).
	tsAlone
	numStates
)

// thread is one traced task.
//
// A stopped thread is the handle a stop's handler works through: it reads
// and sets the thread's registers and memory, injects syscalls and resumes
// it (cont, allow, fake), keeping its table's books.
type thread struct {
	tab  *procTable // the table the thread is in
	tid  int
	proc *process
	lpid string
	// clones counts the threads this one created, which are named by it
	// (childLPID).
	clones int
	state  threadState
	regs   ptrace.Regs
	// pending is the op this thread is stopped at (tsGated).
	pending *pendingOp
	// Timed wait bookkeeping (tsTimedWait): the syscall, its first
	// argument (to tell it is still in it) and what its timeout returns.
	waitDeadline int64
	waitNr       int
	waitAddr     uint64
	waitExpired  unix.Errno
	// waitArg is the argument whose timeout the wait goes without, or
	// noTimeoutArg (a socket's timeout).
	waitArg int
	// waitRequeued: a FUTEX_WAIT_REQUEUE_PI, which, interrupted once
	// requeued onto the PI lock, answers EAGAIN where its timeout would
	// have answered ETIMEDOUT.
	waitRequeued bool
	interrupted  bool
	// changingSockOpts: resumed into a change of a socket's blocking mode
	// or receive timeout, not seen since (onSockOptsChange).
	changingSockOpts bool
	// statFd is a kept-open /proc/<pid>/task/<tid>/stat: pread on it is far
	// cheaper than reopening for every quiescence check.
	statFd  int
	schedFd int
	// activity is the thread's own activity count where the owner counts
	// threads (Options.WatchThread), for quiescence (asleepSince).
	activity threadActivity
	// comm is the thread's name (/proc/…/comm) as its stat last said,
	// for the ops' records.
	comm string
	// earlyStatus holds a stop that arrived before the parent's clone event.
	heldStatus bool
	// heldParent is the thread that cloned this one, held at its clone
	// event until this one's first stop.
	heldParent *thread
	// lastOp is the last op released for this thread; firstCause carries
	// the creating thread's last op to a new thread's first op.
	lastOp     uint64
	firstCause uint64
	// connecting is set from a connect's release until the thread stops
	// again: the handshake is in flight, and its end must be waited for.
	connecting *connectWait
	// unixChecked is the connect or send to Unix sockets this thread was
	// let make again once they were checked (onUnixDests).
	unixChecked *unixCheck
}

type connectWait struct {
	fi    *fdInfo
	peer  netip.AddrPort
	since time.Time
}

// process is one traced thread group.
type process struct {
	pid      int
	node     *nodeInfo
	forkPath string
	threads  map[int]*thread
	nforks   int // children ever forked, for fork paths
	pidfd    int
	fds      map[int]*fdInfo
	site     callsite.Process
	exited   bool
	parent   *process
	root     bool // the node's first process
	execs    int
	// nsInit says the process is pid 1 of the node's PID namespace, and
	// fatal is the signal lockstep killed it for (see initSignal).
	nsInit bool
	fatal  syscall.Signal
	// took counts the node's processes killed with it (Exit.Took).
	took int
	// init says the process is lockstep's init (LaunchConfig.Init), and
	// cmd is its first child, the one that execs the node's program.
	init bool
	cmd  *process
	// nspid is the process's pid in its own PID namespace, 0 until read
	// (ownPid, proc_stat.go).
	nspid int
	// rand answers the process's getrandom and /dev/urandom reads: a
	// stream per process, since processes of one node that start together
	// would otherwise take turns on one stream in an order real time sets.
	rand io.Reader
	// tscSites maps the counter reads patchTSC rewrote in the process's
	// image to their sizes; a forked child shares its parent's.
	tscSites map[uint64]uint8
	// scratch is a page lockstep mapped in the process for what the
	// syscalls it injects point at (thread.scratch); 0 for none yet.
	scratch uint64
	// clockEntry is where the process's clock_gettime enters the clock
	// page (vtime_clockpage.go), 0 where the vDSO was not patched; a
	// forked child shares its parent's.
	clockEntry uint64
}

// procTable owns the nodes, the traced processes and threads, and the
// processes' descriptors: who exists and in what state. It knows nothing of
// ops, deliveries or time.
type procTable struct {
	opts  *Options
	log   *slog.Logger
	stats *Stats

	nodes    map[string]*nodeInfo
	nodeList []*nodeInfo // nodes in launch order, for the loops run per op
	byAddr   map[netip.Addr]*nodeInfo
	threads  map[int]*thread
	procs    map[int]*process
	// nState counts the threads in threads in each state (setState,
	// addThread, removeThread).
	nState [numStates]int
	// sockOptsGen numbers the settings fdInfo.opts caches (see sockOpts);
	// changingSockOpts counts threads between the stop at a change of
	// them and their next event.
	sockOptsGen      uint64
	changingSockOpts int
	// expect says an event may come even when every thread is held (see
	// collect).
	expect bool
	// resumed says cont let a thread go since the last settle.
	resumed bool
}

func newProcTable(opts *Options, log *slog.Logger, stats *Stats) *procTable {
	return &procTable{
		opts: opts, log: log, stats: stats,
		nodes:   map[string]*nodeInfo{},
		byAddr:  map[netip.Addr]*nodeInfo{},
		threads: map[int]*thread{},
		procs:   map[int]*process{},
		// An fdInfo's zero sockOpts were never read.
		sockOptsGen: 1,
	}
}

// setState moves th to s, keeping nState.
func (pt *procTable) setState(th *thread, s threadState) {
	if pt.threads[th.tid] == th {
		pt.nState[th.state]--
		pt.nState[s]++
	}
	th.state = s
	if th.proc != nil {
		th.proc.node.stir()
	}
}

// addThread makes th one of pt.threads.
func (pt *procTable) addThread(th *thread) {
	pt.threads[th.tid] = th
	pt.nState[th.state]++
}

// removeThread drops th from pt.threads.
func (pt *procTable) removeThread(th *thread) {
	if pt.threads[th.tid] == th {
		pt.nState[th.state]--
		delete(pt.threads, th.tid)
	}
}

// nHeld is how many threads lockstep holds at a syscall.
func (pt *procTable) nHeld() int { return pt.nState[tsGated] + pt.nState[tsAlone] }

// running is how many threads lockstep let run (or that are starting).
func (pt *procTable) running() int {
	return pt.nState[tsRunning] + pt.nState[tsNew] + pt.nState[tsTimedWait]
}

func (p *process) String() string {
	return fmt.Sprintf("%s/%s(pid %d)", p.node.name, p.forkPath, p.pid)
}

func (th *thread) String() string { return fmt.Sprintf("%s(tid %d)", th.lpid, th.tid) }

// allow resumes a stopped thread into its real syscall.
func (th *thread) allow() {
	th.tab.stats.Released++
	th.cont(0)
}

// fake skips the syscall and makes it return ret.
func (th *thread) fake(ret int64) {
	th.regs.Skip(ret)
	if err := ptrace.SetRegs(th.tid, &th.regs); err != nil {
		// ESRCH: another thread's exit_group took this one down while it
		// sat in its stop; its exit event follows.
		lvl := slog.LevelWarn
		if err == unix.ESRCH {
			lvl = slog.LevelDebug
		}
		th.tab.log.Log(context.Background(), lvl, "faking syscall result", "thread", th.String(), "err", err)
	}
	th.cont(0)
}

// cont resumes th, delivering sig unless it is 0.
//
// Precondition: runs on the tracer thread; th is stopped.
func (th *thread) cont(sig int) {
	th.tab.setState(th, tsRunning)
	th.tab.resumed = true
	if err := ptrace.Cont(th.tid, sig); err != nil && err != unix.ESRCH {
		th.tab.log.Warn("resuming thread", "thread", th.String(), "err", err)
	}
}

// inject makes a stopped thread execute one syscall (see ptrace.Inject).
//
// Precondition: runs on the tracer thread; th is in a ptrace stop.
func (th *thread) inject(nr uint64, args ...uint64) (int64, error) {
	return ptrace.Inject(th.tid, nr, args...)
}

// Ptrace events: stops handled as they arrive (seccomp stops go to the
// gates), new threads and processes, execs, exits, and tearing down.

// started says a node's first process has exec'd the node's program (an
// init's child has).
func (p *process) started() bool {
	if p.init {
		return p.cmd != nil && p.cmd.execs > 0
	}
	return p.execs > 0
}

// firstLPID names a process's first thread (and a thread that exec'd).
func (p *process) firstLPID() string { return p.node.name + "/" + p.forkPath + "/t0" }

// childLPID names the next thread parent creates in its process: the
// parent's name and its count of creations ("n/0/t0.2.1", the first thread
// of the second of t0's). A name that counted the process's threads said
// which of two creating threads the kernel served first: when one of them
// blocked on a lock the other held in user space, where lockstep orders
// nothing, or a JVM's compiler thread started another, every later name
// moved, and replays of ZooKeeper met threads under each other's names.
func (parent *thread) childLPID() string {
	parent.clones++
	return parent.lpid + "." + strconv.Itoa(parent.clones)
}

// openThreadFiles keeps /proc files open for cheap state checks, and
// watches the thread's activity where the node's is watched.
func (th *thread) openThreadFiles() {
	base := "/proc/" + strconv.Itoa(th.proc.pid) + "/task/" + strconv.Itoa(th.tid)
	th.statFd, _ = unix.Open(base+"/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	th.schedFd, _ = unix.Open(base+"/schedstat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	th.watchActivity()
}

// watchActivity counts the thread's own activity where its node's is
// counted (Options.WatchThread).
func (th *thread) watchActivity() {
	if th.tab == nil || th.tab.opts.WatchThread == nil || th.activity.count != nil {
		return
	}
	if ni := th.proc.node; ni == nil || ni.cpu.count == nil {
		return
	}
	if count, stop, err := th.tab.opts.WatchThread(th.tid); err == nil {
		th.activity = threadActivity{count: count, stop: stop}
	}
}

func (th *thread) closeThreadFiles() {
	if th.activity.stop != nil {
		th.activity.stop()
	}
	th.activity = threadActivity{}
	if th.statFd > 0 {
		unix.Close(th.statFd)
		th.statFd = 0
	}
	if th.schedFd > 0 {
		unix.Close(th.schedFd)
		th.schedFd = 0
	}
}

// kernelState returns the thread's scheduler state letter ('R', 'S', 'D',
// 't', 'Z'...) and its CPU time in ns, 0 and false if unreadable.
func (th *thread) kernelState() (byte, uint64, bool) {
	return th.readState(true)
}

// readState is kernelState, reading the CPU time only when cpu is set (a
// second read).
func (th *thread) readState(cpu bool) (byte, uint64, bool) {
	if th.statFd <= 0 {
		th.openThreadFiles()
		if th.statFd <= 0 {
			return 0, 0, false
		}
	}
	var buf [512]byte
	n, err := unix.Pread(th.statFd, buf[:], 0)
	if err != nil || n <= 0 {
		return 0, 0, false
	}
	comm, state, ok := procfs.ParseState(buf[:n])
	if !ok {
		return 0, 0, false
	}
	if string(comm) != th.comm {
		th.comm = string(comm) // renamed (or first read): rare
	}
	var used uint64
	if cpu && th.schedFd > 0 {
		m, err := unix.Pread(th.schedFd, buf[:], 0)
		if err == nil && m > 0 {
			j := bytes.IndexByte(buf[:m], ' ')
			if j > 0 {
				used, _ = strconv.ParseUint(string(buf[:j]), 10, 64)
			}
		}
	}
	return state, used, true
}

// name is the thread's name (/proc/TID/comm): as quiescence's stat reads
// keep it, or read now when none has yet.
func (th *thread) name() string {
	if th.comm == "" {
		b, err := readSmall("/proc/" + strconv.Itoa(th.tid) + "/comm")
		if err != nil {
			return ""
		}
		th.comm = strings.TrimSpace(string(b))
	}
	return th.comm
}

// tgidOf reads the thread group id of tid from /proc.
func tgidOf(tid int) (int, error) {
	v, err := statusField(tid, "Tgid")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(v)
}

// onGetrandom fills the buffer from the process's seeded stream.
func (th *thread) onGetrandom(c call) bool {
	if th.proc.rand == nil {
		return false
	}
	th.fakeRandom(c.buf, c.n)
	return true
}

func (th *thread) fakeRandom(buf, count uint64) {
	n := count
	if n > 1<<20 {
		n = 1 << 20
	}
	b := make([]byte, n)
	io.ReadFull(th.proc.rand, b)
	if err := ptrace.WriteMem(th.tid, buf, b); err != nil {
		th.fake(-int64(unix.EFAULT))
		return
	}
	th.fake(int64(n))
}

// rootAncestor is the node's first process p descends from (nil for the
// first process itself), through parents that may have exited.
func (p *process) rootAncestor() *process {
	for a := p.parent; a != nil; a = a.parent {
		if a.root {
			return a
		}
	}
	return nil
}

// pfExiting is PF_EXITING of a stat line's flags: the task is in exit.
const pfExiting = 0x4

// exiting says whether process pid has begun to exit.
func exiting(pid int) bool {
	s, err := procfs.ReadStat(pid)
	if err != nil {
		return false
	}
	f, ok := s.Field(procfs.FieldFlags)
	return ok && f&pfExiting != 0
}
