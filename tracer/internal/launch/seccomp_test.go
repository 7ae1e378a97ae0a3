package launch

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

// evalFilter runs a classic-BPF seccomp program over one seccomp_data,
// with the instructions Filter emits (loads of 32-bit words, AND with a
// constant, jumps on equality, returns).
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
	)
	prog := Filter([]uint32{unix.SYS_READ, unix.SYS_WRITE, unix.SYS_CONNECT})
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
		{"another architecture", 0x40000003, unix.SYS_CONNECT, [6]uint64{}, allow},
		{"futex wait without timeout", auditArchX86_64, unix.SYS_FUTEX, [6]uint64{1, futexWait | 128}, allow},
		{"futex wait with timeout", auditArchX86_64, unix.SYS_FUTEX, [6]uint64{1, futexWait | 128, 0, 0x7ffd0000}, trace},
		{"futex wait, timeout above 4 GiB", auditArchX86_64, unix.SYS_FUTEX, [6]uint64{1, futexWaitBitset, 0, 0x7ffd_0000_0000}, trace},
		{"futex wake (op 1)", auditArchX86_64, unix.SYS_FUTEX, [6]uint64{1, 1, 0, 0x7ffd0000}, allow},
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
