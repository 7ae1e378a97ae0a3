package tracer

import (
	"bytes"
	"encoding/binary"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/disk"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/tracer/internal/launch"
	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
)

// disks holds the gate of the nodes launched with a Disk: it tells each
// node's Disk of the calls on its files and does what the Disk answers.
type disks struct {
	opts  *Options
	ops   *opTable
	vt    *vtime
	gates map[int]gate
	prog  [2][]unix.SockFilter // a node with a Disk's, by whether reads stop (diskFilter)
}

// diskOps are the calls a Disk is told of, by syscall number.
var diskOps = map[int]disk.Op{
	unix.SYS_WRITE: disk.OpWrite, unix.SYS_WRITEV: disk.OpWrite, unix.SYS_PWRITE64: disk.OpWrite,
	unix.SYS_PWRITEV: disk.OpWrite, unix.SYS_PWRITEV2: disk.OpWrite,
	unix.SYS_READ: disk.OpRead, unix.SYS_READV: disk.OpRead, unix.SYS_PREAD64: disk.OpRead,
	unix.SYS_PREADV: disk.OpRead, unix.SYS_PREADV2: disk.OpRead,
	unix.SYS_FSYNC: disk.OpSync, unix.SYS_FDATASYNC: disk.OpSync,
	unix.SYS_SYNCFS: disk.OpSyncAll, unix.SYS_SYNC: disk.OpSyncAll,
	unix.SYS_FTRUNCATE: disk.OpTruncate, unix.SYS_TRUNCATE: disk.OpTruncate,
	unix.SYS_OPEN: disk.OpOpen, unix.SYS_OPENAT: disk.OpOpen, unix.SYS_CREAT: disk.OpOpen, unix.SYS_OPENAT2: disk.OpOpen,
	unix.SYS_MKDIR: disk.OpMkdir, unix.SYS_MKDIRAT: disk.OpMkdir,
	unix.SYS_LINK: disk.OpLink, unix.SYS_LINKAT: disk.OpLink, unix.SYS_SYMLINK: disk.OpLink, unix.SYS_SYMLINKAT: disk.OpLink,
	unix.SYS_RENAME: disk.OpRename, unix.SYS_RENAMEAT: disk.OpRename, unix.SYS_RENAMEAT2: disk.OpRename,
	unix.SYS_UNLINK: disk.OpUnlink, unix.SYS_UNLINKAT: disk.OpUnlink, unix.SYS_RMDIR: disk.OpUnlink,
}

// diskNames name the calls only a Disk's node stops at, for diagnostics.
var diskNames = map[int]string{
	unix.SYS_PWRITE64: "pwrite64", unix.SYS_PWRITEV: "pwritev", unix.SYS_PREAD64: "pread64", unix.SYS_PREADV: "preadv",
	unix.SYS_OPEN: "open", unix.SYS_OPENAT: "openat", unix.SYS_CREAT: "creat", unix.SYS_OPENAT2: "openat2",
	unix.SYS_MKDIR: "mkdir", unix.SYS_MKDIRAT: "mkdirat", unix.SYS_LINK: "link", unix.SYS_LINKAT: "linkat",
	unix.SYS_SYMLINK: "symlink", unix.SYS_SYMLINKAT: "symlinkat", unix.SYS_UNLINK: "unlink", unix.SYS_UNLINKAT: "unlinkat",
	unix.SYS_RMDIR: "rmdir",
}

// diskFilter is the seccomp program of a node with a Disk: the gates', and
// the calls of diskOps the gates do not stop (opens only when they create
// or truncate; reads only when they may fail).
func (dk *disks) diskFilter(d Disk) []unix.SockFilter {
	reads, k := d.Reads(), 0
	if reads {
		k = 1
	}
	if dk.prog[k] == nil {
		gated := filteredSyscalls(dk.gates)
		var extra []uint32
		for nr, op := range diskOps {
			if _, ok := dk.gates[nr]; !ok && nr != unix.SYS_OPEN && nr != unix.SYS_OPENAT && (reads || op != disk.OpRead) {
				extra = append(extra, uint32(nr))
			}
		}
		slices.Sort(extra)
		dk.prog[k] = launch.FilterDisk(gated, extra)
	}
	return dk.prog[k]
}

