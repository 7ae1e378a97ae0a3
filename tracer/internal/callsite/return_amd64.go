package callsite

import "github.com/lockstep-dev/lockstep/tracer/internal/ptrace"

// looksLikeReturn reports whether the bytes before addr end in a call
// instruction, so that stale words on the stack are not taken for frames.
func looksLikeReturn(pid int, addr uint64) bool {
	var b [7]byte
	if ptrace.ReadMem(pid, addr-7, b[:]) != nil {
		return false
	}
	if b[2] == 0xe8 { // call rel32
		return true
	}
	// call r/m64: ff /2 with modrm forms of length 2, 3, 6 and 7.
	for _, l := range []int{2, 3, 6, 7} {
		i := 7 - l
		if b[i] == 0xff && (b[i+1]>>3)&7 == 2 {
			return true
		}
		if i > 0 && b[i-1] >= 0x40 && b[i-1] <= 0x4f && b[i] == 0xff && (b[i+1]>>3)&7 == 2 {
			return true
		}
	}
	return false
}
