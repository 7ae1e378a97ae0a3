package ptrace

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/internal/testutil"
)

// startTraced starts /bin/sleep traced (PTRACE_TRACEME) and returns it at
// its exec stop. The calling goroutine's thread is locked: it is the tracer.
func startTraced(t *testing.T) int {
	t.Helper()
	testutil.RequirePtrace(t)
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	cmd := exec.Command("/bin/sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		unix.Kill(pid, unix.SIGKILL)
		Wait(pid, unix.WALL)
	})
	got, st, err := Wait(pid, unix.WALL)
	if err != nil || got != pid {
		t.Fatalf("waiting for the exec stop: %d %v", got, err)
	}
	if st.Kind() != StepTrap || st.Signal() != unix.SIGTRAP {
		// PTRACE_TRACEME's exec stop is a plain SIGTRAP (no event).
		t.Fatalf("first stop: kind %d signal %v", st.Kind(), st.Signal())
	}
	return pid
}

func TestInjectAndMemory(t *testing.T) {
	pid := startTraced(t)
	var before Regs
	if err := GetRegs(pid, &before); err != nil {
		t.Fatal(err)
	}
	got, err := Inject(pid, unix.SYS_GETPID)
	if err != nil {
		t.Fatal(err)
	}
	if got != int64(pid) {
		t.Fatalf("injected getpid returned %d, want %d", got, pid)
	}
	var after Regs
	if err := GetRegs(pid, &after); err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Fatalf("registers not restored: pc %#x -> %#x, sp %#x -> %#x", before.PC(), after.PC(), before.SP(), after.SP())
	}
	// The stack below sp is the tracee's: write, read back, restore.
	addr := (before.SP() - 512) &^ 7
	old, err := ReadU64(pid, addr)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte("lockstep")
	if err := WriteMem(pid, addr, want); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(want))
	if err := ReadMem(pid, addr, buf); err != nil || string(buf) != string(want) {
		t.Fatalf("read back %q, %v", buf, err)
	}
	var o [8]byte
	for i := range o {
		o[i] = byte(old >> (8 * i))
	}
	if err := WriteMem(pid, addr, o[:]); err != nil {
		t.Fatal(err)
	}
}

func TestWaitKinds(t *testing.T) {
	pid := startTraced(t)
	if err := Cont(pid, 0); err != nil {
		t.Fatal(err)
	}
	// A signal the tracee would die of is first a signal-delivery stop.
	unix.Kill(pid, unix.SIGTERM)
	_, st, err := Wait(pid, unix.WALL)
	if err != nil {
		t.Fatal(err)
	}
	if st.Kind() != SignalStop || st.Signal() != unix.SIGTERM {
		t.Fatalf("got kind %d signal %v, want a SIGTERM delivery stop", st.Kind(), st.Signal())
	}
	if err := Cont(pid, int(unix.SIGTERM)); err != nil {
		t.Fatal(err)
	}
	_, st, err = Wait(pid, unix.WALL)
	if err != nil {
		t.Fatal(err)
	}
	if st.Kind() != Killed || !st.Gone() || st.Signal() != unix.SIGTERM {
		t.Fatalf("got kind %d signal %v, want killed by SIGTERM", st.Kind(), st.Signal())
	}
}

// TestReadMemPrefix: a read that runs into a page it cannot read returns
// the bytes before it; one that starts there fails with EFAULT.
func TestReadMemPrefix(t *testing.T) {
	mem, err := unix.Mmap(-1, 0, 3*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	for i := range mem[:2*pageSize] {
		mem[i] = byte(i % 251)
	}
	if err := unix.Mprotect(mem[2*pageSize:], unix.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	base := uint64(uintptr(unsafe.Pointer(&mem[0])))
	buf := make([]byte, 3*pageSize)
	n, err := ReadMemPrefix(os.Getpid(), base+100, buf)
	if err != nil || n != 2*pageSize-100 {
		t.Fatalf("read %d bytes (%v), want %d", n, err, 2*pageSize-100)
	}
	if !bytes.Equal(buf[:n], mem[100:2*pageSize]) {
		t.Fatal("the bytes read are not the memory's")
	}
	if n, err := ReadMemPrefix(os.Getpid(), base+2*pageSize, buf[:16]); !errors.Is(err, unix.EFAULT) {
		t.Fatalf("reading a page with no access: %d bytes, %v; want EFAULT", n, err)
	}
}
