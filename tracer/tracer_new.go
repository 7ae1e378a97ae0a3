package tracer

import (
	"io"
	"log/slog"
	"net/netip"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/tracer/internal/launch"
	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
)

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
	t.net.rt = &t.rt
	t.ops.net = t.net
	t.vt = newVtime(&t.opts, t.log, &t.stats, t.pt, t.ops)
	t.q = &quiescence{opts: &t.opts, log: t.log, stats: &t.stats, rt: &t.rt, pt: t.pt, ops: t.ops, net: t.net, handle: t.handle}
	t.sk = &sockets{opts: &t.opts, log: t.log, stats: &t.stats, pt: t.pt, ops: t.ops, net: t.net, vt: t.vt}
	t.gates = gateTable(t)
	t.ops.kinds = kindTable(t)
	t.ops.vt = t.vt
	t.dk = &disks{opts: &t.opts, ops: t.ops, vt: t.vt, gates: t.gates}
	t.filter = launch.Filter(filteredSyscalls(t.gates))
	return t
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
		for th := range t.pt.allThreads() {
			if th.activity.stop != nil {
				th.activity.stop()
				th.activity = threadActivity{}
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
			t.log.Warn("tracer thread keeps the default policy", "err", err, "why", RealtimeHint(err))
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

// gateTable returns the syscalls that stop under the tracer; every other syscall
// runs natively. To gate another one, give it a row in syscallTable (its
// name and argument layout) and an entry here with its handler: the
// seccomp filter is built from this table, and whether a pending op is
// enabled and how it is released go by the op's kind (the kind table,
// kindTable).
//
// read, write and close stop too because a filter cannot tell a socket from
// a file: their handlers release non-socket ones at once from a per-fd
// cache. Gates with argRule stop only for the arguments the filter's own
// rule for them names (futex: waits with a timeout).
//
// The handlers are bound to the parts of t that own what they change.
func gateTable(t *Tracer) map[int]gate {
	return map[int]gate{
		unix.SYS_READ:            {handle: t.sk.onRecv},
		unix.SYS_READV:           {handle: t.sk.onRecv},
		unix.SYS_RECVFROM:        {handle: t.sk.onRecv},
		unix.SYS_RECVMSG:         {handle: t.sk.onRecv},
		unix.SYS_RECVMMSG:        {handle: t.sk.onRecv},
		unix.SYS_WRITE:           {handle: t.sk.onSend},
		unix.SYS_WRITEV:          {handle: t.sk.onSend},
		unix.SYS_SENDTO:          {handle: t.sk.onSend},
		unix.SYS_SENDMSG:         {handle: t.sk.onSend},
		unix.SYS_SENDMMSG:        {handle: t.sk.onSend},
		unix.SYS_CLOSE:           {handle: t.sk.onClose},
		unix.SYS_SHUTDOWN:        {handle: t.sk.onShutdown},
		unix.SYS_CONNECT:         {handle: t.sk.onConnect},
		unix.SYS_BIND:            {handle: t.sk.onBind},
		unix.SYS_ACCEPT:          {handle: t.sk.onAccept},
		unix.SYS_ACCEPT4:         {handle: t.sk.onAccept},
		unix.SYS_POLL:            {handle: t.sk.onPoll},
		unix.SYS_PPOLL:           {handle: t.sk.onPoll},
		unix.SYS_SELECT:          {handle: t.sk.onPoll},
		unix.SYS_PSELECT6:        {handle: t.sk.onPoll},
		unix.SYS_EPOLL_WAIT:      {handle: t.sk.onPoll},
		unix.SYS_EPOLL_PWAIT:     {handle: t.sk.onPoll},
		unix.SYS_EPOLL_PWAIT2:    {handle: t.sk.onPoll},
		unix.SYS_NANOSLEEP:       {clock: true, handle: t.vt.onSleep},
		unix.SYS_CLOCK_NANOSLEEP: {clock: true, handle: t.vt.onSleep},
		unix.SYS_FUTEX:           {clock: true, argRule: true, handle: t.vt.onFutex},
		// Other timed waits (vtime_waits.go's timedWaits), untimed ones run as
		// they are.
		unix.SYS_RT_SIGTIMEDWAIT: {clock: true, handle: t.vt.onTimedWait},
		unix.SYS_SEMTIMEDOP:      {clock: true, handle: t.vt.onTimedWait},
		unix.SYS_MQ_TIMEDRECEIVE: {clock: true, handle: t.vt.onTimedWait},
		unix.SYS_MQ_TIMEDSEND:    {clock: true, handle: t.vt.onTimedWait},
		unix.SYS_FUTEX_WAITV:     {clock: true, handle: t.vt.onTimedWait},
		unix.SYS_CLOCK_GETTIME:   {clock: true, handle: t.vt.onClockGettime},
		unix.SYS_GETTIMEOFDAY:    {clock: true, handle: t.vt.onGettimeofday},
		unix.SYS_TIME:            {clock: true, handle: t.vt.onTime},
		unix.SYS_GETRANDOM:       {handle: (*thread).onGetrandom},
		// Virtual kernel timers (vtime_timers.go). timerfd_create is not gated: a
		// timerfd's clock is read from /proc/PID/fdinfo when it is first armed.
		unix.SYS_TIMERFD_SETTIME:  {clock: true, handle: t.vt.onTimerfdSettime},
		unix.SYS_TIMERFD_GETTIME:  {clock: true, handle: t.vt.onTimerfdGettime},
		unix.SYS_ALARM:            {clock: true, handle: t.vt.onAlarm},
		unix.SYS_SETITIMER:        {clock: true, handle: t.vt.onSetitimer},
		unix.SYS_GETITIMER:        {clock: true, handle: t.vt.onGetitimer},
		unix.SYS_TIMER_CREATE:     {clock: true, handle: t.vt.onTimerCreate},
		unix.SYS_TIMER_SETTIME:    {clock: true, handle: t.vt.onTimerSettime},
		unix.SYS_TIMER_GETTIME:    {clock: true, handle: t.vt.onTimerGettime},
		unix.SYS_TIMER_GETOVERRUN: {clock: true, handle: t.vt.onTimerGetoverrun},
		unix.SYS_TIMER_DELETE:     {clock: true, handle: t.vt.onTimerDelete},
		// Syscalls that may sleep on the disk run while nothing else does.
		unix.SYS_FSYNC:           {handle: t.q.onDiskSync},
		unix.SYS_FDATASYNC:       {handle: t.q.onDiskSync},
		unix.SYS_SYNC_FILE_RANGE: {handle: t.q.onDiskSync},
		unix.SYS_SYNCFS:          {handle: t.q.onDiskSync},
		unix.SYS_SYNC:            {handle: t.q.onDiskSync},
		unix.SYS_MSYNC:           {handle: t.q.onAlone},
		unix.SYS_FALLOCATE:       {handle: t.q.onAlone},
		unix.SYS_FTRUNCATE:       {handle: t.q.onAlone},
		unix.SYS_TRUNCATE:        {handle: t.q.onAlone},
		unix.SYS_RENAME:          {handle: t.q.onAlone},
		unix.SYS_RENAMEAT:        {handle: t.q.onAlone},
		unix.SYS_RENAMEAT2:       {handle: t.q.onAlone},
		// New threads and processes, created one at a time so that their
		// names do not depend on timing (onCreate). The filter's clone rule
		// stops clone when it makes no new namespace (it refuses those).
		unix.SYS_CLONE: {argRule: true, handle: t.q.onCreate},
		unix.SYS_FORK:  {handle: t.q.onCreate},
		unix.SYS_VFORK: {handle: t.q.onCreate},
		// Ways around the gate, refused on sockets (sockets_bypass.go).
		unix.SYS_SPLICE:   {handle: t.sk.onSocketSplice},
		unix.SYS_SENDFILE: {handle: t.sk.onSocketSplice},
		unix.SYS_PREADV2:  {handle: t.sk.onVectorIO},
		unix.SYS_PWRITEV2: {handle: t.sk.onVectorIO},
		// Changes to the fd table that would make the fd kind cache stale.
		unix.SYS_DUP2:        {handle: t.sk.onDup},
		unix.SYS_DUP3:        {handle: t.sk.onDup},
		unix.SYS_CLOSE_RANGE: {handle: t.sk.onCloseRange},
		// Changes to what sockOpts caches; the filter stops these three
		// only for F_SETFL, FIONBIO, SO_RCVTIMEO and SO_RCVLOWAT.
		unix.SYS_FCNTL:      {argRule: true, handle: t.pt.onSockOptsChange},
		unix.SYS_IOCTL:      {argRule: true, handle: t.pt.onSockOptsChange},
		unix.SYS_SETSOCKOPT: {argRule: true, handle: t.pt.onSockOptsChange},
	}
}

// kindTable returns the op kinds the tracer makes, bound to the parts of t
// that own their state.
func kindTable(t *Tracer) map[sched.Kind]*opKind {
	nw, sk, vt := t.net, t.sk, t.vt
	always := func(*pendingOp) bool { return true }
	return map[sched.Kind]*opKind{
		sched.Deliver: {polls: pollDeliver, enabled: nw.enabledDeliver, wakesPeer: nw.stirReceiver,
			calm: true, release: nw.releaseDeliver},
		sched.Send: {polls: pollErr, books: nw.knownSend, notePolled: nw.calmSend,
			enabled: sk.enabledSend, calm: true, release: sk.releaseSend},
		sched.Recv: {polls: pollIn, books: nw.knownRecv, notePolled: nw.calmRecv,
			enabled: sk.enabledRead, interruptible: true, wakesPeer: nw.stirNativeSender,
			calm: true, release: sk.releaseRecv},
		sched.Accept: {polls: pollIn, enabled: sk.enabledRead, interruptible: true,
			release: sk.releaseAccept},
		sched.Connect:  {enabled: sk.enabledConnect, wakesPeer: nw.stirPeer, release: sk.releaseConnect},
		sched.Close:    {enabled: always, wakesPeer: nw.stirPeer, release: sk.releaseClose},
		sched.Shutdown: {enabled: always, wakesPeer: nw.stirPeer, release: sk.releaseShutdown},
		sched.Poll: {polls: pollProbe, enabled: sk.enabledPoll, interruptible: true,
			calm: true, release: sk.releasePoll},
		sched.Sleep: {enabled: vt.enabledSleep, interruptible: true, calm: true, threadName: true,
			release: vt.releaseSleep},
	}
}

// pollDeliver: a delivery whose sending socket held bytes back waits for
// room in it.
func pollDeliver(fds []unix.PollFd, p *pendingOp) []unix.PollFd {
	if c := p.chunk.conn; c != nil && c.blocked && c.dup >= 0 && len(c.queue) > 0 && c.queue[0] == p {
		fds = append(fds, unix.PollFd{Fd: int32(c.dup), Events: unix.POLLOUT})
	}
	return fds
}

// pollIn: a blocking recv or accept waits for its socket to be readable.
func pollIn(fds []unix.PollFd, p *pendingOp) []unix.PollFd {
	if !p.immediate && p.fi != nil && p.fi.dup >= 0 {
		fds = append(fds, unix.PollFd{Fd: int32(p.fi.dup), Events: unix.POLLIN})
	}
	return fds
}

// pollErr: a captured send checks its stream socket for an error first.
func pollErr(fds []unix.PollFd, p *pendingOp) []unix.PollFd {
	if p.fi != nil && p.fi.dup >= 0 && p.fi.sockType == unix.SOCK_STREAM {
		fds = append(fds, unix.PollFd{Fd: int32(p.fi.dup), Events: unix.POLLERR | unix.POLLHUP})
	}
	return fds
}

// pollProbe: a poll-family call waits for what it polls.
func pollProbe(fds []unix.PollFd, p *pendingOp) []unix.PollFd {
	if !p.immediate {
		fds = append(fds, p.probe...)
	}
	return fds
}
