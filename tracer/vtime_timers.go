package tracer

import (
	"encoding/binary"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
)

// key orders timers of one owner that are due at once.
func (v *vtimer) key() int64 {
	if v.kind == kindTimerfd {
		return int64(v.fd)
	}
	return int64(v.id)
}

func (vt *vtime) timerTab() *timerTable {
	if vt.timers == nil {
		vt.timers = &timerTable{nextID: map[*process]int32{}}
	}
	return vt.timers
}

func (vt *vtime) findTimer(p *process, kind timerKind, key int64) *vtimer {
	if vt.timers == nil {
		return nil
	}
	for _, v := range vt.timers.all {
		if v.proc == p && v.kind == kind && v.key() == key && vt.timerLive(v) {
			return v
		}
	}
	return nil
}

func (vt *vtime) addTimer(v *vtimer) {
	v.removed = false
	tab := vt.timerTab()
	tab.all = append(tab.all, v)
	if v.armed {
		vt.queue.add(v)
	}
}

func (vt *vtime) removeTimer(v *vtimer) {
	v.removed = true
	tab := vt.timerTab()
	for i, o := range tab.all {
		if o == v {
			tab.all = append(tab.all[:i], tab.all[i+1:]...)
			break
		}
	}
	if v.dup >= 0 && v.kind == kindTimerfd {
		unix.Close(v.dup)
		v.dup = -1
	}
}

// timerLive says whether a timer still exists for its process: the process
// lives, a POSIX timer was not deleted by an exec, and a timerfd's number
// still names the same open file (not closed, replaced by dup2, or closed on
// exec). Checking lazily spares hooks in close, dup2 and exec.
func (vt *vtime) timerLive(v *vtimer) bool {
	p := v.proc
	if !vt.pt.current(p) {
		return false
	}
	switch v.kind {
	case kindPosix:
		return p.execs == v.execs
	case kindTimerfd:
		r, _, errno := unix.Syscall6(unix.SYS_KCMP, uintptr(vt.selfPid), uintptr(p.pid), kcmpFile, uintptr(v.dup), uintptr(v.fd), 0)
		return errno == 0 && r == 0
	}
	return true
}

// pruneTimers drops timers whose owner or file is gone.
func (vt *vtime) pruneTimers() {
	if vt.timers == nil {
		return
	}
	for p := range vt.timers.signalled {
		if !vt.pt.current(p) {
			delete(vt.timers.signalled, p)
		}
	}
	for i := 0; i < len(vt.timers.all); {
		if v := vt.timers.all[i]; !vt.timerLive(v) {
			vt.removeTimer(v)
			continue
		}
		i++
	}
}

// fireDueTimer fires the armed timer whose virtual expiry passed first
// (ties by owner, kind and ID) and reports whether it fired one. One per
// quiescent point, as wakeDueTimedWaits does: two signals sent at once
// would race, and which handler ran first would depend on timing.
func (vt *vtime) fireDueTimer() bool {
	if vt.timers == nil || vt.opts.Clock == nil {
		return false
	}
	vt.pruneTimers()
	now := vt.now()
	var due []*vtimer
	vt.queue.each(vt, func(o deadlineOwner, d Deadline, _ bool) {
		if v, ok := o.(*vtimer); ok && v.expiry <= now {
			due = append(due, v)
		}
	})
	if len(due) == 0 {
		return false
	}
	sort.Slice(due, func(i, j int) bool {
		a, b := due[i], due[j]
		if a.expiry != b.expiry {
			return a.expiry < b.expiry
		}
		if a.lpid != b.lpid {
			return a.lpid < b.lpid
		}
		if a.kind != b.kind {
			return a.kind < b.kind
		}
		return a.key() < b.key()
	})
	v := due[0]
	// Expirations since the expiry (more than one when an advance jumped
	// the clock over several periods); an interval timer re-arms past now.
	n := int64(1)
	if v.interval > 0 {
		n += (now - v.expiry) / v.interval
		v.expiry += n * v.interval
	} else {
		v.armed = false
	}
	v.proc.node.stir() // a thread may sleep on the timer
	switch v.kind {
	case kindTimerfd:
		cur := uint64(0)
		if readyFd(v.dup, unix.POLLIN) {
			cur = v.ticks // unread: a read takes the whole count
		}
		v.ticks = cur + uint64(n)
		if err := setTicks(v.dup, v.ticks); err != nil {
			vt.expireNow(v, err)
		}
	case kindItimer:
		vt.pt.expectEvent()
		v.proc.node.stir()
		if err := unix.Kill(v.proc.pid, unix.SIGALRM); err != nil {
			vt.log.Debug("sending SIGALRM", "proc", v.proc.String(), "err", err)
		}
		vt.noteSignal(v.proc, int(unix.SIGALRM))
	case kindPosix:
		vt.firePosix(v, n)
	}
	return true
}

