package tracer

import (
	"bytes"
	"io"
	"net/netip"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/internal/sockdiag"
)

type nodeInfo struct {
	name  string
	addr  netip.Addr
	netns string         // namespace path, "" for lockstep's own
	diag  *sockdiag.Sock // sock_diag in the node's namespace, opened lazily
	rand  io.Reader
	procs int // processes ever started on the node, for fork paths
	// lastExit is the last exit of a process of the node other than its
	// first since it was launched: what an init's exit stands for.
	lastExit *Exit
	execs    int // images exec'd on the node, for their AT_RANDOM streams
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
	// quiescence tracks it (nodeCPU).
	idx int
	cpu nodeCPU
	// inboxName is "inbox:"+name (see inbox).
	inboxName string
	// ports counts the ephemeral ports lockstep has bound on the node
	// (bindEphemeral).
	ports int
	// localPorts counts the ports lockstep has bound on the node for a
	// connect within it (bindLocal).
	localPorts int
	// listenPorts counts the ports lockstep has bound on the node for a
	// bind to port 0 (onBind), from the top of the range down.
	listenPorts int
	// disk keeps the books of the node's data files (storage faults);
	// nil for most nodes.
	disk Disk
}

// inbox names the node's inbox object ("inbox:NAME").
func (ni *nodeInfo) inbox() string {
	if ni.inboxName == "" {
		ni.inboxName = "inbox:" + ni.name
	}
	return ni.inboxName
}

// diagFor returns the sock_diag socket in the node's network namespace.
func (ni *nodeInfo) diagFor() (*sockdiag.Sock, error) {
	if ni.diag != nil {
		return ni.diag, nil
	}
	d, err := sockdiag.Open(ni.netns)
	if err != nil {
		return nil, err
	}
	ni.diag = d
	return d, nil
}

// Quiescence looks at every thread lockstep let run and finds out from
// /proc whether it sleeps in the kernel: two reads per thread, twice per
// decision (the second to confirm that nothing ran in between). A JVM has
// dozens of threads parked in futex waits lockstep does not track; on a
// four-JVM cluster those reads were over half of lockstep's own time. A
// node's cgroup counts the CPU time of all its threads: when it has not
// moved since the node's threads were last seen asleep, none of them ran,
// and none can have woken without running (a thread woken but not yet run
// shows at the confirmation, after the pause that lets it run). So only
// the threads of nodes whose count moved are read again, and the
// confirmation compares one count per node.

// nodeCPU is what quiescence keeps per node (see above).
type nodeCPU struct {
	// fd is the node's cgroup cpu.stat, open; 0 (-1 once closed) when the
	// node has none (its threads are then always read one by one).
	fd int
	// count and stopCount are the node's cgroup's activity counter when
	// the owner watches cgroups (Options.WatchCgroup): it stands in for
	// cpu.stat, whose reads were a fifth of lockstep's time on a raft
	// cluster, and it also moves when a thread is woken and has not run.
	count     func() uint64
	stopCount func()
	// usage is the count read at the current check (ok: it could be).
	usage uint64
	ok    bool
	// asleepAt is a count read before a check that found every thread of
	// the node lockstep let run asleep; asleepOK says it still stands:
	// nothing lockstep did since could have woken one (see stir).
	asleepAt uint64
	asleepOK bool
}

// openCPUStat watches the node's cgroup on its first launch, with watch
// where it can (see nodeCPU.count), else through its cpu.stat.
func (ni *nodeInfo) openCPUStat(cgroup string, watch WatchCgroup) {
	if ni.cpu.fd > 0 || ni.cpu.count != nil || cgroup == "" {
		return
	}
	if watch != nil {
		if count, stop, err := watch(cgroup); err == nil {
			ni.cpu.count, ni.cpu.stopCount = count, stop
			return
		}
	}
	fd, err := unix.Open(cgroup+"/cpu.stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	ni.cpu.fd = fd
}

func (ni *nodeInfo) closeCPUStat() {
	if ni.cpu.stopCount != nil {
		ni.cpu.stopCount()
		ni.cpu.count, ni.cpu.stopCount = nil, nil
	}
	if ni.cpu.fd > 0 {
		unix.Close(ni.cpu.fd)
		ni.cpu.fd = -1
	}
}

// readCPU reads the node's activity count or CPU time (µs) into
// ni.cpu.usage: either only ever compared with an earlier reading.
func (ni *nodeInfo) readCPU() {
	if ni.cpu.count != nil {
		ni.cpu.usage, ni.cpu.ok = ni.cpu.count(), true
		return
	}
	ni.cpu.ok = false
	if ni.cpu.fd <= 0 {
		return
	}
	var buf [256]byte
	n, err := unix.Pread(ni.cpu.fd, buf[:], 0)
	if err != nil || n <= 0 {
		return
	}
	const key = "usage_usec "
	b := buf[:n]
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return
	}
	b = b[i+len(key):]
	if j := bytes.IndexByte(b, '\n'); j >= 0 {
		b = b[:j]
	}
	v, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return
	}
	ni.cpu.usage, ni.cpu.ok = v, true
}

// asleepSince reports whether the node's threads were seen asleep and
// nothing of the node has run since: their /proc reads can be skipped.
func (ni *nodeInfo) asleepSince() bool {
	return ni != nil && ni.cpu.ok && ni.cpu.asleepOK && ni.cpu.usage == ni.cpu.asleepAt
}

// stir forgets that the node's threads were seen asleep: lockstep changed
// one's state, signalled one, or sent the node something that may wake one
// without its count moving yet.
func (ni *nodeInfo) stir() {
	if ni != nil {
		ni.cpu.asleepOK = false
	}
}

// threadActivity is what quiescence keeps of one thread's own activity
// count: where a node's threads were all seen asleep only some of them
// ran since (the one lockstep released), and the others need no /proc
// read either. Unlike a node's, a thread's mark needs no stir: every
// wake-up lockstep causes (a resume, a signal, bytes written into a
// socket the thread waits on) runs try_to_wake_up inside lockstep's own
// system call, and so moves the count before the call returns.
type threadActivity struct {
	count func() uint64
	stop  func()
	// asleepAt is a count read before a check that found the thread
	// asleep; asleepOK says there was one.
	asleepAt uint64
	asleepOK bool
}

// asleepSince reports whether the thread was seen asleep and has neither
// run nor been woken since.
func (th *thread) asleepSince() bool {
	a := &th.activity
	return a.count != nil && a.asleepOK && a.count() == a.asleepAt
}

// countNow reads the thread's count before its state is read (0 without
// one).
func (th *thread) countNow() uint64 {
	if th.activity.count == nil {
		return 0
	}
	return th.activity.count()
}

// sawAsleep notes that the thread was found asleep, its count having been
// at before the state was read.
func (th *thread) sawAsleep(at uint64) {
	if th.activity.count != nil {
		th.activity.asleepAt, th.activity.asleepOK = at, true
	}
}
