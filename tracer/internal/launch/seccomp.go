package launch

import "golang.org/x/sys/unix"

// deniedSyscalls fail with EPERM in a node, whatever its capabilities: the
// ways out of its sandbox (entering another namespace, such as the host's
// network, through /proc/1/ns; remounting the read-only host writable;
// loading kernel code; rebooting the host).
var deniedSyscalls = []uint32{
	unix.SYS_SETNS,
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_MOUNT_SETATTR,
	unix.SYS_OPEN_TREE, unix.SYS_MOVE_MOUNT, unix.SYS_FSOPEN, unix.SYS_FSCONFIG, unix.SYS_FSMOUNT, unix.SYS_FSPICK,
	unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
	unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD, unix.SYS_REBOOT, unix.SYS_SWAPON, unix.SYS_SWAPOFF,
}

const (
	futexCmdMask    = 0x7f // FUTEX_CMD_MASK without PRIVATE and CLOCK_REALTIME
	futexWait       = 0
	futexWaitBitset = 9
	auditArchX86_64 = 0xc000003e
)

// seccomp_data offsets.
const (
	offNr   = 0
	offArch = 4
	offArg1 = 16 + 8*1
	offArg3 = 16 + 8*3
)

func stmt(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }
func jump(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
}

// Filter builds the classic-BPF seccomp program a node runs under:
// RET_ERRNO(EPERM) for the denied syscalls, RET_TRACE for gated and for
// futex waits that carry a timeout (the JVM's and Go's timed waits),
// RET_ALLOW for everything else.
func Filter(gated []uint32) []unix.SockFilter {
	const (
		ldw  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret  = unix.BPF_RET | unix.BPF_K
		andk = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
	)
	n := len(gated)
	var p []unix.SockFilter
	// Other architectures (i386 via int 0x80) are not gated.
	p = append(p, stmt(ldw, offArch))
	p = append(p, jump(jeq, auditArchX86_64, 1, 0))
	p = append(p, stmt(ret, unix.SECCOMP_RET_ALLOW))
	p = append(p, stmt(ldw, offNr))
	// Layout: the denied list, the gated list, the futex check, then the
	// ALLOW, TRACE and DENY returns.
	futexLen := 9
	d := len(deniedSyscalls)
	for i, nr := range deniedSyscalls {
		// Distance from the instruction after this one to the DENY return.
		toDeny := (d - 1 - i) + n + futexLen + 2
		p = append(p, jump(jeq, nr, uint8(toDeny), 0))
	}
	for i, nr := range gated {
		// Distance from the instruction after this one to the TRACE return.
		toTrace := (n - 1 - i) + futexLen + 1
		p = append(p, jump(jeq, nr, uint8(toTrace), 0))
	}
	// futex: op & mask in {WAIT, WAIT_BITSET} and timeout pointer != 0.
	p = append(p,
		jump(jeq, unix.SYS_FUTEX, 0, 8),
		stmt(ldw, offArg1),
		stmt(andk, futexCmdMask),
		jump(jeq, futexWait, 1, 0),
		jump(jeq, futexWaitBitset, 0, 4),
		stmt(ldw, offArg3),
		jump(jeq, 0, 0, 3), // low half non-zero → trace
		stmt(ldw, offArg3+4),
		jump(jeq, 0, 0, 1), // high half non-zero → trace
	)
	p = append(p, stmt(ret, unix.SECCOMP_RET_ALLOW))
	p = append(p, stmt(ret, unix.SECCOMP_RET_TRACE))
	p = append(p, stmt(ret, unix.SECCOMP_RET_ERRNO|uint32(unix.EPERM)))
	return p
}
