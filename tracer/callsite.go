package tracer

import (
	"bufio"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unsafe"
)

// mapping is one executable region of a tracee's address space.
type mapping struct {
	start, end uint64
	offset     uint64 // file offset of start
	path       string
}

// memMaps is the executable part of /proc/PID/maps, re-read when an address
// falls outside every known region (after dlopen, JIT, exec).
type memMaps struct {
	exec []mapping
}

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
		if len(fields) < 5 || !strings.Contains(fields[1], "x") {
			continue
		}
		se := strings.SplitN(fields[0], "-", 2)
		start, _ := strconv.ParseUint(se[0], 16, 64)
		end, _ := strconv.ParseUint(se[1], 16, 64)
		off, _ := strconv.ParseUint(fields[2], 16, 64)
		path := ""
		if len(fields) >= 6 {
			path = fields[5]
		}
		m.exec = append(m.exec, mapping{start: start, end: end, offset: off, path: path})
	}
	sort.Slice(m.exec, func(i, j int) bool { return m.exec[i].start < m.exec[j].start })
	return m, sc.Err()
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
)

// siteCache memoizes per-module decisions; with ASLR off the same addresses
// recur in every trial, so this is shared by all tracees of a Tracer.
type siteCache struct {
	syms     map[string]*symtab // module path → symbols (nil: none)
	classes  map[string]frameClass
	isReturn map[string]bool
}

func (c *siteCache) frameKey(path string, off uint64) string {
	return path + "+" + strconv.FormatUint(off, 16)
}

func newSiteCache() *siteCache {
	return &siteCache{syms: map[string]*symtab{}, classes: map[string]frameClass{}, isReturn: map[string]bool{}}
}

type symtab struct {
	addrs []uint64 // sorted symbol start addresses (file virtual addresses)
	names []string
	// bias converts a file offset into the ELF's virtual address space.
	loads []elf.ProgHeader
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

func (c *siteCache) symbols(path string) *symtab {
	if st, ok := c.syms[path]; ok {
		return st
	}
	var st *symtab
	if f, err := elf.Open(path); err == nil {
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
		for _, s := range ss {
			st.addrs = append(st.addrs, s.a)
			st.names = append(st.names, s.n)
		}
		f.Close()
	}
	c.syms[path] = st
	return st
}

// symbolAt names the function containing the file offset off of module path.
func (c *siteCache) symbolAt(path string, off uint64) string {
	st := c.symbols(path)
	if st == nil || len(st.addrs) == 0 {
		return ""
	}
	vaddr := off
	for _, p := range st.loads {
		if off >= p.Off && off < p.Off+p.Filesz {
			vaddr = off - p.Off + p.Vaddr
			break
		}
	}
	i := sort.Search(len(st.addrs), func(i int) bool { return st.addrs[i] > vaddr })
	if i == 0 {
		return ""
	}
	return st.names[i-1]
}

// classify decides whether the return address at module+off is the
// program's own code.
func (c *siteCache) classify(m *mapping, off uint64) frameClass {
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
	key := m.path + "+" + strconv.FormatUint(off, 16)
	if cl, ok := c.classes[key]; ok {
		return cl
	}
	cl := frameUser
	if name := c.symbolAt(m.path, off); name != "" {
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

// looksLikeReturn reports whether the bytes before addr end in a call
// instruction, so that stale words on the stack are not taken for frames.
func looksLikeReturn(pid int, addr uint64) bool {
	var b [7]byte
	if readMem(pid, addr-7, b[:]) != nil {
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

// stackScanWords bounds how far up the stack lockstep looks for the call
// site; glibc wrappers and Go's syscall path sit within a few frames.
const stackScanWords = 48

// callSite returns the first return address on the user stack that lies
// outside libc, the loader and the language runtime, as module+0xoffset.
// frames > 1 joins that many user frames with ';' (pid+stack:K).
func (t *Tracer) callSite(th *thread, frames int) string {
	p := th.proc
	if p.maps == nil {
		m, err := loadMaps(p.pid)
		if err != nil {
			return "?"
		}
		p.maps = m
	}
	var buf [stackScanWords * 8]byte
	if readMem(p.pid, th.regs.Rsp, buf[:]) != nil {
		// Near the top of the stack mapping: read less.
		if readMem(p.pid, th.regs.Rsp, buf[:64]) != nil {
			return "?"
		}
	}
	var sites []string
	fallback := ""
	reloaded := false
	for i := 0; i < stackScanWords && len(sites) < frames; i++ {
		w := *(*uint64)(unsafe.Pointer(&buf[i*8]))
		if w < 0x1000 {
			continue
		}
		m := p.maps.find(w)
		if m == nil {
			if !reloaded && w < 0x7fffffffffff && w > 0x400000 {
				// Possibly code mapped since we last looked.
				if nm, err := loadMaps(p.pid); err == nil {
					p.maps = nm
					reloaded = true
					m = p.maps.find(w)
				}
			}
			if m == nil {
				continue
			}
		}
		off := w - m.start + m.offset
		key := t.sites.frameKey(m.path, off)
		ok, seen := t.sites.isReturn[key]
		if !seen {
			ok = looksLikeReturn(p.pid, w)
			t.sites.isReturn[key] = ok
		}
		if !ok {
			continue
		}
		site := fmt.Sprintf("%s+%#x", filepath.Base(m.path), off)
		switch t.sites.classify(m, off) {
		case frameUser:
			sites = append(sites, site)
		case frameSkip:
			if fallback == "" {
				fallback = site
			}
		}
	}
	if len(sites) < frames {
		// Deep runtime paths (Go's net -> internal/poll -> syscall) do
		// not fit in the scan window; Go and other frame-pointer code can
		// be walked along the saved-rbp chain instead.
		if fp := t.framePointerSites(th, frames); len(fp) > len(sites) {
			sites = fp
		}
	}
	if len(sites) == 0 {
		if fallback != "" {
			return fallback
		}
		return "?"
	}
	return strings.Join(sites, ";")
}

// framePointerWalk bounds the saved-rbp chain walk.
const framePointerWalk = 64

// framePointerSites follows the frame-pointer chain from the thread's rbp
// and returns up to frames user call sites. The chain must move up the
// stack and stay near rsp, so a register used for data ends the walk.
func (t *Tracer) framePointerSites(th *thread, frames int) []string {
	p := th.proc
	var sites []string
	fp := th.regs.Rbp
	lo := th.regs.Rsp
	for i := 0; i < framePointerWalk && len(sites) < frames; i++ {
		if fp < lo || fp > th.regs.Rsp+8<<20 || fp%8 != 0 {
			break
		}
		var b [16]byte
		if readMem(p.pid, fp, b[:]) != nil {
			break
		}
		next := *(*uint64)(unsafe.Pointer(&b[0]))
		ret := *(*uint64)(unsafe.Pointer(&b[8]))
		m := p.maps.find(ret)
		if m == nil {
			break
		}
		off := ret - m.start + m.offset
		if t.sites.classify(m, off) == frameUser {
			sites = append(sites, fmt.Sprintf("%s+%#x", filepath.Base(m.path), off))
		}
		lo = fp + 16
		fp = next
	}
	return sites
}
