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
func (dk *disks) onDisk(th *thread, sc call) bool {
	op, ok := diskOps[sc.nr]
	if !ok {
		return false
	}
	c, ok := diskCall(th, op, sc)
	if !ok {
		return false
	}
	// Named only now: most reads and writes are of sockets and pipes.
	c.SyscallName = syscallName(sc.nr)
	ans := th.proc.node.disk.Before(c)
	switch {
	case ans.Errno != 0:
		th.fake(-int64(ans.Errno))
		return true
	case ans.Stall > 0 && dk.opts.Clock != nil:
		// A sleep until the stall's end; released then, it returns 0 (see
		// releaseSleep) without running: the books made it durable.
		po := dk.ops.newPending(th, sched.Sleep, sc)
		po.deadline = dk.vt.now() + int64(ans.Stall)
		return true
	}
	return false
}

// diskCall is what a Disk is told of the call sc, op; false when it is a
// read, write or flush of something that is not a file.
func diskCall(th *thread, op disk.Op, sc call) (disk.Call, bool) {
	c := disk.Call{Pid: th.tid, Op: op, Fd: -1, Dirfd: unix.AT_FDCWD, Dirfd2: unix.AT_FDCWD}
	switch op {
	case disk.OpWrite, disk.OpRead, disk.OpSync:
		c.Fd = sc.fd
		if th.proc.fdOf(c.Fd).kind != fdFile {
			return c, false
		}
		ioCall(&c, th.tid, sc)
	case disk.OpSyncAll:
	case disk.OpTruncate:
		c.Len = int64(sc.n)
		if sc.nr == unix.SYS_FTRUNCATE {
			c.Fd = sc.fd
		} else {
			c.Path = readPath(th.tid, sc.path)
		}
	default:
		pathCall(&c, th.tid, sc)
	}
	return c, true
}

// ioCall fills in where a read or write goes and how much it moves: the
// offset of the positioned calls, the iovecs' sum for the vectored writes.
func ioCall(c *disk.Call, tid int, sc call) {
	c.Off, c.Len = -1, int64(sc.n)
	switch sc.nr {
	case unix.SYS_PWRITE64, unix.SYS_PREAD64:
		c.Off = int64(sc.off)
	case unix.SYS_WRITEV, unix.SYS_PWRITEV, unix.SYS_PWRITEV2:
		c.Len = iovLen(tid, sc.buf, sc.n)
		if sc.nr != unix.SYS_WRITEV {
			c.Off = int64(sc.off)
		}
		if sc.nr == unix.SYS_PWRITEV2 {
			c.Flags = int(sc.flags)
		}
	}
}

// pathCall fills in the paths (and the directories they are relative to)
// of an open, mkdir, link, rename or unlink, and the flags that say what
// it does. A link's target is not read: the Disk books the new name.
func pathCall(c *disk.Call, tid int, sc call) {
	switch sc.nr {
	case unix.SYS_OPEN:
		c.Path, c.Flags = readPath(tid, sc.path), int(sc.flags)
	case unix.SYS_CREAT:
		c.Path, c.Flags = readPath(tid, sc.path), unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC
	case unix.SYS_OPENAT, unix.SYS_UNLINKAT:
		c.Dirfd, c.Path, c.Flags = sc.fd, readPath(tid, sc.path), int(sc.flags)
	case unix.SYS_OPENAT2:
		c.Dirfd, c.Path = sc.fd, readPath(tid, sc.path)
		var how [8]byte // struct open_how's flags
		if ptrace.ReadMem(tid, sc.in, how[:]) == nil {
			c.Flags = int(binary.LittleEndian.Uint64(how[:]))
		}
	case unix.SYS_MKDIR, unix.SYS_UNLINK:
		c.Path = readPath(tid, sc.path)
	case unix.SYS_RMDIR:
		c.Path, c.Flags = readPath(tid, sc.path), unix.AT_REMOVEDIR
	case unix.SYS_MKDIRAT:
		c.Dirfd, c.Path = sc.fd, readPath(tid, sc.path)
	case unix.SYS_LINK, unix.SYS_SYMLINK:
		c.Path2 = readPath(tid, sc.path2)
	case unix.SYS_LINKAT, unix.SYS_SYMLINKAT:
		c.Dirfd2, c.Path2 = sc.fd2, readPath(tid, sc.path2)
	case unix.SYS_RENAME:
		c.Path, c.Path2 = readPath(tid, sc.path), readPath(tid, sc.path2)
	case unix.SYS_RENAMEAT, unix.SYS_RENAMEAT2:
		c.Dirfd, c.Path = sc.fd, readPath(tid, sc.path)
		c.Dirfd2, c.Path2 = sc.fd2, readPath(tid, sc.path2)
		c.Flags = int(sc.flags) // renameat has none: 0
	}
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
