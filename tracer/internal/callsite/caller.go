package callsite

import (
	"encoding/binary"
	"strings"

	"github.com/lockstep-dev/lockstep/internal/symname"
	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
)

// rustKind tells a frame of a Rust binary's code: the program's own
// crate's, or a library crate's (std's generics, tokio) that rustc
// compiled into the program, which Site may take as the call site.
type rustKind uint8

const (
	rustNone rustKind = iota // not Rust, or not known
	rustLib
	rustOwn
)

// callerScanWords bounds the look for the program's own frame past a
// library frame: std's buffered readers and tokio's polling keep a few
// hundred bytes of locals between the two.
const callerScanWords = 512

// SiteAndCaller is Site, and the program's own frame further up the stack
// when the site is a Rust library crate's code (a std iterator's next(),
// a tokio poll): the frame a developer reads, as module+0xoffset. It is a
// label for humans, no part of the op's identity: Site alone is, and it
// is the same as Site returns. caller is "" when the site is the
// program's own, when p runs no Rust binary, or when no own frame lies
// within callerScanWords of sp. For a JVM (p maps a HotSpot libjvm.so)
// the caller is the program's Java method, Class.method(File.java:line),
// found by javaCaller.
func (c *Cache) SiteAndCaller(p *Process, sp, fp uint64, frames int) (site, caller string) {
	site, first := c.site(p, sp, fp, frames)
	if p.maps != nil && c.jvmOf(p) != nil {
		// A JVM's site is the JDK's native frame (its Java code is in
		// anonymous memory); the program's Java method is found along
		// the frame pointers, through the stop's stack window.
		return site, c.javaCaller(p, fp)
	}
	if first.path == "" || !c.isRust(p) {
		return site, ""
	}
	if c.rustKindOf(first, p.maps) == rustOwn {
		return site, ""
	}
	own, ok := c.ownFrame(p, sp)
	if !ok || c.name(own) == c.name(first) {
		return site, ""
	}
	return site, c.name(own)
}

// isRust says whether one of p's modules is a Rust binary.
func (c *Cache) isRust(p *Process) bool {
	if p.rustexe == 0 {
		p.rustexe = -1
		for i := range p.maps.exec {
			m := &p.maps.exec[i]
			if m.path == "" || strings.HasPrefix(m.path, "[") || moduleSkipped(m.path) {
				continue
			}
			if st := c.symbols(m.path, m.root); st != nil && st.rust {
				p.rustexe = 1
				break
			}
		}
	}
	return p.rustexe > 0
}

// rustKindOf classifies a frame by its function's demangled crate.
func (c *Cache) rustKindOf(id frameID, maps *memMaps) rustKind {
	if k, ok := c.rust[id]; ok {
		return k
	}
	k := rustNone
	root := ""
	for i := range maps.exec {
		if maps.exec[i].path == id.path {
			root = maps.exec[i].root
			break
		}
	}
	if name := c.symbolAt(id.path, root, id.off); symname.IsRust(name) {
		k = rustOwn
		if symname.RustLibrary(symname.Demangle(name)) {
			k = rustLib
		}
	}
	c.rust[id] = k
	return k
}

// ownFrame scans the stack from sp for the first return address into a
// Rust function of the program's own crate. Unlike Site's scan it never
// re-reads the maps: it only labels, and must not change what Site
// later sees.
func (c *Cache) ownFrame(p *Process, sp uint64) (frameID, bool) {
	buf := make([]byte, callerScanWords*8)
	for len(buf) > 64 && ptrace.ReadMem(p.Pid, sp, buf) != nil {
		buf = buf[:len(buf)/2] // near the top of the stack mapping
	}
	for i := 0; i+8 <= len(buf); i += 8 {
		w := binary.NativeEndian.Uint64(buf[i:])
		m := p.maps.find(w)
		if m == nil || m.path == "" || strings.HasPrefix(m.path, "[") || moduleSkipped(m.path) {
			continue
		}
		key := frameID{m.path, w - m.start + m.offset}
		if c.rustKindOf(key, p.maps) != rustOwn {
			continue
		}
		ok, seen := c.isReturn[key]
		if !seen {
			ok = looksLikeReturn(p.Pid, w)
			c.isReturn[key] = ok
		}
		if ok {
			return key, true
		}
	}
	return frameID{}, false
}
