package launch

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// deniedSyscalls fail with EPERM in a node, whatever its capabilities: the
// ways out of its sandbox (entering another namespace, such as the host's
// network, through /proc/1/ns; remounting the read-only host writable;
// opening a host file by its handle through a writable mount, which
// DAC_READ_SEARCH allows; loading kernel code; rebooting the host).
var deniedSyscalls = []uint32{
	unix.SYS_SETNS, unix.SYS_OPEN_BY_HANDLE_AT,
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_MOUNT_SETATTR,
	unix.SYS_OPEN_TREE, unix.SYS_MOVE_MOUNT, unix.SYS_FSOPEN, unix.SYS_FSCONFIG, unix.SYS_FSMOUNT, unix.SYS_FSPICK,
	unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
	unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD, unix.SYS_REBOOT, unix.SYS_SWAPON, unix.SYS_SWAPOFF,
}

// A refusal is a syscall that fails in a node with an errno of its own,
// without a stop: what a kernel without the feature, or a container
// runtime's default profile, answers, so programs take the path they take
// there.
type refusal struct {
	nr    uint32
	errno unix.Errno
}

// refusedSyscalls are the syscalls a node cannot make beside the denied
// ones, each for a reason of lockstep's:
//   - the kernel's keyrings are not namespaced: a node would read and fill
//     root's (EPERM, as Docker's profile answers);
//   - scheduling policy and affinity: every traced thread runs SCHED_RR on
//     the trial's CPU, and a thread that leaves it (SCHED_OTHER, both CPUs)
//     runs in an order the kernel, not the schedule, decides (EPERM, as
//     without CAP_SYS_NICE);
//   - clone3: its flags lie in a struct a filter cannot read, so it cannot
//     be told from a clone making a new user or network namespace; ENOSYS
//     makes the C library fall back to clone, as under Docker;
//   - io_uring and Linux AIO move bytes, and wait with timeouts, in the
//     kernel beyond the gate (ENOSYS, as a kernel built without them: the
//     C library, libuv, Java and databases fall back to plain syscalls);
//   - memfd_secret: its memory is out of process_vm_readv's reach, so
//     lockstep cannot capture a send from it (ENOSYS, as a kernel without
//     secretmem answers; Docker's default profile allows it).
var refusedSyscalls = []refusal{
	{unix.SYS_ADD_KEY, unix.EPERM}, {unix.SYS_REQUEST_KEY, unix.EPERM}, {unix.SYS_KEYCTL, unix.EPERM},
	{unix.SYS_SCHED_SETSCHEDULER, unix.EPERM}, {unix.SYS_SCHED_SETPARAM, unix.EPERM},
	{unix.SYS_SCHED_SETATTR, unix.EPERM}, {unix.SYS_SCHED_SETAFFINITY, unix.EPERM},
	{unix.SYS_CLONE3, unix.ENOSYS},
	{unix.SYS_IO_URING_SETUP, unix.ENOSYS}, {unix.SYS_IO_URING_ENTER, unix.ENOSYS}, {unix.SYS_IO_URING_REGISTER, unix.ENOSYS},
	{unix.SYS_IO_SETUP, unix.ENOSYS}, {unix.SYS_IO_SUBMIT, unix.ENOSYS}, {unix.SYS_IO_GETEVENTS, unix.ENOSYS},
	{unix.SYS_IO_PGETEVENTS, unix.ENOSYS}, {unix.SYS_IO_CANCEL, unix.ENOSYS}, {unix.SYS_IO_DESTROY, unix.ENOSYS},
	{unix.SYS_MEMFD_SECRET, unix.ENOSYS},
}

// newNamespaces are the clone and unshare flags a node is refused (EPERM):
// a user namespace gives its creator every capability over namespaces of
// its own, a network namespace a network lockstep does not see.
const newNamespaces = unix.CLONE_NEWUSER | unix.CLONE_NEWNET

