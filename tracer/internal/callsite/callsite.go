package callsite

import (
	"bufio"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/lockstep-dev/lockstep/internal/symname"
	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
)

// mapping is one executable region of a tracee's address space.
type mapping struct {
	start, end uint64
	offset     uint64 // file offset of start
	path       string
	// root is the process's root directory as lockstep reaches it
	// (/proc/PID/root): path is in the process's filesystem, an image's
	// for a node run from one.
	root string
}

// memMaps is the executable part of /proc/PID/maps, re-read when an address
// falls outside every known region (after dlopen, JIT, exec), and the
// readable regions that are not executable (data: heaps and stacks), which
// hold most of a stack's words that are no return address.
type memMaps struct {
	exec []mapping
	data []span
}

// span is an address range [start, end).
type span struct{ start, end uint64 }

func loadMaps(pid int) (*memMaps, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := &memMaps{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// 55d0c-55d0f r-xp 00002000 fe:01 1234  /usr/bin/x
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		se := strings.SplitN(fields[0], "-", 2)
		start, _ := strconv.ParseUint(se[0], 16, 64)
		end, _ := strconv.ParseUint(se[1], 16, 64)
		if !strings.Contains(fields[1], "x") {
			// A reservation (---p) may become code; readable data is
			// taken to stay data until the maps are read again.
			if strings.HasPrefix(fields[1], "r") {
				m.data = append(m.data, span{start, end})
			}
			continue
		}
		off, _ := strconv.ParseUint(fields[2], 16, 64)
		path := ""
		if len(fields) >= 6 {
			path = fields[5]
		}
		m.exec = append(m.exec, mapping{start: start, end: end, offset: off, path: path, root: "/proc/" + strconv.Itoa(pid) + "/root"})
	}
	sort.Slice(m.exec, func(i, j int) bool { return m.exec[i].start < m.exec[j].start })
	sort.Slice(m.data, func(i, j int) bool { return m.data[i].start < m.data[j].start })
	return m, sc.Err()
}

// isData reports whether addr lies in a readable region that was not
// executable when the maps were read.
func (m *memMaps) isData(addr uint64) bool {
	i := sort.Search(len(m.data), func(i int) bool { return m.data[i].end > addr })
	return i < len(m.data) && m.data[i].start <= addr
}

func (m *memMaps) find(addr uint64) *mapping {
	i := sort.Search(len(m.exec), func(i int) bool { return m.exec[i].end > addr })
	if i < len(m.exec) && m.exec[i].start <= addr {
		return &m.exec[i]
	}
	return nil
}

// frameClass tells whether a return address belongs to code lockstep should
// look through (C library, loader, runtime syscall wrappers) or to the
// program's own code.
type frameClass uint8

const (
	frameUnknown frameClass = iota
	frameSkip
	frameUser
	// frameDep is a Go binary's third-party code (a module it depends
	// on): the site when no frame of the program's own module is on the
	// stack (a gRPC writer goroutine), before any standard library frame.
	frameDep
)

// Cache memoizes per-module decisions; with ASLR off the same addresses
// recur in every trial, so one is shared by all tracees of a tracer.
type Cache struct {
	syms map[string]*symtab // module path → symbols (nil: none)
	// shared keeps the modules' symbols across caches (a job's trials);
	// nil: this cache's own.
	shared *Symbols
	// Per frame (module and offset; no string is built to look one up):
	// whether it follows a call, what it is, and its name.
	isReturn map[frameID]bool
	classes  map[frameID]frameClass
	names    map[frameID]string
	rust     map[frameID]rustKind
	// stack is the window on the stack of the stop being named (site).
	stack stackWindow
	// jvmLibs are the layouts of the libjvm.so files met, by path.
	jvmLibs map[string]jvmLibEntry
}

// frameID is a return address as a module and a file offset.
type frameID struct {
	path string
	off  uint64
}

// name is the frame's site, "module+0xoff".
func (c *Cache) name(id frameID) string {
	s, ok := c.names[id]
	if !ok {
		s = fmt.Sprintf("%s+%#x", filepath.Base(id.path), id.off)
		c.names[id] = s
	}
	return s
}

// NewCache returns an empty cache.
func NewCache() *Cache { return NewSharedCache(nil) }

// NewSharedCache is NewCache whose modules' symbols are kept in, and
// taken from, shared (nil: its own).
func NewSharedCache(shared *Symbols) *Cache {
	return &Cache{syms: map[string]*symtab{}, shared: shared, classes: map[frameID]frameClass{}, isReturn: map[frameID]bool{}, names: map[frameID]string{}, rust: map[frameID]rustKind{}, jvmLibs: map[string]jvmLibEntry{}}
}

