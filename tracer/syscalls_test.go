package tracer

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestSyscallTableCovers: every gated syscall and every call a Disk is told
// of has a row (its name and layout), and no two rows share a name.
func TestSyscallTableCovers(t *testing.T) {
	for nr := range newTracer(Options{}).gates {
		if _, ok := syscallTable[nr]; !ok {
			t.Errorf("gated syscall %d has no syscallTable row", nr)
		}
	}
	for nr := range diskOps {
		if _, ok := syscallTable[nr]; !ok {
			t.Errorf("disk call %d has no syscallTable row", nr)
		}
	}
	seen := map[string]int{}
	for nr, s := range syscallTable {
		if other, ok := seen[s.name]; ok {
			t.Errorf("syscalls %d and %d are both named %q", nr, other, s.name)
		}
		seen[s.name] = nr
	}
}

// TestDecodeCall: the layout puts each argument in its role's field.
func TestDecodeCall(t *testing.T) {
	c := decodeCall(unix.SYS_SENDTO, [6]uint64{0xffffffff_00000007, 0x1000, 64, unix.MSG_DONTWAIT, 0x2000, 16})
	want := call{nr: unix.SYS_SENDTO, fd: 7, buf: 0x1000, n: 64, flags: unix.MSG_DONTWAIT, addr: 0x2000, addrLen: 16}
	want.roles, want.raw = c.roles, c.raw
	if c != want {
		t.Errorf("sendto decoded as %+v, want %+v", c, want)
	}
	if !dontWait(c) || c.first() != 0xffffffff_00000007 {
		t.Errorf("sendto: dontWait %v, first %#x", dontWait(c), c.first())
	}
	c = decodeCall(unix.SYS_PSELECT6, [6]uint64{5, 1, 2, 3, 4, 6})
	if c.n != 5 || c.fdSets != [3]uint64{1, 2, 3} || c.timeout != 4 || c.sigmask != 6 || c.timeoutArg() != 4 {
		t.Errorf("pselect6 decoded as %+v", c)
	}
	c = decodeCall(unix.SYS_CLOSE_RANGE, [6]uint64{3, 0xffffffff})
	if c.fd != 3 || uint32(c.fd2) != ^uint32(0) {
		t.Errorf("close_range decoded as %+v", c)
	}
	if c := decodeCall(unix.SYS_GETPID, [6]uint64{1}); c.fd != 0 || c.timeoutArg() != noTimeoutArg || syscallName(c.nr) != "syscall39" {
		t.Errorf("a syscall without a row decoded as %+v, named %s", c, syscallName(c.nr))
	}
}
