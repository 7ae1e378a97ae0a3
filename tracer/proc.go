package tracer

import (
	"bytes"
	"fmt"
	"io"
	"net/netip"
	"os"
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
	// tsAlone: stopped at a syscall that may sleep on the disk, until no
	// other thread runs (see onAlone).
	tsAlone
	numStates
)

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

// thread is one traced task.
//
// A stopped thread is the handle a stop's handler works through: it reads
// and sets the thread's registers and memory, injects syscalls and resumes
// it (cont, allow, fake), keeping its table's books.
type thread struct {
	tab   *procTable // the table the thread is in
	tid   int
	proc  *process
	lpid  string
	state threadState
	regs  ptrace.Regs
	// pending is the op this thread is stopped at (tsGated).
	pending *pendingOp
	// Timed wait bookkeeping (tsTimedWait): the syscall, its first
	// argument (to tell it is still in it) and what its timeout returns.
	waitDeadline int64
	waitNr       int
	waitAddr     uint64
	waitExpired  unix.Errno
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
	nthreads int // threads ever created, for thread indexes
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
	// rand answers the process's getrandom and /dev/urandom reads: a
	// stream per process, since processes of one node that start together
	// would otherwise take turns on one stream in an order real time sets.
	rand io.Reader
	// tscSites maps the counter reads patchTSC rewrote in the process's
	// image to their sizes; a forked child shares its parent's.
	tscSites map[uint64]uint8
}

func (p *process) String() string {
	return fmt.Sprintf("%s/%s(pid %d)", p.node.name, p.forkPath, p.pid)
}

func (th *thread) String() string { return fmt.Sprintf("%s(tid %d)", th.lpid, th.tid) }

// openThreadFiles keeps /proc files open for cheap state checks.
func (th *thread) openThreadFiles() {
	base := "/proc/" + strconv.Itoa(th.proc.pid) + "/task/" + strconv.Itoa(th.tid)
	th.statFd, _ = unix.Open(base+"/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	th.schedFd, _ = unix.Open(base+"/schedstat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
}

func (th *thread) closeThreadFiles() {
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

// tgidOf reads the thread group id of tid from /proc.
func tgidOf(tid int) (int, error) {
	v, err := statusField(tid, "Tgid")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(v)
}

// statusField reads one field of /proc/PID/status, without its name.
func statusField(pid int, name string) (string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return "", err
	}
	i := bytes.Index(b, []byte("\n"+name+":"))
	if i < 0 {
		return "", fmt.Errorf("no %s in /proc/%d/status", name, pid)
	}
	rest := bytes.TrimLeft(b[i+len(name)+2:], " \t")
	if j := bytes.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	return string(rest), nil
}

// initSignal handles a signal about to be delivered to a node's namespace
// init. The kernel never lets a container's init die of a signal it has no
// handler for, and while it is traced not even of a fault (abort(), a
// segfault): it would retry the faulting instruction forever. A node's
// program is not meant to be an init, so lockstep kills it as the signal
// would have on a host and reports that signal as the cause. It reports
// whether it did.
//
// Precondition: runs on the tracer thread; th is in a signal-delivery stop.
func (t *Tracer) initSignal(th *thread, sig syscall.Signal) bool {
	if !diesOf(sig) || handlesSignal(th.proc.pid, sig) {
		return false
	}
	th.proc.fatal = sig
	t.pt.expect = true
	th.proc.node.stir()
	unix.Kill(th.proc.pid, unix.SIGKILL)
	return true
}

// diesOf reports whether a signal's default action ends the process.
func diesOf(sig syscall.Signal) bool {
	switch sig {
	case unix.SIGCHLD, unix.SIGCONT, unix.SIGURG, unix.SIGWINCH,
		unix.SIGSTOP, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU:
		return false
	}
	return sig > 0 && sig <= 64
}

// handlesSignal reports whether the process catches or ignores sig (the
// SigCgt and SigIgn masks of /proc/PID/status); when that cannot be read it
// says yes, so the signal is delivered as before.
func handlesSignal(pid int, sig syscall.Signal) bool {
	for _, field := range []string{"SigCgt", "SigIgn"} {
		v, err := statusField(pid, field)
		if err != nil {
			return true
		}
		mask, err := strconv.ParseUint(v, 16, 64)
		if err != nil || mask&(1<<(uint(sig)-1)) != 0 {
			return true
		}
	}
	return false
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