type symtab struct {
	addrs []uint64 // sorted symbol start addresses (file virtual addresses)
	names []string
	// bias converts a file offset into the ELF's virtual address space.
	loads []elf.ProgHeader
	// gobin is set for a Go binary: its functions are told apart by
	// package (see goClass).
	gobin *goBinary
	// rust is set when a symbol is mangled by rustc: its frames may be
	// a library crate's generics, and the program's own caller is looked
	// for (see Cache.SiteAndCaller).
	rust bool
}

// skipModules are shared objects whose frames are never the call site.
var skipModules = []string{
	"libc.so", "libc-", "ld-linux", "ld-musl", "libpthread", "[vdso]",
	"libjvm.so", "libjava.so", "libnet.so", "libnio.so", "libjli.so",
	"libgcc_s", "libstdc++",
}

// skipSymbolPrefixes are language-runtime functions inside a program's own
// binary (Go and Rust link their runtimes statically) that wrap syscalls.
var skipSymbolPrefixes = []string{
	"runtime.", "syscall.", "internal/", "net.", "os.", "io.", "bufio.", "time.",
	"crypto/", "vendor/",
	"_ZN3std", "_ZN4core", "_ZN5alloc", "_RNv", "std::", "core::", "<std",
}

func moduleSkipped(path string) bool {
	base := filepath.Base(path)
	for _, s := range skipModules {
		if strings.HasPrefix(base, s) || path == s {
			return true
		}
	}
	return false
}

func (c *Cache) symbols(path, root string) *symtab {
	if st, ok := c.syms[path]; ok {
		return st
	}
	id, shared := c.shared.id(path, root)
	if shared {
		if st, ok := c.shared.get(id); ok {
			c.syms[path] = st
			return st
		}
	}
	st := readSymbols(path, root)
	c.syms[path] = st
	if shared {
		c.shared.put(id, st)
	}
	return st
}

// readSymbols reads the function symbols of module path through root
// (nil: none to be read).
func readSymbols(path, root string) *symtab {
	var st *symtab
	if f, err := elf.Open(root + path); err == nil {
		st = &symtab{}
		for _, p := range f.Progs {
			if p.Type == elf.PT_LOAD {
				st.loads = append(st.loads, p.ProgHeader)
			}
		}
		syms, _ := f.Symbols()
		if len(syms) == 0 {
			syms, _ = f.DynamicSymbols()
		}
		type sym struct {
			a uint64
			n string
		}
		var ss []sym
		for _, s := range syms {
			if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 {
				ss = append(ss, sym{s.Value, s.Name})
			}
		}
		sort.Slice(ss, func(i, j int) bool { return ss[i].a < ss[j].a })
		st.gobin = readGoBinary(f, root+path)
		for _, s := range ss {
			st.addrs = append(st.addrs, s.a)
			st.names = append(st.names, s.n)
			st.rust = st.rust || symname.IsRust(s.n)
		}
		f.Close()
	}
	return st
}

// symbolAt names the function containing the file offset off of module path,
// read through root (the first process to map a path names it for all:
// nodes from different images that hold one path with different files
// share the first one's symbols).
func (c *Cache) symbolAt(path, root string, off uint64) string {
	st := c.symbols(path, root)
	if st == nil {
		return ""
	}
	vaddr := off
	for _, p := range st.loads {
		if off >= p.Off && off < p.Off+p.Filesz {
			vaddr = off - p.Off + p.Vaddr
			break
		}
	}
	if st.gobin != nil {
		if name := st.gobin.funcName(vaddr); name != "" {
			return name
		}
	}
	if len(st.addrs) == 0 {
		return ""
	}
	i := sort.Search(len(st.addrs), func(i int) bool { return st.addrs[i] > vaddr })
	if i == 0 {
		return ""
	}
	return st.names[i-1]
}

