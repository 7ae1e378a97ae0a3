package launch

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

// evalFilter runs a classic-BPF seccomp program over one seccomp_data,
// with the instructions Filter emits (loads of 32-bit words, AND with a
// constant, jumps on equality, on set bits and unconditional ones,
// returns).
func evalFilter(t *testing.T, prog []unix.SockFilter, arch, nr uint32, args [6]uint64) uint32 {
	t.Helper()
	var data [64]byte
	binary.LittleEndian.PutUint32(data[offNr:], nr)
	binary.LittleEndian.PutUint32(data[offArch:], arch)
	for i, a := range args {
		binary.LittleEndian.PutUint64(data[16+8*i:], a)
	}
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			acc = binary.LittleEndian.Uint32(data[in.K:])
		case unix.BPF_ALU | unix.BPF_AND | unix.BPF_K:
			acc &= in.K
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K:
			if acc == in.K {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			if acc&in.K != 0 {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case unix.BPF_JMP | unix.BPF_JA:
			pc += int(in.K)
		case unix.BPF_RET | unix.BPF_K:
			return in.K
		default:
			t.Fatalf("instruction %d: code %#x not understood", pc, in.Code)
		}
	}
	t.Fatal("the program ran off its end")
	return 0
}

// TestFilterRules: what the filter answers for each kind of call, the
// argument rules included.
func TestFilterRules(t *testing.T) {
	const (
		allow = unix.SECCOMP_RET_ALLOW
		trace = unix.SECCOMP_RET_TRACE
		deny  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
		nosys = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
		nosup = unix.SECCOMP_RET_ERRNO | uint32(unix.EOPNOTSUPP)
		noaf  = unix.SECCOMP_RET_ERRNO | uint32(unix.EAFNOSUPPORT)
		i386  = 0x40000003 // AUDIT_ARCH_I386
	)
	prog := Filter([]uint32{unix.SYS_READ, unix.SYS_WRITE, unix.SYS_CONNECT, unix.SYS_SENDTO, unix.SYS_SENDMSG})
	for _, tc := range []struct {
		name string
		arch uint32
		nr   uint32
		args [6]uint64
		want uint32
	}{
		{"gated", auditArchX86_64, unix.SYS_CONNECT, [6]uint64{}, trace},
		{"not gated", auditArchX86_64, unix.SYS_GETPID, [6]uint64{}, allow},
		{"denied", auditArchX86_64, unix.SYS_SETNS, [6]uint64{}, deny},
		{"open_by_handle_at", auditArchX86_64, unix.SYS_OPEN_BY_HANDLE_AT, [6]uint64{}, deny},
		// Another ABI: i386 (int 0x80) numbers mean other calls (4 is
		// write there), x32 ones carry bit 30.
		{"i386 write", i386, 4, [6]uint64{}, nosys},
		{"i386 getpid", i386, 20, [6]uint64{}, nosys},
		{"x32 connect", auditArchX86_64, x32Bit | unix.SYS_CONNECT, [6]uint64{}, nosys},
		{"x32 getpid", auditArchX86_64, x32Bit | unix.SYS_GETPID, [6]uint64{}, nosys},
		{"keyctl", auditArchX86_64, unix.SYS_KEYCTL, [6]uint64{}, deny},
		{"add_key", auditArchX86_64, unix.SYS_ADD_KEY, [6]uint64{}, deny},
		{"request_key", auditArchX86_64, unix.SYS_REQUEST_KEY, [6]uint64{}, deny},
		{"sched_setscheduler", auditArchX86_64, unix.SYS_SCHED_SETSCHEDULER, [6]uint64{0, unix.SCHED_NORMAL}, deny},
		{"sched_setaffinity", auditArchX86_64, unix.SYS_SCHED_SETAFFINITY, [6]uint64{0, 8, 0x7ffd0000}, deny},
		{"sched_setattr", auditArchX86_64, unix.SYS_SCHED_SETATTR, [6]uint64{}, deny},
		{"sched_setparam", auditArchX86_64, unix.SYS_SCHED_SETPARAM, [6]uint64{}, deny},
		{"sched_getaffinity", auditArchX86_64, unix.SYS_SCHED_GETAFFINITY, [6]uint64{}, allow},
		{"setpriority", auditArchX86_64, unix.SYS_SETPRIORITY, [6]uint64{}, allow},
		{"clone3", auditArchX86_64, unix.SYS_CLONE3, [6]uint64{}, nosys},
		{"io_uring_setup", auditArchX86_64, unix.SYS_IO_URING_SETUP, [6]uint64{}, nosys},
		{"io_uring_enter", auditArchX86_64, unix.SYS_IO_URING_ENTER, [6]uint64{}, nosys},
		{"io_setup", auditArchX86_64, unix.SYS_IO_SETUP, [6]uint64{}, nosys},
		{"io_submit", auditArchX86_64, unix.SYS_IO_SUBMIT, [6]uint64{}, nosys},
		{"io_getevents", auditArchX86_64, unix.SYS_IO_GETEVENTS, [6]uint64{}, nosys},
		{"io_pgetevents", auditArchX86_64, unix.SYS_IO_PGETEVENTS, [6]uint64{}, nosys},
		{"memfd_secret", auditArchX86_64, unix.SYS_MEMFD_SECRET, [6]uint64{}, nosys},
		{"memfd_create", auditArchX86_64, unix.SYS_MEMFD_CREATE, [6]uint64{}, allow},
		{"socket AF_VSOCK", auditArchX86_64, unix.SYS_SOCKET, [6]uint64{unix.AF_VSOCK, unix.SOCK_STREAM}, noaf},
		{"socket AF_INET", auditArchX86_64, unix.SYS_SOCKET, [6]uint64{unix.AF_INET, unix.SOCK_STREAM}, allow},
		{"socket AF_UNIX", auditArchX86_64, unix.SYS_SOCKET, [6]uint64{unix.AF_UNIX, unix.SOCK_DGRAM}, allow},
		{"clone of a thread", auditArchX86_64, unix.SYS_CLONE, [6]uint64{0x3d0f00}, trace},
		{"fork as clone", auditArchX86_64, unix.SYS_CLONE, [6]uint64{17}, trace},
		{"clone into a new PID namespace", auditArchX86_64, unix.SYS_CLONE, [6]uint64{unix.CLONE_NEWPID | 17}, trace},
		{"clone into a new user namespace", auditArchX86_64, unix.SYS_CLONE, [6]uint64{unix.CLONE_NEWUSER | 17}, deny},
		{"unshare user namespace", auditArchX86_64, unix.SYS_UNSHARE, [6]uint64{unix.CLONE_NEWUSER}, deny},
		{"unshare network namespace", auditArchX86_64, unix.SYS_UNSHARE, [6]uint64{unix.CLONE_NEWNET}, deny},
		{"unshare files", auditArchX86_64, unix.SYS_UNSHARE, [6]uint64{unix.CLONE_FILES}, allow},
		{"unshare PID namespace", auditArchX86_64, unix.SYS_UNSHARE, [6]uint64{unix.CLONE_NEWPID}, allow},
		{"mknod FIFO", auditArchX86_64, unix.SYS_MKNOD, [6]uint64{0x7ffd0000, unix.S_IFIFO | 0o644}, deny},
		{"mknodat FIFO", auditArchX86_64, unix.SYS_MKNODAT, [6]uint64{3, 0x7ffd0000, unix.S_IFIFO | 0o600}, deny},
		{"mknod regular file", auditArchX86_64, unix.SYS_MKNOD, [6]uint64{0x7ffd0000, unix.S_IFREG | 0o644}, allow},
		{"mknodat socket", auditArchX86_64, unix.SYS_MKNODAT, [6]uint64{3, 0x7ffd0000, unix.S_IFSOCK | 0o600}, allow},
		{"sendto", auditArchX86_64, unix.SYS_SENDTO, [6]uint64{3, 0x7ffd0000, 10, unix.MSG_NOSIGNAL}, trace},
		{"sendto MSG_FASTOPEN", auditArchX86_64, unix.SYS_SENDTO, [6]uint64{3, 0x7ffd0000, 10, msgFastopen}, nosup},
		{"sendmsg", auditArchX86_64, unix.SYS_SENDMSG, [6]uint64{3, 0x7ffd0000, unix.MSG_DONTWAIT}, trace},
		{"sendmsg MSG_FASTOPEN", auditArchX86_64, unix.SYS_SENDMSG, [6]uint64{3, 0x7ffd0000, msgFastopen}, nosup},
		{"sendmmsg MSG_FASTOPEN", auditArchX86_64, unix.SYS_SENDMMSG, [6]uint64{3, 0x7ffd0000, 2, msgFastopen}, nosup},
		{"sendmmsg", auditArchX86_64, unix.SYS_SENDMMSG, [6]uint64{3, 0x7ffd0000, 2, 0}, allow},
		{"setsockopt TCP_FASTOPEN_CONNECT", auditArchX86_64, unix.SYS_SETSOCKOPT, [6]uint64{3, unix.IPPROTO_TCP, tcpFastopenConnect}, nosup},
		{"futex wait without timeout", auditArchX86_64, unix.SYS_FUTEX, [6]uint64{1, futexWait | 128}, allow},
		{"futex wait with timeout", auditArchX86_64, unix.SYS_FUTEX, [6]uint64{1, futexWait | 128, 0, 0x7ffd0000}, trace},
		{"futex wait, timeout above 4 GiB", auditArchX86_64, unix.SYS_FUTEX, [6]uint64{1, futexWaitBitset, 0, 0x7ffd_0000_0000}, trace},
		{"futex wake (op 1)", auditArchX86_64, unix.SYS_FUTEX, [6]uint64{1, 1, 0, 0x7ffd0000}, allow},
		{"futex lock_pi with timeout", auditArchX86_64, unix.SYS_FUTEX, [6]uint64{1, futexLockPI | 128, 0, 0x7ffd0000}, trace},
		{"futex lock_pi without timeout", auditArchX86_64, unix.SYS_FUTEX, [6]uint64{1, futexLockPI}, allow},
		{"futex lock_pi2 with timeout", auditArchX86_64, unix.SYS_FUTEX, [6]uint64{1, futexLockPI2 | 256, 0, 0x7ffd0000}, trace},
		{"futex wait_requeue_pi with timeout", auditArchX86_64, unix.SYS_FUTEX, [6]uint64{1, futexWaitReqPI, 0, 0x7ffd0000, 2}, trace},
		{"futex wait_requeue_pi without timeout", auditArchX86_64, unix.SYS_FUTEX, [6]uint64{1, futexWaitReqPI, 0, 0, 2}, allow},
		{"futex unlock_pi (op 7)", auditArchX86_64, unix.SYS_FUTEX, [6]uint64{1, 7, 0, 0x7ffd0000}, allow},
		{"futex trylock_pi (op 8)", auditArchX86_64, unix.SYS_FUTEX, [6]uint64{1, 8, 0, 0x7ffd0000}, allow},
		{"futex cmp_requeue_pi (op 12), val2 in the timeout slot", auditArchX86_64, unix.SYS_FUTEX, [6]uint64{1, 12, 1, 1, 2}, allow},
		{"fcntl F_GETFL", auditArchX86_64, unix.SYS_FCNTL, [6]uint64{3, unix.F_GETFL}, allow},
		{"fcntl F_SETFL", auditArchX86_64, unix.SYS_FCNTL, [6]uint64{3, unix.F_SETFL, unix.O_NONBLOCK}, trace},
		{"ioctl TCGETS", auditArchX86_64, unix.SYS_IOCTL, [6]uint64{0, unix.TCGETS}, allow},
		{"ioctl FIONBIO", auditArchX86_64, unix.SYS_IOCTL, [6]uint64{3, fionbio}, trace},
		{"setsockopt SO_REUSEADDR", auditArchX86_64, unix.SYS_SETSOCKOPT, [6]uint64{3, unix.SOL_SOCKET, unix.SO_REUSEADDR}, allow},
		{"setsockopt TCP_NODELAY", auditArchX86_64, unix.SYS_SETSOCKOPT, [6]uint64{3, unix.IPPROTO_TCP, unix.TCP_NODELAY}, allow},
		{"setsockopt SO_RCVTIMEO_OLD", auditArchX86_64, unix.SYS_SETSOCKOPT, [6]uint64{3, unix.SOL_SOCKET, unix.SO_RCVTIMEO}, trace},
		{"setsockopt SO_RCVTIMEO_NEW", auditArchX86_64, unix.SYS_SETSOCKOPT, [6]uint64{3, unix.SOL_SOCKET, soRcvtimeoNew}, trace},
		{"setsockopt SO_RCVLOWAT", auditArchX86_64, unix.SYS_SETSOCKOPT, [6]uint64{3, unix.SOL_SOCKET, unix.SO_RCVLOWAT}, trace},
		{"IPPROTO_TCP option numbered like SO_RCVTIMEO", auditArchX86_64, unix.SYS_SETSOCKOPT, [6]uint64{3, unix.IPPROTO_TCP, unix.SO_RCVTIMEO}, allow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := evalFilter(t, prog, tc.arch, tc.nr, tc.args); got != tc.want {
				t.Errorf("%#x, want %#x", got, tc.want)
			}
		})
	}
}

