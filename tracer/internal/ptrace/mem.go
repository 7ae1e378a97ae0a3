package ptrace

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// ReadMem copies len(b) bytes of pid's memory at addr. Memory it cannot
// read, in part or whole, is an error that wraps EFAULT.
func ReadMem(pid int, addr uint64, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	local := []unix.Iovec{{Base: &b[0]}}
	local[0].SetLen(len(b))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(b)}}
	n, err := unix.ProcessVMReadv(pid, local, remote, 0)
	if err != nil {
		return fmt.Errorf("reading %d bytes at %#x of pid %d: %w", len(b), addr, pid, err)
	}
	if n != len(b) {
		return fmt.Errorf("reading %d bytes at %#x of pid %d: short read %d: %w", len(b), addr, pid, n, unix.EFAULT)
	}
	return nil
}

// pageSize is the unit in which a tracee's memory is readable or not.
const pageSize = 4096

// ReadMemPrefix fills as much of b as it can from pid's memory at addr, in
// one call, and returns how many bytes it read: the pages are asked for
// one by one, so a page that cannot be read (past the end of a stack's
// mapping) ends the read there instead of failing all of it. Reading
// nothing at all is an error that wraps EFAULT.
func ReadMemPrefix(pid int, addr uint64, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	segs := make([]unix.RemoteIovec, 0, len(b)/pageSize+2)
	for off := 0; off < len(b); {
		a := addr + uint64(off)
		n := min(len(b)-off, int(pageSize-a%pageSize))
		segs = append(segs, unix.RemoteIovec{Base: uintptr(a), Len: n})
		off += n
	}
	local := []unix.Iovec{{Base: &b[0]}}
	local[0].SetLen(len(b))
	n, err := unix.ProcessVMReadv(pid, local, segs, 0)
	if err != nil {
		return 0, fmt.Errorf("reading up to %d bytes at %#x of pid %d: %w", len(b), addr, pid, err)
	}
	if n == 0 {
		return 0, fmt.Errorf("reading up to %d bytes at %#x of pid %d: nothing read: %w", len(b), addr, pid, unix.EFAULT)
	}
	return n, nil
}

// ReadMemVec fills b from the pieces of pid's memory segs names, in order,
// in one call; their lengths must add up to len(b). As for ReadMem,
// memory it cannot read is an error that wraps EFAULT.
func ReadMemVec(pid int, b []byte, segs []unix.RemoteIovec) error {
	if len(b) == 0 {
		return nil
	}
	local := []unix.Iovec{{Base: &b[0]}}
	local[0].SetLen(len(b))
	n, err := unix.ProcessVMReadv(pid, local, segs, 0)
	if err != nil {
		return fmt.Errorf("reading %d bytes in %d pieces of pid %d: %w", len(b), len(segs), pid, err)
	}
	if n != len(b) {
		return fmt.Errorf("reading %d bytes in %d pieces of pid %d: short read %d: %w", len(b), len(segs), pid, n, unix.EFAULT)
	}
	return nil
}

// WriteMem copies b into pid's memory at addr. Read-only pages (rare for
// the out-buffers lockstep fills) are written with ptrace pokes, which
// need the tracer thread and a stopped thread.
func WriteMem(pid int, addr uint64, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	local := []unix.Iovec{{Base: &b[0]}}
	local[0].SetLen(len(b))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(b)}}
	n, err := unix.ProcessVMWritev(pid, local, remote, 0)
	if err != nil {
		if _, perr := unix.PtracePokeData(pid, uintptr(addr), b); perr != nil {
			return fmt.Errorf("writing %d bytes at %#x of pid %d: %w (poke: %v)", len(b), addr, pid, err, perr)
		}
		return nil
	}
	if n != len(b) {
		return fmt.Errorf("writing %d bytes at %#x of pid %d: short write %d", len(b), addr, pid, n)
	}
	return nil
}

// PokeText writes b over code at addr, which process_vm_writev cannot.
//
// Precondition: runs on the tracer thread; tid is in a ptrace stop.
func PokeText(tid int, addr uint64, b []byte) error {
	_, err := unix.PtracePokeText(tid, uintptr(addr), b)
	return err
}

// ReadU64 reads one native-endian word.
func ReadU64(pid int, addr uint64) (uint64, error) {
	var b [8]byte
	if err := ReadMem(pid, addr, b[:]); err != nil {
		return 0, err
	}
	return binary.NativeEndian.Uint64(b[:]), nil
}
