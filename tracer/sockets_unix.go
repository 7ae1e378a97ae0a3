package tracer

import (
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
)

// A node reaches only the Unix sockets its own processes bound. Nodes
// share the trial's directory and see the host's filesystem, where other
// nodes' and the host's sockets are (a container engine's, systemd's): a
// connect or a datagram to one of those would join what lockstep keeps
// apart, unseen by the schedule. The kernel resolves a socket's path in
// the calling thread's context (its root, its working directory, its
// /proc/self, so /proc/self/fd/N and /dev/fd/N name what its descriptor N
// holds), so lockstep has the thread itself open the path (an injected
// openat with O_PATH), identifies the file it got, and refuses the call
// unless a socket of the node's network namespace is bound to that file.
// A checked call is made again (Regs.Reenter) and then runs: the thread
// left its syscall for the injection. Abstract addresses need no check:
// their namespace is the network namespace's, the node's own.

// unixCheck is a connect or send a thread was let make after its Unix
// destinations were checked: the same call, seen again at once, runs.
type unixCheck struct {
	call  call
	paths []string
}

// onUnixDests refuses a connect or send to a Unix socket the node did not
// bind with ECONNREFUSED, as two hosts sharing a filesystem answer (the
// socket file is there, its socket is not); what cannot be checked is
// refused too.
func (sk *sockets) onUnixDests(th *thread, c call) bool {
	paths := unixDests(th.tid, c)
	if len(paths) == 0 {
		return false
	}
	if u := th.unixChecked; u != nil && u.call == c && slices.Equal(u.paths, paths) {
		th.unixChecked = nil
		return false
	}
	th.unixChecked = nil
	for i, path := range paths {
		if slices.Contains(paths[:i], path) {
			continue // a sendmmsg's messages to one socket: checked once
		}
		if errno, why, kernel := sk.pt.unixPeer(th, path); errno != 0 {
			if kernel {
				// The kernel's own answer (no such file, not a socket):
				// nothing was kept from the node. glibc asks for nscd's
				// socket at every name lookup.
				sk.log.Debug("a Unix destination the kernel would refuse too", "node", th.proc.node.name, "thread", th.String(),
					"syscall", syscallName(c.nr), "why", why, "errno", errno.Error())
				th.fake(-int64(errno))
				return true
			}
			sk.refuse(th, c.nr, errno, why)
			return true
		}
	}
	th.unixChecked = &unixCheck{call: c, paths: paths}
	th.reenter()
	return true
}

// unixDests lists the socket paths a connect, sendto, sendmsg or sendmmsg
// (each of its messages) addresses.
func unixDests(tid int, c call) []string {
	var paths []string
	add := func(addr, length uint64) {
		if p := unixPath(tid, addr, length); p != "" {
			paths = append(paths, p)
		}
	}
	switch c.nr {
	case unix.SYS_CONNECT, unix.SYS_SENDTO:
		add(c.addr, c.addrLen)
	case unix.SYS_SENDMSG:
		add(msgName(tid, c.buf))
	case unix.SYS_SENDMMSG:
		for i := range min(c.n, uioMaxiov) {
			add(msgName(tid, c.buf+i*sizeofMmsghdr))
		}
	}
	return paths
}

// msgName reads the address a struct msghdr at hdr names.
func msgName(tid int, hdr uint64) (uint64, uint64) {
	var b [16]byte // msg_name, msg_namelen
	if ptrace.ReadMem(tid, hdr, b[:]) != nil {
		return 0, 0
	}
	return binary.NativeEndian.Uint64(b[:]), uint64(binary.NativeEndian.Uint32(b[8:]))
}

// unixPath reads the path of the Unix socket address at addr as the kernel
// takes it (up to its length or a NUL); "" for none, another family's
// address or an abstract one.
func unixPath(tid int, addr, length uint64) string {
	if addr == 0 || length <= 2 {
		return ""
	}
	b := make([]byte, min(length, unix.SizeofSockaddrUnix))
	if ptrace.ReadMem(tid, addr, b) != nil || binary.NativeEndian.Uint16(b) != unix.AF_UNIX || b[2] == 0 {
		return ""
	}
	path := b[2:]
	if i := slices.Index(path, 0); i >= 0 {
		path = path[:i]
	}
	return string(path)
}

