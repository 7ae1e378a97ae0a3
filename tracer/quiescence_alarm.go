package tracer

import (
	"runtime"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// alarm stops the sentinel when a blocking wait for tracee events has
// lasted its limit. A Go timer (time.AfterFunc) fires through the
// runtime's poller, which rounds waits under a millisecond up to one and,
// on a busy machine, took 2.5 ms for 20 µs: every blocking wait of a
// quiescence check lasted that long. The alarm sleeps on a thread of its
// own in ppoll, which keeps to the microsecond, and wakes early through an
// eventfd when it is armed again.
type alarm struct {
	efd int
	pid int // the sentinel

	mu       sync.Mutex
	armed    bool
	deadline time.Time
	closed   bool
	done     chan struct{}
}

func newAlarm(sentinel int) (*alarm, error) {
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, err
	}
	a := &alarm{efd: efd, pid: sentinel, done: make(chan struct{})}
	go a.loop()
	return a, nil
}

// arm stops the sentinel after d unless disarm comes first.
func (a *alarm) arm(d time.Duration) {
	a.mu.Lock()
	a.armed, a.deadline = true, time.Now().Add(d)
	a.mu.Unlock()
	a.kick()
}

// disarm cancels the pending stop. One already sent arrives all the same
// (handle resumes the sentinel); a later wait then returns early, once.
func (a *alarm) disarm() {
	a.mu.Lock()
	a.armed = false
	a.mu.Unlock()
}

func (a *alarm) close() {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	a.kick()
	<-a.done
	unix.Close(a.efd)
}

func (a *alarm) kick() {
	one := [8]byte{1}
	unix.Write(a.efd, one[:])
}

func (a *alarm) loop() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer close(a.done)
	unix.Prctl(unix.PR_SET_TIMERSLACK, 1000, 0, 0, 0)
	fds := []unix.PollFd{{Fd: int32(a.efd), Events: unix.POLLIN}}
	var buf [8]byte
	for {
		a.mu.Lock()
		if a.closed {
			a.mu.Unlock()
			return
		}
		var timeout *unix.Timespec
		if a.armed {
			left := time.Until(a.deadline)
			if left <= 0 {
				a.armed = false
				unix.Kill(a.pid, unix.SIGSTOP)
				a.mu.Unlock()
				continue
			}
			ts := unix.NsecToTimespec(int64(left))
			timeout = &ts
		}
		a.mu.Unlock()
		if n, _ := unix.Ppoll(fds, timeout, nil); n > 0 {
			unix.Read(a.efd, buf[:])
		}
	}
}

// pause sleeps the tracer thread for d. Not time.Sleep: that parks the
// goroutine until the runtime's timer wakes it, which on a busy machine
// took 2.5 ms for 20 µs (nanosleep: 0.3 ms), and the tracer thread is
// locked anyway.
//
// A raw system call, which the runtime does not see: a goroutine in an
// ordinary one may have its stack scanned by the garbage collector
// meanwhile, and on waking it spins until the scan is over. The
// collector's thread runs under the normal policy, and when it shares the
// tracer's CPU the tracer, a real-time thread, keeps it from finishing:
// on a raft campaign a fifth of lockstep's CPU went to that spin
// (runtime.casgstatus after this nanosleep). A goroutine in a raw call is
// running, so the collector waits for it to stop at its next safe point,
// where it blocks rather than spins.
func pause(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	for {
		_, _, e := unix.RawSyscall(unix.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), uintptr(unsafe.Pointer(&ts)), 0)
		if e != unix.EINTR {
			return
		}
	}
}