// onDisk tells the node's Disk of a call before it runs, and reports true
// when the Disk's answer took the stop over: a failure returned without
// running the call (ioerror), or a stalled fsync made a sleep until its
// end in virtual time (stall).
func (dk *disks) onDisk(th *thread, nr int, a [6]uint64) bool {
	op, ok := diskOps[nr]
	if !ok {
		return false
	}
	c := disk.Call{Pid: th.tid, Op: op, Fd: -1, Dirfd: unix.AT_FDCWD, Dirfd2: unix.AT_FDCWD}
	switch op {
	case disk.OpWrite, disk.OpRead, disk.OpSync:
		c.Fd = int(int32(a[0]))
		if th.proc.fdOf(c.Fd).kind != fdFile {
			return false
		}
		c.Off, c.Len = -1, int64(a[2])
		switch nr {
		case unix.SYS_PWRITE64, unix.SYS_PREAD64:
			c.Off = int64(a[3])
		case unix.SYS_WRITEV, unix.SYS_PWRITEV, unix.SYS_PWRITEV2:
			c.Len = iovLen(th.tid, a[1], a[2])
			if nr != unix.SYS_WRITEV {
				c.Off = int64(a[3])
			}
			if nr == unix.SYS_PWRITEV2 {
				c.Flags = int(a[5])
			}
		}
	case disk.OpSyncAll:
	case disk.OpTruncate:
		c.Len = int64(a[1])
		if nr == unix.SYS_FTRUNCATE {
			c.Fd = int(int32(a[0]))
		} else {
			c.Path = readPath(th.tid, a[0])
		}
	case disk.OpOpen:
		switch nr {
		case unix.SYS_OPEN:
			c.Path, c.Flags = readPath(th.tid, a[0]), int(a[1])
		case unix.SYS_CREAT:
			c.Path, c.Flags = readPath(th.tid, a[0]), unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC
		case unix.SYS_OPENAT:
			c.Dirfd, c.Path, c.Flags = int(int32(a[0])), readPath(th.tid, a[1]), int(a[2])
		case unix.SYS_OPENAT2:
			c.Dirfd, c.Path = int(int32(a[0])), readPath(th.tid, a[1])
			var how [8]byte
			if ptrace.ReadMem(th.tid, a[2], how[:]) == nil {
				c.Flags = int(binary.LittleEndian.Uint64(how[:]))
			}
		}
	case disk.OpMkdir:
		if nr == unix.SYS_MKDIR {
			c.Path = readPath(th.tid, a[0])
		} else {
			c.Dirfd, c.Path = int(int32(a[0])), readPath(th.tid, a[1])
		}
	case disk.OpLink:
		switch nr {
		case unix.SYS_LINK, unix.SYS_SYMLINK:
			c.Path2 = readPath(th.tid, a[1])
		case unix.SYS_LINKAT:
			c.Dirfd2, c.Path2 = int(int32(a[2])), readPath(th.tid, a[3])
		case unix.SYS_SYMLINKAT:
			c.Dirfd2, c.Path2 = int(int32(a[1])), readPath(th.tid, a[2])
		}
	case disk.OpRename:
		if nr == unix.SYS_RENAME {
			c.Path, c.Path2 = readPath(th.tid, a[0]), readPath(th.tid, a[1])
		} else {
			c.Dirfd, c.Path = int(int32(a[0])), readPath(th.tid, a[1])
			c.Dirfd2, c.Path2 = int(int32(a[2])), readPath(th.tid, a[3])
			if nr == unix.SYS_RENAMEAT2 {
				c.Flags = int(a[4])
			}
		}
	case disk.OpUnlink:
		switch nr {
		case unix.SYS_UNLINK:
			c.Path = readPath(th.tid, a[0])
		case unix.SYS_RMDIR:
			c.Path, c.Flags = readPath(th.tid, a[0]), unix.AT_REMOVEDIR
		case unix.SYS_UNLINKAT:
			c.Dirfd, c.Path, c.Flags = int(int32(a[0])), readPath(th.tid, a[1]), int(a[2])
		}
	}
	// Named only now: most reads and writes are of sockets and pipes.
	c.SyscallName = dk.diskSyscallName(nr)
	ans := th.proc.node.disk.Before(c)
	switch {
	case ans.Errno != 0:
		th.fake(-int64(ans.Errno))
		return true
	case ans.Stall > 0 && dk.opts.Clock != nil:
		// A sleep until the stall's end; released then, it returns 0 (see
		// releaseSleep) without running: the books made it durable.
		po := dk.ops.newPending(th, sched.Sleep, nr, a)
		po.deadline = dk.vt.now() + int64(ans.Stall)
		return true
	}
	return false
}

func (dk *disks) diskSyscallName(nr int) string {
	if n, ok := diskNames[nr]; ok {
		return n
	}
	return dk.ops.syscallName(nr)
}

// readPath reads a NUL-terminated path from the tracee, page by page (a
// path may end just before an unmapped page); "" when it cannot.
func readPath(tid int, addr uint64) string {
	if addr == 0 {
		return ""
	}
	var out []byte
	page := make([]byte, 4096)
	for len(out) < unix.PathMax {
		n := 4096 - addr%4096
		buf := page[:n]
		if ptrace.ReadMem(tid, addr, buf) != nil {
			return ""
		}
		if i := bytes.IndexByte(buf, 0); i >= 0 {
			return string(append(out, buf[:i]...))
		}
		out = append(out, buf...)
		addr += n
	}
	return ""
}

// iovLen is the byte count of an iovec array in the tracee.
func iovLen(tid int, addr, n uint64) int64 {
	if n == 0 || n > 1024 {
		return 0
	}
	buf := make([]byte, 16*n)
	if ptrace.ReadMem(tid, addr, buf) != nil {
		return 0
	}
	var sum int64
	for i := uint64(0); i < n; i++ {
		sum += int64(binary.LittleEndian.Uint64(buf[16*i+8:]))
	}
	return sum
}
