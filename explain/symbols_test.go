package explain

import (
	"strconv"
	"testing"

	"github.com/lockstep-dev/lockstep/internal/testutil"
)

func TestDemangleRust(t *testing.T) {
	for in, want := range map[string]string{
		"_ZN2ms4Conn4send17hc451521f9935467eE":    "ms::Conn::send",
		"_ZN5gproc4Conn4recv17h64d7210f8c6ee8a3E": "gproc::Conn::recv",
		"main":                  "main",
		"main.(*server).handle": "main.(*server).handle",
		"_ZN3foo3barE":          "foo::bar",
		"_ZN99tooshortE":        "_ZN99tooshortE",
		"_ZNSt6vectorIiSaIiEE9push_backERKi_not_rust": "_ZNSt6vectorIiSaIiEE9push_backERKi_not_rust",
	} {
		if got := demangleRust(in); got != want {
			t.Errorf("demangleRust(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSymbolizeDemo: the demo's call sites come back as the C source's
// function and line, from its DWARF.
func TestSymbolizeDemo(t *testing.T) {
	bin := testutil.RepoPath("testdata", "bin", "demo", "demoproc")
	s := &symbolizer{paths: map[string]string{"demoproc": bin}, mods: map[string]*module{}}
	m := s.module("demoproc")
	if m == nil {
		t.Skipf("%s not built (make testdata)", bin)
	}
	// Find send_line's first instruction's file offset and ask for the
	// line of an address inside it.
	var off uint64
	for _, sym := range m.syms {
		if sym.Name == "send_line" {
			for _, p := range m.f.Progs {
				if sym.Value >= p.Vaddr && sym.Value < p.Vaddr+p.Filesz {
					off = sym.Value - p.Vaddr + p.Off
				}
			}
		}
	}
	if off == 0 {
		t.Fatal("no send_line in demoproc")
	}
	fn, file, line := s.lookup("demoproc+0x" + strconv.FormatUint(off+4, 16))
	if fn != "send_line" || file != "demoproc.c" || line == 0 {
		t.Errorf("lookup = %s %s:%d, want send_line in demoproc.c", fn, file, line)
	}
	if fn, _, _ := s.lookup("nosuchmodule+0x10"); fn != "" {
		t.Errorf("an unknown module gave %q", fn)
	}
}
