package callsite

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/internal/symname"
	"github.com/lockstep-dev/lockstep/internal/testutil"
)

func TestLooksLikeReturn(t *testing.T) {
	for _, tc := range []struct {
		name string
		code []byte // the bytes before the return address
		want bool
	}{
		{"call rel32", []byte{0x90, 0x90, 0xe8, 1, 2, 3, 4}, true},
		{"call *%rax", []byte{0x90, 0x90, 0x90, 0x90, 0x90, 0xff, 0xd0}, true},
		{"call *0x8(%rax)", []byte{0x90, 0x90, 0x90, 0x90, 0xff, 0x50, 0x08}, true},
		{"call *%r11 (REX)", []byte{0x90, 0x90, 0x90, 0x90, 0x41, 0xff, 0xd3}, true},
		{"jmp rel32", []byte{0x90, 0x90, 0xe9, 1, 2, 3, 4}, false},
		{"nops", []byte{0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			buf := append([]byte(nil), tc.code...)
			buf = append(buf, 0xcc)
			addr := uint64(uintptr(unsafe.Pointer(&buf[len(tc.code)])))
			if got := looksLikeReturn(os.Getpid(), addr); got != tc.want {
				t.Fatalf("looksLikeReturn = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	c := NewCache()
	for _, tc := range []struct {
		name string
		m    mapping
		want frameClass
	}{
		{"libc", mapping{path: "/usr/lib/x86_64-linux-gnu/libc.so.6"}, frameSkip},
		{"loader", mapping{path: "/usr/lib64/ld-linux-x86-64.so.2"}, frameSkip},
		{"vdso", mapping{path: "[vdso]"}, frameSkip},
		{"jit", mapping{path: ""}, frameUnknown},
		{"libjvm", mapping{path: "/usr/lib/jvm/x/lib/server/libjvm.so"}, frameSkip},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.classify(&tc.m, 0); got != tc.want {
				t.Fatalf("classify = %d, want %d", got, tc.want)
			}
		})
	}
}

//go:noinline
func callsSomething() string { return strings.Repeat("x", 3) }

// ownReturn is a return address into this binary's own code: just past
// the first call rel32 in callsSomething.
func ownReturn(t *testing.T) uint64 {
	t.Helper()
	code := unsafe.Slice((*byte)(unsafe.Pointer(reflect.ValueOf(callsSomething).Pointer())), 64)
	for i := range len(code) - 5 {
		if code[i] == 0xe8 {
			return uint64(uintptr(unsafe.Pointer(&code[i]))) + 5
		}
	}
	t.Skip("no call rel32 in callsSomething")
	return 0
}

func TestSiteOfOwnStack(t *testing.T) {
	ret := ownReturn(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// Stale words first, as on a real stack.
	stack := fakeStack(t)
	stack[1], stack[2], stack[5] = 42, 0x1000, ret
	c := NewCache()
	p := &Process{Pid: os.Getpid()}
	got := c.Site(p, uint64(uintptr(unsafe.Pointer(&stack[0]))), 0, 1)
	m := p.maps.find(ret)
	want := fmt.Sprintf("%s+%#x", filepath.Base(exe), ret-m.start+m.offset)
	if got != want {
		t.Fatalf("Site = %q, want %q", got, want)
	}
	zeros := fakeStack(t)
	if got := c.Site(p, uint64(uintptr(unsafe.Pointer(&zeros[0]))), 0, 1); got != "?" {
		t.Fatalf("a stack of zeros gives %q, want ?", got)
	}
}

// TestHeapWordsNeedNoReload: a stack word that points into a heap known
// from the maps is no code and costs no reload; one into data mapped since
// the maps were read makes the unwinder read them once, and after that it
// is known as data too. The site found past either stays the same.
func TestHeapWordsNeedNoReload(t *testing.T) {
	ret := ownReturn(t)
	heap := new([64]byte)
	word := uint64(uintptr(unsafe.Pointer(heap)))
	stack := fakeStack(t)
	stack[0], stack[3] = word, ret
	c := NewCache()
	p := &Process{Pid: os.Getpid()}
	first := c.Site(p, uint64(uintptr(unsafe.Pointer(&stack[0]))), 0, 1)
	maps := p.maps
	if !maps.isData(word) {
		t.Fatalf("the heap word %#x is not in the data the maps hold", word)
	}
	if again := c.Site(p, uint64(uintptr(unsafe.Pointer(&stack[0]))), 0, 1); again != first {
		t.Fatalf("site %q, then %q", first, again)
	}
	if p.maps != maps {
		t.Error("the maps were read again for a word in a known heap")
	}
	// Data mapped after the maps were read.
	fresh := fakeStack(t)
	stack[0] = uint64(uintptr(unsafe.Pointer(&fresh[1]))) // the byte before it is readable
	if again := c.Site(p, uint64(uintptr(unsafe.Pointer(&stack[0]))), 0, 1); again != first {
		t.Fatalf("site %q, then %q past a word of new data", first, again)
	}
	if p.maps == maps || !p.maps.isData(stack[0]) {
		t.Fatal("the maps were not read again for a word of data mapped since")
	}
	maps = p.maps
	c.Site(p, uint64(uintptr(unsafe.Pointer(&stack[0]))), 0, 1)
	if p.maps != maps {
		t.Error("the maps were read again for the same word of data")
	}
	p.Forget()
	if p.notCode != nil || p.maps != nil {
		t.Error("an exec kept what the old image's maps or stack held")
	}
}

// TestUnmappedWordsNeedNoReload: a stack word at which nothing can be
// read (a time in nanoseconds, as Go's stacks hold) is passed over without
// re-reading the maps, and the site found past it stays the same.
func TestUnmappedWordsNeedNoReload(t *testing.T) {
	ret := ownReturn(t)
	stack := fakeStack(t)
	stack[3] = ret
	// A page that cannot be read: what a scan sees of an address where
	// nothing is mapped. (An unmapped hole would be the runtime's to
	// reuse before the scan.)
	page, err := unix.Mmap(-1, 0, 4096, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(page) })
	hole := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(page)))) + 0x800
	c := NewCache()
	p := &Process{Pid: os.Getpid()}
	want := c.Site(p, uint64(uintptr(unsafe.Pointer(&stack[0]))), 0, 1)
	maps := p.maps
	stack[0] = hole
	if got := c.Site(p, uint64(uintptr(unsafe.Pointer(&stack[0]))), 0, 1); got != want {
		t.Fatalf("site %q with the unreadable word %#x first, %q without", got, hole, want)
	}
	if p.maps != maps {
		t.Errorf("the maps were read again for the unreadable word %#x", hole)
	}
}