// classify decides whether the return address at module+off is the
// program's own code.
func (c *Cache) classify(m *mapping, off uint64) frameClass {
	if m.path == "" || strings.HasPrefix(m.path, "[") {
		if m.path == "[vdso]" {
			return frameSkip
		}
		// Anonymous executable memory (a JIT): its addresses do not repeat.
		return frameUnknown
	}
	if moduleSkipped(m.path) {
		return frameSkip
	}
	key := frameID{m.path, off}
	if cl, ok := c.classes[key]; ok {
		return cl
	}
	cl := frameUser
	if st := c.symbols(m.path, m.root); st != nil && st.gobin != nil {
		cl = st.gobin.class(c.symbolAt(m.path, m.root, off))
	} else if name := c.symbolAt(m.path, m.root, off); name != "" {
		for _, p := range skipSymbolPrefixes {
			if strings.HasPrefix(name, p) {
				cl = frameSkip
				break
			}
		}
	}
	c.classes[key] = cl
	return cl
}

// stackScanWords bounds how far up the stack lockstep looks for the call
// site; glibc wrappers and Go's syscall path sit within a few frames.
const stackScanWords = 48

// Process is what the unwinder keeps of one traced process: its id and
// its executable mappings, read on first use.
type Process struct {
	Pid  int
	maps *memMaps
	// notCode holds stack words that lay outside every executable
	// mapping right after a reload: a JVM's stacks are full of heap
	// pointers, and re-reading its long /proc/PID/maps for each was most
	// of the cost of its call sites. (A heap address that later becomes a
	// module's code, after an unmap and a dlopen, would be missed.)
	notCode map[uint64]struct{}
	// frames are the return addresses met on its stacks, by address,
	// while its mappings stay the same (a reload of the maps forgets
	// them): a walk looks each word up once, by a number, rather than
	// finding its mapping and hashing the module's path in three of the
	// Cache's maps.
	frames map[uint64]*frame
	// goexe is 1 when the process runs a Go binary, -1 when not, 0 not
	// yet known: a Go stack is walked along its frame pointers first.
	goexe int8
	// rustexe is, the same way, whether one of its modules is a Rust
	// binary: only then is a caller looked for past a library frame.
	rustexe int8
	// jvm is what its Java frames were found to be, when it runs a
	// HotSpot JVM (jvmKnown: looked for).
	jvm      *jvmProcess
	jvmKnown bool
}

// maxNotCode bounds Process.notCode and Process.frames; past it the set
// starts again.
const maxNotCode = 1 << 14

// Forget drops the mappings (the process exec'd).
func (p *Process) Forget() {
	p.maps, p.notCode, p.frames, p.goexe, p.rustexe = nil, nil, nil, 0, 0
	p.jvm, p.jvmKnown = nil, false
}

// frame is a word of a process's stack that lies in one of its executable
// mappings: its module and offset, and what the Cache says of that code,
// each asked on first use.
type frame struct {
	m   *mapping
	id  frameID
	ret int8 // 1: the bytes before it end in a call; -1: they do not; 0: not asked
	// classed says class is known.
	classed bool
	class   frameClass
	name    string // "" until asked
}

// frameAt is the frame at address w of p's stack, nil when no executable
// mapping holds w. With reloaded non-nil, an address outside every
// mapping may re-read the maps, once per walk (mappingOf); without, the
// maps are taken as they are.
func (c *Cache) frameAt(p *Process, w uint64, reloaded *bool) *frame {
	if f, ok := p.frames[w]; ok {
		return f
	}
	var m *mapping
	if reloaded != nil {
		m = p.mappingOf(w, reloaded)
	} else {
		m = p.maps.find(w)
	}
	if m == nil {
		return nil
	}
	if p.frames == nil || len(p.frames) >= maxNotCode {
		p.frames = map[uint64]*frame{}
	}
	f := &frame{m: m, id: frameID{m.path, w - m.start + m.offset}}
	p.frames[w] = f
	return f
}

// returns reports whether the bytes before the frame's address end in a
// call instruction (looksLikeReturn, remembered per frame by the Cache).
func (c *Cache) returns(p *Process, f *frame, w uint64) bool {
	if f.ret == 0 {
		ok, seen := c.isReturn[f.id]
		if !seen {
			ok = looksLikeReturn(p.Pid, w)
			c.isReturn[f.id] = ok
		}
		f.ret = -1
		if ok {
			f.ret = 1
		}
	}
	return f.ret > 0
}

// classOf is classify's answer for the frame.
func (c *Cache) classOf(f *frame) frameClass {
	if !f.classed {
		f.class, f.classed = c.classify(f.m, f.id.off), true
	}
	return f.class
}

// nameOf is the frame's site, "module+0xoff".
func (c *Cache) nameOf(f *frame) string {
	if f.name == "" {
		f.name = c.name(f.id)
	}
	return f.name
}

