package callsite

import "github.com/lockstep-dev/lockstep/tracer/internal/ptrace"

// Reading a tracee's memory costs a system call of a few µs whatever its
// size (process_vm_readv pins the pages it copies): naming a site by
// reading each frame on its own cost a Go program one call per frame. A
// stackWindow reads a stopped thread's stack from sp up in one piece, and
// further up in larger pieces only when a walk goes past what it read.
const (
	// scanBytes is what a scan for return addresses reads from sp.
	scanBytes = stackScanWords * 8
	// goStackBytes is what a Go stack's frame-pointer walk reads first:
	// the standard library's syscall and network paths and the frames
	// above them (a Go pingpong's walks end within 2.4 KiB; a page more
	// costs less than a second read).
	goStackBytes = 4096
	// jvmStackBytes is what a JVM's stack read takes first: a read
	// through a BufferedReader is a dozen interpreted frames, some
	// 2.5 KiB, above the stop.
	jvmStackBytes = 4096
	// maxWindow bounds a window; a frame further up is read on its own.
	maxWindow = 64 << 10
)

// stackWindow is the stack of a thread stopped at sp, as far up as the
// walks of one stop have needed it. The thread does not run meanwhile, so
// its bytes are what reading each word on its own would give.
type stackWindow struct {
	pid   int
	sp    uint64
	first int // how much the first read takes
	buf   []byte
	// short says a read came back short (the end of the stack's mapping,
	// or an unreadable page): nothing further up is read in one piece.
	short bool
}

// reset makes the window the stack of pid's thread stopped at sp, of
// which the first read takes first bytes (more if the first walk needs
// more). The buffer of the last stop is kept: a Cache names one site at a
// time, on the tracer thread, with one window.
func (s *stackWindow) reset(pid int, sp uint64, first int) *stackWindow {
	*s = stackWindow{pid: pid, sp: sp, first: first, buf: s.buf[:0]}
	return s
}

// bytes returns the n bytes at addr, reading the stack up to them if it
// has not yet; ok is false when they cannot be read in one piece from sp
// up (the caller may read them on their own).
func (s *stackWindow) bytes(addr uint64, n int) (b []byte, ok bool) {
	if addr < s.sp || addr-s.sp > maxWindow {
		return nil, false
	}
	end := int(addr-s.sp) + n
	if end > len(s.buf) {
		s.reach(end)
	}
	if end > len(s.buf) {
		return nil, false
	}
	return s.buf[addr-s.sp : end], true
}

// reach reads the stack up to end bytes above sp, and past it: the first
// read's size, then twice what was read before, so a long walk costs a
// few reads, not one per frame.
func (s *stackWindow) reach(end int) {
	if s.short || end > maxWindow {
		return
	}
	want := min(max(end, s.first, 2*len(s.buf)), maxWindow)
	if cap(s.buf) < want {
		buf := make([]byte, len(s.buf), want)
		copy(buf, s.buf)
		s.buf = buf
	}
	have := len(s.buf)
	n, err := ptrace.ReadMemPrefix(s.pid, s.sp+uint64(have), s.buf[have:want])
	if err != nil {
		n = 0
	}
	s.buf = s.buf[:have+n]
	s.short = have+n < want
}