// unixPeer says why th may not reach the Unix socket at path (0 when it
// may): the file the path names in th's context must be one a socket of
// the node's network namespace is bound to.
//
// Precondition: runs on the tracer thread; th is at its syscall's stop.
// kernel reports an answer the kernel itself would give (the path does
// not resolve, or names no socket), which refuses nothing the node could
// have reached.
func (pt *procTable) unixPeer(th *thread, path string) (errno unix.Errno, why string, kernel bool) {
	fd, err := th.openPath(path)
	if err != nil {
		return unix.ECONNREFUSED, fmt.Sprintf("resolving %s in the node: %v", path, err), false
	}
	if fd < 0 {
		// What the kernel's own lookup would answer (ENOENT, EACCES...).
		return unix.Errno(-fd), "the node cannot reach " + path, true
	}
	defer th.inject(unix.SYS_CLOSE, uint64(fd))
	dev, ino, sock, err := fileIdentity(th.proc.pid, int(fd))
	switch {
	case err != nil:
		return unix.ECONNREFUSED, fmt.Sprintf("identifying %s: %v", path, err), false
	case !sock:
		return unix.ECONNREFUSED, path + " is not a socket", true // as the kernel answers
	}
	d, err := th.proc.node.diagFor()
	if err != nil {
		return unix.ECONNREFUSED, fmt.Sprintf("listing the node's Unix sockets: %v", err), false
	}
	bound, err := d.UnixBoundAt(dev, ino)
	switch {
	case err != nil:
		return unix.ECONNREFUSED, fmt.Sprintf("listing the node's Unix sockets: %v", err), false
	case !bound:
		return unix.ECONNREFUSED, "the socket " + path + " is not the node's", false
	}
	return 0, "", false
}

// openPath makes th open path with O_PATH, in its own context, and returns
// the descriptor or -errno.
//
// Precondition: runs on the tracer thread; th is in a ptrace stop.
func (th *thread) openPath(path string) (int64, error) {
	name := append([]byte(path), 0)
	buf, err := th.scratch()
	if err == nil && ptrace.WriteMem(th.tid, buf, name) != nil {
		// The program unmapped or protected the page: map another.
		th.proc.scratch = 0
		if buf, err = th.scratch(); err == nil {
			err = ptrace.WriteMem(th.tid, buf, name)
		}
	}
	if err != nil {
		return 0, err
	}
	cwd := int64(unix.AT_FDCWD)
	return th.inject(unix.SYS_OPENAT, uint64(cwd), buf, unix.O_PATH|unix.O_CLOEXEC)
}

// scratch returns a page lockstep mapped in th's process for what the
// syscalls it injects point at, so that writing it clobbers nothing of the
// program's (another thread may be using the memory below a stack
// pointer). A process maps its own at its first need; exec forgets it.
//
// Precondition: runs on the tracer thread; th is in a ptrace stop.
func (th *thread) scratch() (uint64, error) {
	p := th.proc
	if p.scratch != 0 {
		return p.scratch, nil
	}
	addr, err := th.inject(unix.SYS_MMAP, 0, uint64(unix.Getpagesize()), unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS, ^uint64(0), 0)
	if err != nil {
		return 0, err
	}
	if addr < 0 && addr > -4096 {
		return 0, fmt.Errorf("mapping a scratch page: %w", unix.Errno(-addr))
	}
	p.scratch = uint64(addr)
	return p.scratch, nil
}

// reenter has th make the syscall it was stopped at again, which an
// injection took it out of (see Regs.Reenter).
//
// Precondition: runs on the tracer thread; th is stopped.
func (th *thread) reenter() {
	th.regs.Reenter()
	if err := ptrace.SetRegs(th.tid, &th.regs); err != nil {
		th.tab.log.Debug("making a syscall again", "thread", th.String(), "err", err)
	}
	th.allow()
}

// fileIdentity names the file process pid holds at fd as a Unix socket's
// listing does (sock_diag's UNIX_DIAG_VFS): the device of the filesystem
// it was reached through, which for an overlay (a node's /tmp) is not the
// one stat gives, and its inode; sock says whether it is a socket.
func fileIdentity(pid, fd int) (dev, ino uint64, sock bool, err error) {
	var st unix.Statx_t
	path := "/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.Itoa(fd)
	if err := unix.Statx(unix.AT_FDCWD, path, 0, unix.STATX_TYPE|unix.STATX_INO|unix.STATX_MNT_ID, &st); err != nil {
		return 0, 0, false, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return 0, 0, false, nil
	}
	dev, err = mountDev(pid, st.Mnt_id)
	return dev, st.Ino, true, err
}

// mountDev returns the device of the filesystem mounted as mount id in
// process pid's mount namespace (/proc/PID/mountinfo's major:minor).
func mountDev(pid int, id uint64) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/mountinfo")
	if err != nil {
		return 0, err
	}
	want := strconv.FormatUint(id, 10) + " "
	for line := range strings.Lines(string(b)) {
		if !strings.HasPrefix(line, want) {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 {
			break
		}
		maj, min, ok := strings.Cut(f[2], ":")
		ma, err1 := strconv.ParseUint(maj, 10, 32)
		mi, err2 := strconv.ParseUint(min, 10, 32)
		if !ok || err1 != nil || err2 != nil {
			break
		}
		return unix.Mkdev(uint32(ma), uint32(mi)), nil
	}
	return 0, fmt.Errorf("no mount %d in /proc/%d/mountinfo", id, pid)
}
