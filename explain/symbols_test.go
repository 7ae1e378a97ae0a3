package explain

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/arch/x86/x86asm"

	"github.com/lockstep-dev/lockstep/internal/symname"
	"github.com/lockstep-dev/lockstep/internal/testutil"
	"github.com/lockstep-dev/lockstep/sched"
)

// progSrc is a test program's source in testdata/progs.
func progSrc(parts ...string) string {
	return testutil.RepoPath(append([]string{"testdata", "progs"}, parts...)...)
}

// build compiles a test program with a compiler found on PATH into dir,
// or skips the test saying which compiler is missing.
func build(t *testing.T, dir, out, compiler string, args ...string) string {
	t.Helper()
	cc, err := exec.LookPath(compiler)
	if err != nil {
		if home, herr := os.UserHomeDir(); herr == nil && compiler == "rustc" {
			cc, err = exec.LookPath(filepath.Join(home, ".cargo", "bin", "rustc"))
		}
		if err != nil {
			t.Skipf("%s not found: this language's call sites are not tested here", compiler)
		}
	}
	p := filepath.Join(dir, out)
	cmd := exec.Command(cc, append(args, "-o", p)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", compiler, args, err, b)
	}
	return p
}

// retSite is the site ("module+0xoff", as the tracer writes it) of the
// return address after the first call instruction in the function whose
// symbol match accepts: the address a thread stopped in that call has on
// its stack.
func retSite(t *testing.T, path string, match func(sym string) bool) string {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, _ := f.Symbols()
	if len(syms) == 0 {
		syms, _ = f.DynamicSymbols()
	}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 || !match(s.Name) {
			continue
		}
		code := make([]byte, s.Size)
		text := f.Section(".text")
		if _, err := text.ReadAt(code, int64(s.Value-text.Addr)); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(code); {
			in, err := x86asm.Decode(code[i:], 64)
			if err != nil {
				break
			}
			i += in.Len
			if in.Op == x86asm.CALL {
				return fmt.Sprintf("%s+%#x", filepath.Base(path), fileOffset(t, f, s.Value+uint64(i)))
			}
		}
		t.Fatalf("no call in %s", s.Name)
	}
	t.Fatalf("no function symbol in %s matches", path)
	return ""
}

// goRetSite is retSite for a function of this test binary, which go test
// links without a symbol table: found by its address in this process.
func goRetSite(t *testing.T, exe string, fn any) string {
	t.Helper()
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC {
		t.Skip("a position-independent test binary: its addresses are not the file's")
	}
	p := reflect.ValueOf(fn).UnsafePointer()
	start := uint64(uintptr(p))
	code := unsafe.Slice((*byte)(p), 256)
	for i := 0; i < len(code); {
		in, err := x86asm.Decode(code[i:], 64)
		if err != nil {
			break
		}
		i += in.Len
		if in.Op == x86asm.CALL {
			return fmt.Sprintf("%s+%#x", filepath.Base(exe), fileOffset(t, f, start+uint64(i)))
		}
	}
	t.Fatal("no call in the Go function")
	return ""
}

func fileOffset(t *testing.T, f *elf.File, vaddr uint64) uint64 {
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && vaddr >= p.Vaddr && vaddr < p.Vaddr+p.Filesz {
			return vaddr - p.Vaddr + p.Off
		}
	}
	t.Fatalf("%#x is in no loaded segment", vaddr)
	return 0
}

func named(name string) func(string) bool {
	return func(s string) bool { return s == name }
}

func demangledIs(path string) func(string) bool {
	return func(s string) bool { return symname.Demangle(s) == path }
}

//go:noinline
func goCallee(n int) string { return strings.Repeat("x", n) }