// expireNow is the fallback for kernels without TFD_IOC_SET_TICKS
// (CONFIG_CHECKPOINT_RESTORE): arm the real timer to expire at once and wait
// until it has, so that readiness is settled before quiescence. The count a
// read sees is then 1, however many periods passed.
func (vt *vtime) expireNow(v *vtimer, why error) {
	vt.log.Debug("setting timerfd ticks; arming it for 1ns instead", "lpid", v.lpid, "fd", v.fd, "err", why)
	if err := unix.TimerfdSettime(v.dup, 0, &unix.ItimerSpec{Value: unix.Timespec{Nsec: 1}}, nil); err != nil {
		vt.log.Warn("firing timerfd", "lpid", v.lpid, "fd", v.fd, "err", err)
		return
	}
	v.ticks = 1
	for i := 0; i < 1000; i++ {
		var cur unix.ItimerSpec
		if unix.TimerfdGettime(v.dup, &cur) != nil || cur.Value == (unix.Timespec{}) {
			return // expired (disarmed); a reader may have taken it already
		}
		unix.Nanosleep(&unix.Timespec{Nsec: 10000}, nil)
	}
}

// firePosix queues a POSIX timer's signal as the kernel would: not again
// while the previous one is still queued (that counts as an overrun).
func (vt *vtime) firePosix(v *vtimer, n int64) {
	if v.notify == sigevNone {
		return
	}
	tid := 0
	if v.notify&sigevThreadID != 0 {
		tid = v.tid
	}
	if signalQueued(v.proc.pid, tid, int(v.signo)) {
		v.overrun = clampOverrun(int64(v.overrun) + n)
		return
	}
	v.overrun = clampOverrun(n - 1)
	var info [128]byte
	binary.LittleEndian.PutUint32(info[0:], uint32(v.signo))
	binary.LittleEndian.PutUint32(info[8:], uint32(siCodeTimer))
	binary.LittleEndian.PutUint32(info[16:], uint32(v.id))      // si_timerid
	binary.LittleEndian.PutUint32(info[20:], uint32(v.overrun)) // si_overrun
	binary.LittleEndian.PutUint64(info[24:], v.value)           // si_value
	vt.pt.expectEvent()
	v.proc.node.stir()
	if err := queueSignal(v.proc.pid, tid, int(v.signo), &info); err != nil {
		vt.log.Debug("queueing timer signal", "lpid", v.lpid, "signal", v.signo, "err", err)
	}
	vt.noteSignal(v.proc, int(v.signo))
}

func clampOverrun(n int64) int32 {
	if n > 1<<31-1 {
		return 1<<31 - 1
	}
	return int32(n)
}

// signalQueued says whether signal sig is pending for the thread tid (or
// for the process when tid is 0), from /proc/PID[/task/TID]/status.
func signalQueued(pid, tid, sig int) bool {
	path, field := "/proc/"+strconv.Itoa(pid)+"/status", "ShdPnd:"
	if tid != 0 {
		path, field = "/proc/"+strconv.Itoa(pid)+"/task/"+strconv.Itoa(tid)+"/status", "SigPnd:"
	}
	b, err := readFileSmall(path)
	return err == nil && sig >= 1 && sig <= 64 && statusMask(b, field)&(1<<(sig-1)) != 0
}

