package ptrace

import "testing"

func TestEmulateTSC(t *testing.T) {
	const tsc = 0x1_2345_6789
	for _, tc := range []struct {
		name string
		code [3]byte
		ok   bool
		size uint64
	}{
		{"rdtsc", [3]byte{0x0f, 0x31, 0x90}, true, 2},
		{"rdtscp", [3]byte{0x0f, 0x01, 0xf9}, true, 3},
		{"syscall", [3]byte{0x0f, 0x05, 0x90}, false, 0},
		{"ud2", [3]byte{0x0f, 0x0b, 0x00}, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r Regs
			r.r.Rip = 0x1000
			if got := r.EmulateTSC(tc.code, tsc); got != tc.ok {
				t.Fatalf("EmulateTSC = %v, want %v", got, tc.ok)
			}
			if !tc.ok {
				if r.PC() != 0x1000 {
					t.Fatalf("pc moved to %#x", r.PC())
				}
				return
			}
			if r.PC() != 0x1000+tc.size || r.r.Rax != tsc&0xffffffff || r.r.Rdx != tsc>>32 {
				t.Fatalf("pc %#x rax %#x rdx %#x", r.PC(), r.r.Rax, r.r.Rdx)
			}
		})
	}
}