// isGo says whether one of p's modules is a Go binary.
func (c *Cache) isGo(p *Process) bool {
	if p.goexe == 0 {
		p.goexe = -1
		for i := range p.maps.exec {
			m := &p.maps.exec[i]
			if m.path == "" || strings.HasPrefix(m.path, "[") || moduleSkipped(m.path) {
				continue
			}
			if st := c.symbols(m.path, m.root); st != nil && st.gobin != nil {
				p.goexe = 1
				break
			}
		}
	}
	return p.goexe > 0
}

// Site returns the first return address on the stack of a thread of p,
// stopped with stack pointer sp and frame pointer fp, that lies outside
// libc, the loader and the language runtime, as module+0xoffset. frames > 1
// joins that many user frames with ';' (pid+stack:K).
func (c *Cache) Site(p *Process, sp, fp uint64, frames int) string {
	s, _ := c.site(p, sp, fp, frames)
	return s
}

// site is Site, and the frame the site starts with (zero when it is not
// known: "?", or a Go stack's frame-pointer walk).
func (c *Cache) site(p *Process, sp, fp uint64, frames int) (string, frameID) {
	if p.maps == nil {
		m, err := loadMaps(p.Pid)
		if err != nil {
			return "?", frameID{}
		}
		p.maps = m
	}
	stack := c.stack.reset(p.Pid, sp, scanBytes)
	if p.jvm != nil {
		// The walk to the program's Java method (javaCaller) reads the
		// stack further up: in one piece rather than growing to it.
		stack.first = jvmStackBytes
	}
	if c.isGo(p) {
		// Go keeps frame pointers: its chain is exact, where a scan of
		// the stack meets stale return addresses of earlier calls (fmt's
		// formatting, left in a frame's unused slots).
		stack.first = goStackBytes
		w := c.framePointerSites(p, stack, fp, frames)
		switch {
		case len(w.sites) > 0:
			return strings.Join(w.sites, ";"), frameID{}
		case w.dep != "":
			return w.dep, frameID{}
		}
		if rs := c.runtimeSites(p, stack, w.runtime, frames); len(rs) > 0 {
			// Only the runtime's and the standard library's code is on
			// the chain (the netpoller's wait, sysmon's sleep, a
			// goroutine of net/http's own): named from the stack's top
			// and the chain, where a scan would take a stale return
			// address left in a frame, after probing every word for code.
			return strings.Join(rs, ";"), frameID{}
		}
	}
	// Near the top of the stack mapping, what can be read of the scan's
	// words is scanned (the rest are zeros), if it holds the first few.
	if _, ok := stack.bytes(sp, 64); !ok {
		return "?", frameID{}
	}
	var words [scanBytes]byte
	copy(words[:], stack.buf)
	sites, first, fallback, fallbackID := c.scan(p, words[:], frames)
	if len(sites) < frames {
		// Deep runtime paths (Go's net -> internal/poll -> syscall) do
		// not fit in the scan window; Go and other frame-pointer code can
		// be walked along the saved-rbp chain instead.
		if w := c.framePointerSites(p, stack, fp, frames); len(w.sites) > len(sites) {
			sites, first = w.sites, frameID{}
		}
	}
	if len(sites) == 0 {
		if fallback != "" {
			return fallback, fallbackID
		}
		return "?", frameID{}
	}
	return strings.Join(sites, ";"), first
}

// scan looks through the stack's first words for return addresses: up to
// frames sites of the program's own code (the first of them as first),
// and the first other one as a fallback.
func (c *Cache) scan(p *Process, words []byte, frames int) (sites []string, first frameID, fallback string, fallbackID frameID) {
	reloaded := false
	for i := 0; i+8 <= len(words) && len(sites) < frames; i += 8 {
		w := binary.NativeEndian.Uint64(words[i:])
		if w < 0x1000 {
			continue
		}
		f := c.frameAt(p, w, &reloaded)
		if f == nil || !c.returns(p, f, w) {
			continue
		}
		switch c.classOf(f) {
		case frameUser:
			if len(sites) == 0 {
				first = f.id
			}
			sites = append(sites, c.nameOf(f))
		case frameSkip, frameDep:
			if fallback == "" {
				fallback, fallbackID = c.nameOf(f), f.id
			}
		}
	}
	return sites, first, fallback, fallbackID
}