// virtualClock maps a timer's clock to one vclock answers; ok is false for
// clocks lockstep leaves to the kernel.
func virtualClock(clk int32) (int32, bool) {
	switch clk {
	case unix.CLOCK_REALTIME, unix.CLOCK_MONOTONIC, unix.CLOCK_BOOTTIME:
		return clk, true
	case unix.CLOCK_REALTIME_ALARM:
		return unix.CLOCK_REALTIME, true
	case unix.CLOCK_BOOTTIME_ALARM:
		return unix.CLOCK_BOOTTIME, true
	}
	return 0, false
}

const maxSpecSec = int64(1<<62) / 1_000_000_000

// siCodeTimer is SI_TIMER as the siginfo field holds it.
var siCodeTimer = int32(siTimer)

// spec is an itimerspec or itimerval in ns.
type spec struct{ interval, value int64 }

// readSpec reads an itimerspec (usec false) or itimerval (usec true);
// errno is EFAULT or EINVAL when the kernel would refuse it.
func readSpec(pid int, addr uint64, usec bool) (spec, unix.Errno) {
	var b [32]byte
	if ptrace.ReadMem(pid, addr, b[:]) != nil {
		return spec{}, unix.EFAULT
	}
	var s spec
	for i, dst := range []*int64{&s.interval, &s.value} {
		sec := int64(binary.LittleEndian.Uint64(b[16*i:]))
		sub := int64(binary.LittleEndian.Uint64(b[16*i+8:]))
		unit, limit := int64(1), int64(1e9)
		if usec {
			unit, limit = 1e3, 1e6
		}
		if sec < 0 || sub < 0 || sub >= limit {
			return spec{}, unix.EINVAL
		}
		if sec > maxSpecSec {
			sec = maxSpecSec // never, for all practical purposes
		}
		*dst = sec*1e9 + sub*unit
	}
	return s, 0
}

func writeSpec(pid int, addr uint64, s spec, usec bool) error {
	var b [32]byte
	for i, ns := range []int64{s.interval, s.value} {
		sub := ns % 1e9
		if usec {
			sub /= 1e3
		}
		binary.LittleEndian.PutUint64(b[16*i:], uint64(ns/1e9))
		binary.LittleEndian.PutUint64(b[16*i+8:], uint64(sub))
	}
	return ptrace.WriteMem(pid, addr, b[:])
}

// current is what a get call reports: the interval and the time left.
func (vt *vtime) current(v *vtimer) spec {
	if v == nil || !v.armed {
		if v != nil {
			return spec{interval: v.interval}
		}
		return spec{}
	}
	// A due timer not yet fired still has a moment left, as in the kernel
	// between expiry and its handler.
	return spec{interval: v.interval, value: max(v.expiry-vt.now(), 1)}
}

// arm sets a timer from a set call's new value; abs makes the value a
// reading of the timer's clock.
func (vt *vtime) arm(v *vtimer, s spec, abs bool) {
	v.interval = s.interval
	if s.value == 0 {
		v.armed = false
		return
	}
	rel := s.value
	if abs {
		vnow, _ := vt.readClock(v.proc.node, v.clock)
		rel = vt.untilWall(v.proc.node, v.clock, s.value, vnow)
	}
	v.armed = true
	v.expiry = vt.now() + max(rel, 0)
	vt.queue.add(v)
}

// answer fakes a timer call's result: 0, or -errno.
func (vt *vtime) answer(th *thread, errno unix.Errno) bool {
	if errno != 0 {
		th.fake(-int64(errno))
	} else {
		th.fake(0)
	}
	return true
}

// timerfdClock reads a timerfd's clock from fdinfo; ok is false when fd is
// not a timerfd.
func timerfdClock(pid, fd int) (int32, bool) {
	b, err := readFileSmall("/proc/" + strconv.Itoa(pid) + "/fdinfo/" + strconv.Itoa(fd))
	if err != nil {
		return 0, false
	}
	i := strings.Index(b, "clockid:")
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(b[i+len("clockid:"):])
	if len(f) == 0 {
		return 0, false
	}
	clk, err := strconv.Atoi(f[0])
	return int32(clk), err == nil
}