// TestFilterLongGateList: a gate table far longer than today's still
// assembles (no jump beyond classic BPF's reach) and keeps the order of
// the rules: another ABI first, then the denied and refused calls, then
// the gate.
func TestFilterLongGateList(t *testing.T) {
	var gated []uint32
	for nr := uint32(0); nr < 400; nr++ {
		gated = append(gated, nr)
	}
	prog := Filter(gated)
	for _, tc := range []struct {
		arch, nr uint32
		want     uint32
	}{
		{auditArchX86_64, unix.SYS_CONNECT, unix.SECCOMP_RET_TRACE},
		{auditArchX86_64, unix.SYS_KEYCTL, unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
		{auditArchX86_64, unix.SYS_SETNS, unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
		{auditArchX86_64, x32Bit | unix.SYS_CONNECT, unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
		{0x40000003, 102, unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
		{auditArchX86_64, 1000, unix.SECCOMP_RET_ALLOW},
	} {
		if got := evalFilter(t, prog, tc.arch, tc.nr, [6]uint64{}); got != tc.want {
			t.Errorf("arch %#x nr %#x: %#x, want %#x", tc.arch, tc.nr, got, tc.want)
		}
	}
}

// TestFilterDisk: a node with storage books also stops at the extra calls
// and at opens that create or truncate; other opens, and every node
// without books, run as before.
func TestFilterDisk(t *testing.T) {
	const (
		allow = unix.SECCOMP_RET_ALLOW
		trace = unix.SECCOMP_RET_TRACE
	)
	gated := []uint32{unix.SYS_READ, unix.SYS_WRITE, unix.SYS_FSYNC}
	disk := FilterDisk(gated, []uint32{unix.SYS_PWRITE64, unix.SYS_UNLINKAT})
	plain := Filter(gated)
	for _, tc := range []struct {
		name        string
		nr          uint32
		args        [6]uint64
		disk, plain uint32
	}{
		{"write", unix.SYS_WRITE, [6]uint64{}, trace, trace},
		{"fsync", unix.SYS_FSYNC, [6]uint64{}, trace, trace},
		{"pwrite64", unix.SYS_PWRITE64, [6]uint64{}, trace, allow},
		{"unlinkat", unix.SYS_UNLINKAT, [6]uint64{}, trace, allow},
		{"openat read", unix.SYS_OPENAT, [6]uint64{3, 0, unix.O_RDONLY}, allow, allow},
		{"openat append", unix.SYS_OPENAT, [6]uint64{3, 0, unix.O_WRONLY | unix.O_APPEND}, allow, allow},
		{"openat creat", unix.SYS_OPENAT, [6]uint64{3, 0, unix.O_WRONLY | unix.O_CREAT}, trace, allow},
		{"openat trunc", unix.SYS_OPENAT, [6]uint64{3, 0, unix.O_RDWR | unix.O_TRUNC}, trace, allow},
		{"open creat", unix.SYS_OPEN, [6]uint64{0, unix.O_CREAT | unix.O_EXCL}, trace, allow},
		{"open read", unix.SYS_OPEN, [6]uint64{0, unix.O_RDONLY, unix.O_CREAT}, allow, allow},
		{"getpid", unix.SYS_GETPID, [6]uint64{}, allow, allow},
		{"setns still denied", unix.SYS_SETNS, [6]uint64{}, unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM), unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
	} {
		if got := evalFilter(t, disk, auditArchX86_64, tc.nr, tc.args); got != tc.disk {
			t.Errorf("%s: disk filter answers %#x, want %#x", tc.name, got, tc.disk)
		}
		if got := evalFilter(t, plain, auditArchX86_64, tc.nr, tc.args); got != tc.plain {
			t.Errorf("%s: filter answers %#x, want %#x", tc.name, got, tc.plain)
		}
	}
}