// TestSymbolizeLanguages: call sites of real binaries, built here, come
// back as the names, files and lines their source spelled, in each
// language; a program without DWARF gets its function and one hint.
func TestSymbolizeLanguages(t *testing.T) {
	dir := t.TempDir()
	lockd := progSrc("c", "callsite_lockd.c")
	lines := progSrc("rust", "src", "callsite_lines.rs")
	for _, tc := range []struct {
		name string
		// bin builds the binary; site and caller name the op's frames.
		bin      func(t *testing.T) string
		site     func(t *testing.T, bin string) sched.Op
		wantFunc string
		wantFile string // "" when the binary has no lines
		wantHint bool
	}{{
		name: "c with -g",
		bin:  func(t *testing.T) string { return build(t, dir, "lockd_g", "gcc", "-O2", "-g", lockd, "-pthread") },
		site: func(t *testing.T, bin string) sched.Op {
			// GCC's specialized copy: read_request.constprop.0.
			return sched.Op{Site: retSite(t, bin, func(s string) bool { return strings.HasPrefix(s, "read_request") })}
		},
		wantFunc: "read_request", wantFile: "callsite_lockd.c",
	}, {
		name: "c without -g",
		bin:  func(t *testing.T) string { return build(t, dir, "lockd", "gcc", "-O2", lockd, "-pthread") },
		site: func(t *testing.T, bin string) sched.Op {
			return sched.Op{Site: retSite(t, bin, named("serve"))}
		},
		wantFunc: "serve", wantHint: true,
	}, {
		name: "c stripped",
		bin:  func(t *testing.T) string { return build(t, dir, "lockd_s", "gcc", "-O2", "-s", lockd, "-pthread") },
		site: func(t *testing.T, bin string) sched.Op {
			return sched.Op{Site: filepath.Base(bin) + "+0x1235"}
		},
		wantFunc: "", wantHint: true,
	}, {
		name: "c++ with -g",
		bin: func(t *testing.T) string {
			return build(t, dir, "cpp_g", "g++", "-O2", "-g", filepath.Join("testdata", "callsite.cpp"))
		},
		site: func(t *testing.T, bin string) sched.Op {
			return sched.Op{Site: retSite(t, bin, demangledIs("lockd::Server::handle"))}
		},
		wantFunc: "lockd::Server::handle", wantFile: "callsite.cpp",
	}, {
		name: "c++ without -g",
		bin: func(t *testing.T) string {
			return build(t, dir, "cpp", "g++", "-O2", filepath.Join("testdata", "callsite.cpp"))
		},
		site: func(t *testing.T, bin string) sched.Op {
			return sched.Op{Site: retSite(t, bin, demangledIs("lockd::Server::handle"))}
		},
		wantFunc: "lockd::Server::handle", wantHint: true,
	}, {
		name: "rust legacy mangling, a std frame and its caller",
		bin:  func(t *testing.T) string { return build(t, dir, "lines", "rustc", "-g", "--edition", "2021", lines) },
		site: func(t *testing.T, bin string) sched.Op {
			return sched.Op{
				Site:   retSite(t, bin, demangledIs("<std::io::Lines<B> as core::iter::traits::iterator::Iterator>::next")),
				Caller: retSite(t, bin, demangledIs("callsite_lines::serve_commands")),
			}
		},
		wantFunc: "callsite_lines::serve_commands", wantFile: "callsite_lines.rs",
	}, {
		name: "rust v0 mangling without -g",
		bin: func(t *testing.T) string {
			return build(t, dir, "lines_v0", "rustc", "-C", "symbol-mangling-version=v0", "--edition", "2021", lines)
		},
		site: func(t *testing.T, bin string) sched.Op {
			return sched.Op{Site: retSite(t, bin, func(s string) bool {
				return strings.HasPrefix(s, "_R") && symname.Demangle(s) == "callsite_lines::serve_commands"
			})}
		},
		wantFunc: "callsite_lines::serve_commands", wantHint: true,
	}, {
		name: "jvm native method in libnio.so",
		bin:  func(t *testing.T) string { return jdkLib(t, "libnio.so") },
		site: func(t *testing.T, bin string) sched.Op {
			return sched.Op{Site: retSite(t, bin, named("Java_sun_nio_ch_SocketDispatcher_read0"))}
		},
		wantFunc: "sun.nio.ch.SocketDispatcher.read0",
	}, {
		name: "go",
		bin: func(t *testing.T) string {
			exe, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			return exe
		},
		site: func(t *testing.T, bin string) sched.Op {
			return sched.Op{Site: goRetSite(t, bin, goCallee)}
		},
		wantFunc: "github.com/lockstep-dev/lockstep/explain.goCallee", wantFile: "symbols_test.go",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			bin := tc.bin(t)
			op := tc.site(t, bin)
			s := &symbolizer{paths: map[string]string{filepath.Base(bin): bin}, mods: map[string]*module{}, hinted: map[string]bool{}}
			if strings.Contains(bin, ".so") {
				s.paths = map[string]string{}
				s.libDirs = []string{filepath.Dir(bin)}
			}
			fn, file, line := s.where(&op)
			t.Logf("%s → %s", op.Site, Event{Site: op.Site, Caller: op.Caller, Func: fn, File: file, Line: line}.Where())
			if fn != tc.wantFunc || file != tc.wantFile || (file != "") != (line > 0) {
				t.Errorf("where = %s %s:%d, want %s in %q", fn, file, line, tc.wantFunc, tc.wantFile)
			}
			s.where(&op) // a second op of the same binary: no second hint
			if got := len(s.hints); got != map[bool]int{true: 1}[tc.wantHint] {
				t.Errorf("hints %q, want %v", s.hints, tc.wantHint)
			}
		})
	}
}