// timerfd_settime(fd, flags, new, old)
func (vt *vtime) onTimerfdSettime(th *thread, c call) bool {
	p, fd := th.proc, c.fd
	clk, ok := timerfdClock(p.pid, fd)
	if !ok {
		return false // not a timerfd: the kernel says EINVAL or EBADF
	}
	vclk, ok := virtualClock(clk)
	if !ok {
		return false
	}
	s, errno := readSpec(th.tid, c.in, false)
	if errno != 0 {
		return vt.answer(th, errno)
	}
	v := vt.findTimer(p, kindTimerfd, int64(fd))
	if v == nil {
		dup := p.dupFd(fd)
		if dup < 0 {
			return false
		}
		v = &vtimer{kind: kindTimerfd, proc: p, fd: fd, dup: dup, clock: vclk}
		vt.addTimer(v)
	}
	if c.out != 0 && writeSpec(th.tid, c.out, vt.current(v), false) != nil {
		return vt.answer(th, unix.EFAULT)
	}
	// Setting a timerfd discards expirations not yet read: disarming the
	// kernel's (never armed) timer through the duplicate resets its count.
	if err := unix.TimerfdSettime(v.dup, 0, &unix.ItimerSpec{}, nil); err != nil {
		vt.log.Warn("resetting timerfd count", "lpid", th.lpid, "fd", fd, "err", err)
	}
	v.ticks = 0
	v.lpid = th.lpid
	vt.arm(v, s, c.flags&tfdTimerAbstime != 0)
	return vt.answer(th, 0)
}

// timerfd_gettime(fd, cur)
func (vt *vtime) onTimerfdGettime(th *thread, c call) bool {
	v := vt.findTimer(th.proc, kindTimerfd, int64(c.fd))
	if v == nil {
		return false // never armed through lockstep: the kernel's answer is right
	}
	if writeSpec(th.tid, c.out, vt.current(v), false) != nil {
		return vt.answer(th, unix.EFAULT)
	}
	return vt.answer(th, 0)
}

func (vt *vtime) itimer(th *thread) *vtimer {
	v := vt.findTimer(th.proc, kindItimer, 0)
	if v == nil {
		v = &vtimer{kind: kindItimer, proc: th.proc, dup: -1}
		vt.addTimer(v)
	}
	v.lpid = th.lpid
	return v
}

// alarm(seconds): returns the seconds left of the previous alarm, rounded
// as the kernel does (to nearest, and never 0 for a pending one).
func (vt *vtime) onAlarm(th *thread, c call) bool {
	v := vt.itimer(th)
	old := alarmSeconds(vt.current(v).value)
	secs := int64(uint32(c.n))
	vt.arm(v, spec{value: secs * 1e9}, false)
	v.alarm = true
	th.fake(old)
	return true
}

// alarmSeconds rounds the time left of an alarm as alarm(2) reports it: to
// the nearest second, and never to 0 while one is pending.
func alarmSeconds(left int64) int64 {
	s, rem := left/1e9, left%1e9
	if (s == 0 && rem > 0) || rem >= 5e8 {
		s++
	}
	return s
}

// setitimer(which, new, old); only ITIMER_REAL is virtual.
func (vt *vtime) onSetitimer(th *thread, c call) bool {
	if c.id != unix.ITIMER_REAL {
		return false
	}
	var s spec
	if c.in != 0 { // a NULL new value disarms, as Linux allows
		var errno unix.Errno
		if s, errno = readSpec(th.tid, c.in, true); errno != 0 {
			return vt.answer(th, errno)
		}
	}
	v := vt.itimer(th)
	if c.out != 0 && writeSpec(th.tid, c.out, roundUsec(vt.current(v)), true) != nil {
		return vt.answer(th, unix.EFAULT)
	}
	vt.arm(v, s, false)
	v.alarm = false
	return vt.answer(th, 0)
}