const (
	futexCmdMask    = 0x7f // FUTEX_CMD_MASK without PRIVATE and CLOCK_REALTIME
	futexWait       = 0
	futexLockPI     = 6
	futexWaitBitset = 9
	futexWaitReqPI  = 11 // FUTEX_WAIT_REQUEUE_PI
	futexLockPI2    = 13
	auditArchX86_64 = 0xc000003e
	// x32Bit marks a syscall of the x32 ABI (__X32_SYSCALL_BIT), which
	// the kernel takes on the x86-64 entry with the x86-64 audit arch.
	x32Bit = 0x40000000
	// Creating a FIFO: mknod's mode (mknodat's third argument).
	sIFMT  = 0o170000
	sIFIFO = 0o010000
	// tcpFastopenConnect is TCP_FASTOPEN_CONNECT; msgFastopen MSG_FASTOPEN.
	tcpFastopenConnect = 30
	msgFastopen        = 0x20000000
)

// seccomp_data offsets (the low 32 bits of an argument on x86-64).
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16
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
	at         int
	jt, jf, ja string
}

func (p *prog) stmt(code uint16, k uint32) {
	p.ins = append(p.ins, unix.SockFilter{Code: code, K: k})
}

// jeq compares the accumulator with k: on equal to jt, else to jf; an
// empty label is the next instruction.
func (p *prog) jeq(k uint32, jt, jf string) { p.jump(unix.BPF_JEQ, k, jt, jf) }

// jset tests the accumulator's bits k: any set to jt, else to jf.
func (p *prog) jset(k uint32, jt, jf string) { p.jump(unix.BPF_JSET, k, jt, jf) }

func (p *prog) jump(op uint16, k uint32, jt, jf string) {
	p.fixups = append(p.fixups, fixup{at: len(p.ins), jt: jt, jf: jf})
	p.ins = append(p.ins, unix.SockFilter{Code: unix.BPF_JMP | op | unix.BPF_K, K: k})
}

// retIf returns action when the accumulator equals k, and goes on
// otherwise: a jump over one return, so a long list never needs a jump
// beyond the 255 instructions classic BPF can reach.
func (p *prog) retIf(k, action uint32) {
	p.ins = append(p.ins,
		unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: k, Jt: 0, Jf: 1},
		unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: action})
}

// retIfSet returns action when any of the accumulator's bits k is set.
func (p *prog) retIfSet(k, action uint32) {
	p.ins = append(p.ins,
		unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, K: k, Jt: 0, Jf: 1},
		unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: action})
}

// ja jumps to l unconditionally.
func (p *prog) ja(l string) {
	p.fixups = append(p.fixups, fixup{at: len(p.ins), ja: l})
	p.ins = append(p.ins, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JA})
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
		if f.ja != "" {
			p.ins[f.at].K = uint32(off(f.at, f.ja))
			continue
		}
		p.ins[f.at].Jt, p.ins[f.at].Jf = off(f.at, f.jt), off(f.at, f.jf)
	}
	return p.ins
}

func errno(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }

// Filter builds the classic-BPF seccomp program a node runs under:
//   - ENOSYS for every syscall not of the x86-64 ABI (i386 through int
//     0x80 or sysenter, x32), as a kernel built without those ABIs
//     answers: the rules below name x86-64 numbers only, and through
//     another ABI a node read and wrote sockets ungated and remounted the
//     host;
//   - EPERM for the denied syscalls, the refused ones' errno, EPERM for a
//     clone or unshare making a user or network namespace and for mknod of
//     a FIFO (a FIFO in the trial's directory would join two nodes),
//     EOPNOTSUPP for TCP Fast Open, a connect hidden in a send (what a
//     kernel with Fast Open disabled answers), and EAFNOSUPPORT for a
//     vsock socket (what a kernel without vsock answers);
//   - RET_TRACE for the gated syscalls, for a clone making no such
//     namespace, for futex waits that carry a
//     timeout (the JVM's and Go's timed waits, and PI locks'), and for the calls that
//     change a socket's blocking mode, receive timeout or low-water mark
//     (fcntl F_SETFL, ioctl FIONBIO, setsockopt SO_RCVTIMEO and
//     SO_RCVLOWAT);
//   - RET_ALLOW for everything else.
func Filter(gated []uint32) []unix.SockFilter { return filter(gated, nil, false) }