// jdkLib is the path of one of the JDK's shared objects, found the way
// the symbolizer finds them, or skips.
func jdkLib(t *testing.T, name string) string {
	t.Helper()
	for _, d := range libraryDirs(nil) {
		p := filepath.Join(d, name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skipf("no JDK with %s found (JAVA_HOME, java on PATH): the JVM's call sites are not tested here", name)
	return ""
}

// TestSymbolizeDemo: the demo's call sites come back as the C source's
// function and line, from its DWARF.
func TestSymbolizeDemo(t *testing.T) {
	bin := testutil.RepoPath("testdata", "bin", "demo", "demoproc")
	s := &symbolizer{paths: map[string]string{"demoproc": bin}, mods: map[string]*module{}, hinted: map[string]bool{}}
	if s.module("demoproc") == nil {
		t.Skipf("%s not built (make testdata)", bin)
	}
	site := retSite(t, bin, named("send_line"))
	fn, file, line := s.lookup(site + ";demoproc+0x10") // two frames: the first
	if fn != "send_line" || file != "demoproc.c" || line == 0 {
		t.Errorf("lookup = %s %s:%d, want send_line in demoproc.c", fn, file, line)
	}
	if fn, _, _ := s.lookup("nosuchmodule+0x10"); fn != "" {
		t.Errorf("an unknown module gave %q", fn)
	}
}

// lookupText is a site's frame as Where words it without a caller.
func (s *symbolizer) lookupText(site string) string {
	fn, file, line := s.lookup(site)
	return Event{Site: site, Func: fn, File: file, Line: line}.Where()
}

// TestWhereJava: a JVM op's caller, read from the JVM by the tracer,
// names the program's Java method: with its line while interpreted,
// without it when compiled, and itself when its class names no file.
func TestWhereJava(t *testing.T) {
	s := newSymbolizer(nil)
	for _, tc := range []struct{ caller, want string }{
		{"Jvm2.orders(Jvm2.java:110)", "Jvm2.java:110 (Jvm2.orders)"},
		{"Jvm2$Pipe.call(Jvm2.java)", "Jvm2.java (Jvm2$Pipe.call)"},
		{"p.Gen.run(Unknown Source)", "p.Gen.run(Unknown Source)"},
	} {
		op := &sched.Op{Site: "libnio.so+0x72eb", Caller: tc.caller}
		fn, file, line := s.where(op)
		if got := (Event{Site: op.Site, Caller: op.Caller, Func: fn, File: file, Line: line}).Where(); got != tc.want {
			t.Errorf("caller %s: where %q, want %q", tc.caller, got, tc.want)
		}
	}
}