func TestGoClass(t *testing.T) {
	g := &goBinary{main: "example.com/app", deps: []string{"go.etcd.io/raft/v3", "gopkg.in/yaml.v3"}}
	bare := &goBinary{}
	for _, tc := range []struct {
		g    *goBinary
		name string
		want frameClass
	}{
		{g, "main.(*producer).request", frameUser},
		{g, "example.com/app/server.(*Server).apply", frameUser},
		{g, "example.com/application.F", frameSkip}, // another module's prefix
		{g, "go.etcd.io/raft/v3.(*raft).Step", frameDep},
		{g, "gopkg.in/yaml.v3.(*decoder).unmarshal", frameDep},
		{g, "fmt.(*fmt).fmtS", frameSkip},
		{g, "internal/poll.(*FD).Write", frameSkip},
		{g, "vendor/golang.org/x/net/http2/hpack.(*Encoder).WriteField", frameSkip},
		{g, "runtime.goexit", frameSkip},
		{g, "crosscall1", frameSkip},
		{g, "my_c_helper", frameUser},
		{g, "type:.eq.main.T", frameSkip},
		{bare, "github.com/x/y.F", frameUser},
		{bare, "net/http.(*conn).serve", frameSkip},
		{bare, "main.main", frameUser},
	} {
		if got := tc.g.class(tc.name); got != tc.want {
			t.Errorf("class(%q) = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// retAfterCall is a return address just past the first call rel32 in fn's
// code.
func retAfterCall(t *testing.T, fn any) uint64 {
	t.Helper()
	code := unsafe.Slice((*byte)(unsafe.Pointer(reflect.ValueOf(fn).Pointer())), 256)
	for i := range len(code) - 5 {
		if code[i] == 0xe8 {
			return uint64(uintptr(unsafe.Pointer(&code[i]))) + 5
		}
	}
	t.Skip("no call rel32 found")
	return 0
}

// TestGoStackFramePointers: on a Go stack (this test binary's), a stale
// return address into fmt's formatting code lies nearer the stack pointer
// than the frames of the current call; the site is the program's function
// that the frame-pointer chain leads to, past the standard library's
// frame on it.
func TestGoStackFramePointers(t *testing.T) {
	stale := retAfterCall(t, fmt.Sprintf)
	std := retAfterCall(t, strings.Repeat)
	own := retAfterCall(t, callsSomething)
	stack := fakeStack(t)
	base := uint64(uintptr(unsafe.Pointer(&stack[0])))
	// stack[0..3]: the leaf's frame, with a stale fmt return address;
	// stack[4]: saved rbp → stack[8], stack[5]: return into strings;
	// stack[8]: end of chain, stack[9]: return into this package.
	stack[1] = stale
	stack[4], stack[5] = base+8*8, std
	stack[8], stack[9] = 0, own
	c := NewCache()
	p := &Process{Pid: os.Getpid()}
	got := c.Site(p, base, base+4*8, 1)
	if !c.isGo(p) {
		t.Fatal("the test binary is not taken for a Go binary")
	}
	m := p.maps.find(own)
	exe, _ := os.Executable()
	want := fmt.Sprintf("%s+%#x", filepath.Base(exe), own-m.start+m.offset)
	if got != want {
		ms := p.maps.find(stale)
		t.Fatalf("Site = %q, want %q (this package's; the stale fmt frame is +%#x)", got, want, stale-ms.start+ms.offset)
	}
}

// TestGoRuntimeOnlyStack: on a Go stack whose frame-pointer chain holds
// only the standard library's code (the netpoller's wait, sysmon's sleep),
// the site is the return address at the stack's top when there is one (a
// frameless syscall stub's return into its caller), then the chain's
// frames, not a stale return address into the program left in a frame's
// unused slots, which a scan would take; with frames > 1 the next frames
// join it. A chain whose frame holds no return address (a C function's
// rbp used for data) names nothing of its own: the scan's answer stands.
func TestGoRuntimeOnlyStack(t *testing.T) {
	own := retAfterCall(t, callsSomething)
	std := retAfterCall(t, strings.Repeat)
	std2 := retAfterCall(t, fmt.Sprintf)
	c := NewCache()
	p := &Process{Pid: os.Getpid()}
	name := func(addr uint64) string {
		c.Site(p, addr, 0, 1) // reads the maps
		m := p.maps.find(addr)
		exe, _ := os.Executable()
		return fmt.Sprintf("%s+%#x", filepath.Base(exe), addr-m.start+m.offset)
	}
	for _, tc := range []struct {
		name   string
		top    uint64   // the word at sp
		chain  []uint64 // return addresses along the chain
		frames int
		want   []uint64
	}{
		{"one runtime frame", 0, []uint64{std}, 1, []uint64{std}},
		{"two, one asked", 0, []uint64{std, std2}, 1, []uint64{std}},
		{"two, two asked", 0, []uint64{std, std2}, 2, []uint64{std, std2}},
		{"a stub's return at the top", std2, []uint64{std}, 1, []uint64{std2}},
		{"the top, then the chain", std2, []uint64{std}, 2, []uint64{std2, std}},
		{"the program's own further up", std2, []uint64{std, own}, 1, []uint64{own}},
		// A word that is code but follows no call: no frame of the
		// chain's; the scan finds the stale own address.
		{"no return address", 0, []uint64{std + 1}, 1, []uint64{own}},
		{"no return address, one at the top", std2, []uint64{std + 1}, 1, []uint64{own}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stack := fakeStack(t)
			base := uint64(uintptr(unsafe.Pointer(&stack[0])))
			stack[0], stack[1] = tc.top, own // own: stale
			// Frames at words 4, 8, 12…: saved rbp, then the return address.
			for i, ret := range tc.chain {
				at := 4 + 4*i
				stack[at], stack[at+1] = base+uint64(at+4)*8, ret
				if i == len(tc.chain)-1 {
					stack[at] = 0
				}
			}
			got := c.Site(p, base, base+4*8, tc.frames)
			var want []string
			for _, a := range tc.want {
				want = append(want, name(a))
			}
			if got != strings.Join(want, ";") {
				t.Fatalf("Site = %q, want %q", got, strings.Join(want, ";"))
			}
		})
	}
}

// TestRustKind: in a Rust debug build, std's Lines::next, compiled into
// the program, is a library frame and serve_commands the program's own;
// a C program's frames are neither.
func TestRustKind(t *testing.T) {
	rust := testutil.RepoPath("testdata", "bin", "rust", "callsite_lines")
	c := testutil.RepoPath("testdata", "bin", "c", "callsite_lockd")
	testutil.RequireBinary(t, rust)
	testutil.RequireBinary(t, c)
	for _, tc := range []struct {
		bin, sym string
		want     rustKind
	}{
		{rust, "callsite_lines::serve_commands", rustOwn},
		{rust, "<std::io::Lines<B> as core::iter::traits::iterator::Iterator>::next", rustLib},
		{rust, "<std::io::buffered::bufreader::BufReader<R> as std::io::BufRead>::fill_buf", rustLib},
		{c, "serve", rustNone},
	} {
		off := symbolOffset(t, tc.bin, tc.sym)
		cache := NewCache()
		maps := &memMaps{exec: []mapping{{path: tc.bin}}}
		if got := cache.rustKindOf(frameID{tc.bin, off + 1}, maps); got != tc.want {
			t.Errorf("%s: rustKindOf = %d, want %d", tc.sym, got, tc.want)
		}
	}
}

// symbolOffset is the file offset of the function whose demangled name is
// sym.
func symbolOffset(t *testing.T, bin, sym string) uint64 {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, _ := f.Symbols()
	for _, s := range syms {
		if symname.Demangle(s.Name) != sym || s.Value == 0 {
			continue
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_LOAD && s.Value >= p.Vaddr && s.Value < p.Vaddr+p.Filesz {
				return s.Value - p.Vaddr + p.Off
			}
		}
	}
	t.Fatalf("no %s in %s", sym, bin)
	return 0
}

// fakeStack is stackScanWords words for Site to read as a thread's stack,
// in a page of their own: a slice on the test goroutine's stack would
// move when that stack grows (loading the maps and symbols does), and the
// address handed to Site would then point at memory the goroutine left.
func fakeStack(t *testing.T) []uint64 {
	t.Helper()
	mem, err := unix.Mmap(-1, 0, os.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(mem) })
	return unsafe.Slice((*uint64)(unsafe.Pointer(&mem[0])), stackScanWords)
}