// FilterDisk is Filter for a node whose files lockstep keeps books of (a
// spec with storage faults): it also stops the extra syscalls, and open and
// openat when they create or truncate (O_CREAT, O_TRUNC in their flags).
func FilterDisk(gated, extra []uint32) []unix.SockFilter { return filter(gated, extra, true) }

// The instructions the filter's rules are made of.
const (
	ldw  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS // load a word of seccomp_data
	ret  = unix.BPF_RET | unix.BPF_K               // return an action
	andk = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
)

// filter assembles Filter's rules in the order a syscall meets them; each
// rule ends with the syscall's number in the accumulator for the next.
func filter(gated, extra []uint32, opens bool) []unix.SockFilter {
	p := &prog{labels: map[string]int{}}
	abiRule(p)
	futexRule(p)
	fastOpenRule(p)
	listRules(p, gated, extra)
	if opens {
		creatingOpenRule(p)
	}
	argumentRules(p)
	returns(p)
	return p.end()
}

// abiRule answers ENOSYS to a syscall not of the x86-64 ABI.
func abiRule(p *prog) {
	p.stmt(ldw, offArch)
	p.jeq(auditArchX86_64, "native", "")
	p.stmt(ret, errno(unix.ENOSYS))
	p.label("native")
	p.stmt(ldw, offNr)
	p.retIfSet(x32Bit, errno(unix.ENOSYS))
}

// futexRule comes first: futex is the most frequent syscall of threaded
// runtimes whose answer reads an argument (the kernel cannot cache it),
// so it should not walk the lists below. It stops for op & mask in
// {WAIT, WAIT_BITSET, LOCK_PI, LOCK_PI2, WAIT_REQUEUE_PI} (every command
// that waits with a timeout) with a timeout pointer != 0.
func futexRule(p *prog) {
	p.jeq(unix.SYS_FUTEX, "", "notfutex")
	p.stmt(ldw, offArg1)
	p.stmt(andk, futexCmdMask)
	p.jeq(futexWait, "futextimeout", "")
	p.jeq(futexWaitBitset, "futextimeout", "")
	p.jeq(futexLockPI, "futextimeout", "")
	p.jeq(futexLockPI2, "futextimeout", "")
	p.jeq(futexWaitReqPI, "futextimeout", "futexallow")
	p.label("futextimeout")
	p.stmt(ldw, offArg3)
	p.jeq(0, "", "futextrace") // low half non-zero
	p.stmt(ldw, offArg3+4)
	p.jeq(0, "futexallow", "futextrace") // high half non-zero
	p.label("futexallow")
	p.stmt(ret, unix.SECCOMP_RET_ALLOW)
	p.label("futextrace")
	p.stmt(ret, unix.SECCOMP_RET_TRACE)
	p.label("notfutex")
}

// fastOpenRule answers EOPNOTSUPP to a send with MSG_FASTOPEN. sendto's
// and sendmmsg's flags are their fourth argument, sendmsg's its third; a
// send without it goes on to the gate.
func fastOpenRule(p *prog) {
	for _, s := range []struct{ nr, flags uint32 }{{unix.SYS_SENDTO, offArg3}, {unix.SYS_SENDMSG, offArg2}, {unix.SYS_SENDMMSG, offArg3}} {
		p.jeq(s.nr, "", "not"+strconv.Itoa(int(s.nr)))
		p.stmt(ldw, s.flags)
		p.retIfSet(msgFastopen, errno(unix.EOPNOTSUPP))
		p.stmt(ldw, offNr)
		p.label("not" + strconv.Itoa(int(s.nr)))
	}
}

// listRules answers the syscalls listed by number. The denied and refused
// calls come before the gated ones, so that a gate added for one of them
// cannot let it through.
func listRules(p *prog, gated, extra []uint32) {
	for _, nr := range deniedSyscalls {
		p.retIf(nr, errno(unix.EPERM))
	}
	for _, r := range refusedSyscalls {
		p.retIf(r.nr, errno(r.errno))
	}
	for _, nr := range gated {
		p.retIf(nr, unix.SECCOMP_RET_TRACE)
	}
	for _, nr := range extra {
		p.retIf(nr, unix.SECCOMP_RET_TRACE)
	}
}