// mappingOf is the mapping that holds address w, nil when none does. An
// address outside every mapping may be code mapped since the maps were
// read: they are read again, once per stack scan (reloaded), and an
// address still outside is remembered as no code. An address nothing is
// mapped at now (the byte before it cannot be read) is no return address
// and needs no reload: Go's stacks hold monotonic times in nanoseconds,
// each new, which made a Go cluster's nodes re-read their maps at every
// third op.
func (p *Process) mappingOf(w uint64, reloaded *bool) *mapping {
	if m := p.maps.find(w); m != nil {
		return m
	}
	if p.maps.isData(w) {
		// A pointer into a heap or a stack: Go's stacks are full of
		// them, and each new one cost a read of the process's memory
		// and of its maps.
		return nil
	}
	if _, known := p.notCode[w]; known {
		return nil
	}
	if !*reloaded && w < 0x7fffffffffff && w > 0x400000 {
		var b [1]byte
		if ptrace.ReadMem(p.Pid, w-1, b[:]) != nil {
			return nil
		}
		if nm, err := loadMaps(p.Pid); err == nil {
			p.maps, p.frames = nm, nil
			*reloaded = true
			if m := p.maps.find(w); m != nil {
				return m
			}
			if p.maps.isData(w) {
				return nil
			}
		}
	}
	if *reloaded {
		if p.notCode == nil || len(p.notCode) >= maxNotCode {
			p.notCode = map[uint64]struct{}{}
		}
		p.notCode[w] = struct{}{}
	}
	return nil
}

// framePointerWalk bounds the saved-rbp chain walk.
const framePointerWalk = 64

// fpWalk is what a frame-pointer walk found: up to frames sites of the
// program's own code, the first frame of a Go binary's dependency, and up
// to frames of a Go binary's runtime and standard library frames from the
// chain's start (each checked to follow a call, since only they stand for
// the site when nothing else is on the chain).
type fpWalk struct {
	sites   []string
	dep     string
	runtime []string
}

// framePointerSites follows the frame-pointer chain from fp. The chain
// must move up the stack and stay near sp, so a register used for data
// ends the walk.
func (c *Cache) framePointerSites(p *Process, stack *stackWindow, fp uint64, frames int) (w fpWalk) {
	sp := stack.sp
	lo := sp
	leading := true // every frame so far was the runtime's
	for i := 0; i < framePointerWalk && len(w.sites) < frames; i++ {
		if fp < lo || fp > sp+8<<20 || fp%8 != 0 {
			break
		}
		b, ok := stack.bytes(fp, 16)
		if !ok {
			// Past what the window reads in one piece: this frame alone.
			var one [16]byte
			if ptrace.ReadMem(p.Pid, fp, one[:]) != nil {
				break
			}
			b = one[:]
		}
		next := binary.NativeEndian.Uint64(b[:8])
		ret := binary.NativeEndian.Uint64(b[8:])
		f := c.frameAt(p, ret, nil)
		if f == nil {
			break
		}
		switch c.classOf(f) {
		case frameUser:
			w.sites = append(w.sites, c.nameOf(f))
		case frameDep:
			if w.dep == "" {
				w.dep = c.nameOf(f)
			}
		case frameSkip:
			if leading && len(w.runtime) < frames && c.inGoBinary(f) && c.returns(p, f, ret) {
				w.runtime = append(w.runtime, c.nameOf(f))
				break
			}
			leading = false
		default:
			leading = false
		}
		lo = fp + 16
		fp = next
	}
	return w
}

// runtimeSites names a Go stack with only the runtime's and the standard
// library's frames on its chain: the word at sp first, when it is a
// return address into the Go binary (Go's syscall stubs keep no frame, so
// the return into their caller lies at sp and the chain starts one
// caller further up), then the chain's frames, up to frames in all.
func (c *Cache) runtimeSites(p *Process, stack *stackWindow, chain []string, frames int) []string {
	var rs []string
	if b, ok := stack.bytes(stack.sp, 8); ok {
		ret := binary.NativeEndian.Uint64(b)
		if f := c.frameAt(p, ret, nil); f != nil && c.classOf(f) == frameSkip && c.inGoBinary(f) && c.returns(p, f, ret) {
			rs = append(rs, c.nameOf(f))
		}
	}
	if len(chain) == 0 {
		// Nothing of the chain's: the stack's top alone is no evidence
		// that only the runtime is on it (the chain did not walk).
		return nil
	}
	rs = append(rs, chain...)
	return rs[:min(len(rs), frames)]
}

// inGoBinary says whether the frame is code of a Go binary (its runtime's
// included), rather than of a C library it loaded.
func (c *Cache) inGoBinary(f *frame) bool {
	st := c.symbols(f.m.path, f.m.root)
	return st != nil && st.gobin != nil
}