// getitimer(which, cur)
func (vt *vtime) onGetitimer(th *thread, c call) bool {
	if c.id != unix.ITIMER_REAL {
		return false
	}
	if writeSpec(th.tid, c.out, roundUsec(vt.current(vt.findTimer(th.proc, kindItimer, 0))), true) != nil {
		return vt.answer(th, unix.EFAULT)
	}
	return vt.answer(th, 0)
}

// roundUsec rounds a time left up to whole microseconds: an armed itimer
// never reads as zero.
func roundUsec(s spec) spec {
	if r := s.value % 1e3; r != 0 {
		s.value += 1e3 - r
	}
	return s
}

// timer_create(clockid, sevp, timerid)
func (vt *vtime) onTimerCreate(th *thread, c call) bool {
	clk, ok := virtualClock(int32(c.id))
	if !ok {
		return false // CPU-time clocks and invalid ones: the kernel's
	}
	p := th.proc
	tab := vt.timerTab()
	id := posixIDBase + tab.nextID[p]
	v := &vtimer{kind: kindPosix, proc: p, lpid: th.lpid, id: id, execs: p.execs, dup: -1, clock: clk,
		notify: sigevSignal, signo: int32(unix.SIGALRM), value: uint64(id)}
	if c.in != 0 {
		var ev [20]byte
		if ptrace.ReadMem(th.tid, c.in, ev[:]) != nil {
			return vt.answer(th, unix.EFAULT)
		}
		v.value = binary.LittleEndian.Uint64(ev[0:])
		v.signo = int32(binary.LittleEndian.Uint32(ev[8:]))
		v.notify = int32(binary.LittleEndian.Uint32(ev[12:]))
		v.tid = int(int32(binary.LittleEndian.Uint32(ev[16:])))
		switch v.notify {
		case sigevNone:
		case sigevSignal, sigevThread:
			// At the syscall, SIGEV_THREAD is a plain signal (glibc runs
			// the thread itself, through SIGEV_THREAD_ID).
			if v.signo < 1 || v.signo > 64 {
				return vt.answer(th, unix.EINVAL)
			}
		case sigevSignal | sigevThreadID:
			if other := vt.pt.threadOf(v.tid); v.signo < 1 || v.signo > 64 || other == nil || other.proc != p {
				return vt.answer(th, unix.EINVAL)
			}
		default:
			return vt.answer(th, unix.EINVAL)
		}
	}
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(id))
	if ptrace.WriteMem(th.tid, c.out, b[:]) != nil {
		return vt.answer(th, unix.EFAULT)
	}
	tab.nextID[p]++
	vt.addTimer(v)
	return vt.answer(th, 0)
}

func (vt *vtime) posixTimer(th *thread, id uint64) *vtimer {
	return vt.findTimer(th.proc, kindPosix, int64(int32(id)))
}

// timer_settime(timerid, flags, new, old)
func (vt *vtime) onTimerSettime(th *thread, c call) bool {
	v := vt.posixTimer(th, c.id)
	if v == nil {
		return false // a kernel timer (CPU clock) or no timer: the kernel's
	}
	s, errno := readSpec(th.tid, c.in, false)
	if errno != 0 {
		return vt.answer(th, errno)
	}
	if c.out != 0 && writeSpec(th.tid, c.out, vt.current(v), false) != nil {
		return vt.answer(th, unix.EFAULT)
	}
	v.overrun = 0
	vt.arm(v, s, c.flags&tfdTimerAbstime != 0)
	return vt.answer(th, 0)
}

// timer_gettime(timerid, cur)
func (vt *vtime) onTimerGettime(th *thread, c call) bool {
	v := vt.posixTimer(th, c.id)
	if v == nil {
		return false
	}
	if writeSpec(th.tid, c.out, vt.current(v), false) != nil {
		return vt.answer(th, unix.EFAULT)
	}
	return vt.answer(th, 0)
}

// timer_getoverrun(timerid)
func (vt *vtime) onTimerGetoverrun(th *thread, c call) bool {
	v := vt.posixTimer(th, c.id)
	if v == nil {
		return false
	}
	th.fake(int64(v.overrun))
	return true
}