// creatingOpenRule stops open and openat when they create or truncate,
// and allows them otherwise. open's flags are its second argument,
// openat's its third.
func creatingOpenRule(p *prog) {
	for _, s := range []struct{ nr, flags uint32 }{{unix.SYS_OPEN, offArg1}, {unix.SYS_OPENAT, offArg2}} {
		p.jeq(s.nr, "", "notopen"+strconv.Itoa(int(s.nr)))
		p.stmt(ldw, s.flags)
		p.retIfSet(unix.O_CREAT|unix.O_TRUNC, unix.SECCOMP_RET_TRACE)
		p.stmt(ret, unix.SECCOMP_RET_ALLOW)
		p.label("notopen" + strconv.Itoa(int(s.nr)))
		p.stmt(ldw, offNr)
	}
}

// argumentRules is the last rule: the syscalls whose answer depends on an
// argument jump to its check, which ends at one of returns' labels;
// every other syscall is allowed.
func argumentRules(p *prog) {
	p.jeq(unix.SYS_FCNTL, "fcntl", "")
	p.jeq(unix.SYS_IOCTL, "ioctl", "")
	p.jeq(unix.SYS_SETSOCKOPT, "setsockopt", "")
	p.jeq(unix.SYS_CLONE, "clone", "")
	p.jeq(unix.SYS_UNSHARE, "unshare", "")
	p.jeq(unix.SYS_SOCKET, "socket", "")
	p.jeq(unix.SYS_MKNOD, "mknod", "")
	p.jeq(unix.SYS_MKNODAT, "mknodat", "allow")
	p.label("fcntl")
	p.stmt(ldw, offArg1)
	p.jeq(unix.F_SETFL, "trace", "allow")
	p.label("ioctl")
	p.stmt(ldw, offArg1)
	p.jeq(fionbio, "trace", "allow")
	p.label("setsockopt")
	p.stmt(ldw, offArg1)
	p.jeq(unix.IPPROTO_TCP, "tcpopt", "")
	p.jeq(unix.SOL_SOCKET, "", "allow")
	p.stmt(ldw, offArg2)
	p.jeq(soRcvlowat, "trace", "")
	p.jeq(soRcvtimeoOld, "trace", "")
	p.jeq(soRcvtimeoNew, "trace", "allow")
	p.label("tcpopt")
	p.stmt(ldw, offArg2)
	p.jeq(tcpFastopenConnect, "eopnotsupp", "allow")
	// clone and unshare take their flags first. A clone lockstep lets
	// through stops, to be run when nothing else runs (the tracer's
	// onCreate).
	p.label("clone")
	p.stmt(ldw, offArg0)
	p.jset(newNamespaces, "eperm", "trace")
	p.label("unshare")
	p.stmt(ldw, offArg0)
	p.jset(newNamespaces, "eperm", "allow")
	// socket's family is its first argument: vsock talks to the host (or
	// its hypervisor) past every network namespace.
	p.label("socket")
	p.stmt(ldw, offArg0)
	p.jeq(unix.AF_VSOCK, "eafnosupport", "allow")
	// mknod's mode is its second argument, mknodat's its third.
	p.label("mknod")
	p.stmt(ldw, offArg1)
	p.ja("mode")
	p.label("mknodat")
	p.stmt(ldw, offArg2)
	p.label("mode")
	p.stmt(andk, sIFMT)
	p.jeq(sIFIFO, "eperm", "allow")
}

// returns ends the program with the actions argumentRules jumps to.
func returns(p *prog) {
	p.label("allow")
	p.stmt(ret, unix.SECCOMP_RET_ALLOW)
	p.label("trace")
	p.stmt(ret, unix.SECCOMP_RET_TRACE)
	p.label("eperm")
	p.stmt(ret, errno(unix.EPERM))
	p.label("enosys")
	p.stmt(ret, errno(unix.ENOSYS))
	p.label("eopnotsupp")
	p.stmt(ret, errno(unix.EOPNOTSUPP))
	p.label("eafnosupport")
	p.stmt(ret, errno(unix.EAFNOSUPPORT))
}
