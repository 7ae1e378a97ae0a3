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

// seccomp_data offsets (the low 32 bits of an argument on x86-64).
const (
	offNr   = 0
	offArch = 4
	offArg1 = 16 + 8*1
	offArg2 = 16 + 8*2
	offArg3 = 16 + 8*3
)

// Socket settings that lockstep caches per socket (see the tracer's
// sockOpts): a change stops so that the tracer forgets what it read.
const (
	fionbio       = 0x5421 // FIONBIO
	soRcvlowat    = 18     // SO_RCVLOWAT
	soRcvtimeoOld = 20     // SO_RCVTIMEO_OLD
	soRcvtimeoNew = 66     // SO_RCVTIMEO_NEW
)

// prog assembles a classic-BPF program whose jumps name labels; end
// resolves them (every jump here goes forward).
type prog struct {
	ins    []unix.SockFilter
	labels map[string]int
	fixups []fixup
}

type fixup struct {
	at     int
	jt, jf string
}

func (p *prog) stmt(code uint16, k uint32) {
	p.ins = append(p.ins, unix.SockFilter{Code: code, K: k})
}

// jeq compares the accumulator with k: on equal to jt, else to jf; an
// empty label is the next instruction.
func (p *prog) jeq(k uint32, jt, jf string) {
	p.fixups = append(p.fixups, fixup{at: len(p.ins), jt: jt, jf: jf})
	p.ins = append(p.ins, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: k})
}

func (p *prog) label(name string) { p.labels[name] = len(p.ins) }

func (p *prog) end() []unix.SockFilter {
	off := func(from int, l string) uint8 {
		if l == "" {
			return 0
		}
		d := p.labels[l] - from - 1
		if d < 0 || d > 255 {
			panic("seccomp: jump to " + l + " out of range")
		}
		return uint8(d)
	}
	for _, f := range p.fixups {
		p.ins[f.at].Jt, p.ins[f.at].Jf = off(f.at, f.jt), off(f.at, f.jf)
	}
	return p.ins
}

// Filter builds the classic-BPF seccomp program a node runs under:
// RET_ERRNO(EPERM) for the denied syscalls; RET_TRACE for the gated ones,
// for futex waits that carry a timeout (the JVM's and Go's timed waits),
// and for the calls that change a socket's blocking mode, receive timeout
// or low-water mark (fcntl F_SETFL, ioctl FIONBIO, setsockopt SO_RCVTIMEO
// and SO_RCVLOWAT);
// RET_ALLOW for everything else.
func Filter(gated []uint32) []unix.SockFilter {
	const (
		ldw  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		ret  = unix.BPF_RET | unix.BPF_K
		andk = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
	)
	p := &prog{labels: map[string]int{}}
	// Other architectures (i386 via int 0x80) are not gated.
	p.stmt(ldw, offArch)
	p.jeq(auditArchX86_64, "", "allow")
	p.stmt(ldw, offNr)
	for _, nr := range deniedSyscalls {
		p.jeq(nr, "deny", "")
	}
	for _, nr := range gated {
		p.jeq(nr, "trace", "")
	}
	p.jeq(unix.SYS_FUTEX, "futex", "")
	p.jeq(unix.SYS_FCNTL, "fcntl", "")
	p.jeq(unix.SYS_IOCTL, "ioctl", "")
	p.jeq(unix.SYS_SETSOCKOPT, "setsockopt", "allow")
	// futex: op & mask in {WAIT, WAIT_BITSET} and timeout pointer != 0.
	p.label("futex")
	p.stmt(ldw, offArg1)
	p.stmt(andk, futexCmdMask)
	p.jeq(futexWait, "timeout", "")
	p.jeq(futexWaitBitset, "", "allow")
	p.label("timeout")
	p.stmt(ldw, offArg3)
	p.jeq(0, "", "trace") // low half non-zero
	p.stmt(ldw, offArg3+4)
	p.jeq(0, "allow", "trace") // high half non-zero
	p.label("fcntl")
	p.stmt(ldw, offArg1)
	p.jeq(unix.F_SETFL, "trace", "allow")
	p.label("ioctl")
	p.stmt(ldw, offArg1)
	p.jeq(fionbio, "trace", "allow")
	p.label("setsockopt")
	p.stmt(ldw, offArg1)
	p.jeq(unix.SOL_SOCKET, "", "allow")
	p.stmt(ldw, offArg2)
	p.jeq(soRcvlowat, "trace", "")
	p.jeq(soRcvtimeoOld, "trace", "")
	p.jeq(soRcvtimeoNew, "trace", "allow")
	p.label("allow")
	p.stmt(ret, unix.SECCOMP_RET_ALLOW)
	p.label("trace")
	p.stmt(ret, unix.SECCOMP_RET_TRACE)
	p.label("deny")
	p.stmt(ret, unix.SECCOMP_RET_ERRNO|uint32(unix.EPERM))
	return p.end()
}