// timer_delete(timerid)
func (vt *vtime) onTimerDelete(th *thread, c call) bool {
	v := vt.posixTimer(th, c.id)
	if v == nil {
		return false
	}
	vt.removeTimer(v)
	return vt.answer(th, 0)
}

// A timer's signal must reach a thread that waits in a gated call. The
// thread sits in its seccomp stop, where the signal stays pending until
// lockstep releases the call, and a recv or poll with nothing to read is
// never enabled: the signal would never arrive. So while a signal lockstep
// knows was sent is pending, caught (or fatal) and not blocked for the
// thread, its gated wait counts as enabled; released, the kernel sees the
// signal and interrupts the call (EINTR, or a restart after the handler)
// as it would natively. Known are a virtual timer's signals and the
// SIGCHLD a process gets when lockstep reaps its child: Erlang's
// erl_child_setup waits in pselect6 with SIGCHLD unblocked only there, and
// RabbitMQ's command line stalled for good when its helper exited.

// noteSignal records that sig was sent to p (by a timer, or the kernel).
func (vt *vtime) noteSignal(p *process, sig int) {
	tab := vt.timerTab()
	if tab.signalled == nil {
		tab.signalled = map[*process]uint64{}
	}
	tab.signalled[p] |= 1 << (sig - 1)
}

// interruptedBySignal reports whether a gated wait (an interruptible
// kind's op) would be interrupted by a signal lockstep knows was sent
// (noteSignal) and is now pending for it.
func (vt *vtime) interruptedBySignal(p *pendingOp) bool {
	if vt.timers == nil || len(vt.timers.signalled) == 0 || p.th == nil || p.th.proc == nil {
		return false
	}
	th := p.th
	sent := vt.timers.signalled[th.proc]
	if sent == 0 {
		return false
	}
	b, err := readFileSmall("/proc/" + strconv.Itoa(th.proc.pid) + "/task/" + strconv.Itoa(th.tid) + "/status")
	if err != nil {
		return false
	}
	pnd := statusMask(b, "SigPnd:") | statusMask(b, "ShdPnd:")
	if pnd&sent == 0 {
		delete(vt.timers.signalled, th.proc) // taken meanwhile
		return false
	}
	blocked, ok := p.waitMask()
	if !ok {
		blocked = statusMask(b, "SigBlk:")
	}
	// A signal whose default is to be ignored interrupts nothing unless
	// the program catches it.
	const ignoredByDefault = 1<<(unix.SIGCHLD-1) | 1<<(unix.SIGURG-1) | 1<<(unix.SIGWINCH-1) | 1<<(unix.SIGCONT-1)
	acted := ^uint64(ignoredByDefault) | statusMask(b, "SigCgt:")
	return pnd&sent&^blocked&acted&^statusMask(b, "SigIgn:") != 0
}

// waitMask reads the signal mask a wait installs for its duration
// (pselect6, ppoll, epoll_pwait's sigmask argument); false when the call
// has none, and the thread's own mask holds.
func (p *pendingOp) waitMask() (uint64, bool) {
	at := p.call.sigmask
	if p.call.nr == unix.SYS_PSELECT6 && at != 0 {
		var b [8]byte // {const sigset_t *ss; size_t ss_len}
		if ptrace.ReadMem(p.th.tid, at, b[:]) != nil {
			return 0, false
		}
		at = binary.LittleEndian.Uint64(b[:])
	}
	if at == 0 {
		return 0, false
	}
	var m [8]byte
	if ptrace.ReadMem(p.th.tid, at, m[:]) != nil {
		return 0, false
	}
	return binary.LittleEndian.Uint64(m[:]), true
}

// statusMask parses one hexadecimal signal mask line of a status file.
func statusMask(status, field string) uint64 {
	i := strings.Index(status, field)
	if i < 0 {
		return 0
	}
	line := status[i+len(field):]
	if j := strings.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	m, _ := strconv.ParseUint(strings.TrimSpace(line), 16, 64)
	return m
}
