package explain

import (
	"debug/dwarf"
	"debug/elf"
	"debug/gosym"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lockstep-dev/lockstep/spec"
)

// symbolizer turns call sites ("demoproc+0x15cb": a module's base name and
// a file offset, see tracer/internal/callsite) into function, file and
// line, from the binary's DWARF, or Go's pclntab, or its symbol table.
// Modules are found among the spec's node commands and on PATH; a module
// it cannot find or read (a JVM's code cache, a stripped library) keeps
// its module+offset.
type symbolizer struct {
	paths map[string]string // base name → path
	mods  map[string]*module
}

type module struct {
	f     *elf.File
	dw    *dwarf.Data
	gotab *gosym.Table
	syms  []elf.Symbol
}

func newSymbolizer(sp *spec.Spec) *symbolizer {
	s := &symbolizer{paths: map[string]string{}, mods: map[string]*module{}}
	if sp == nil {
		return s
	}
	for _, n := range sp.Nodes {
		if len(n.Command) == 0 {
			continue
		}
		p := strings.ReplaceAll(n.Command[0], "{{dir}}", sp.Dir)
		if strings.Contains(p, "{{") {
			continue
		}
		if !filepath.IsAbs(p) {
			if lp, err := exec.LookPath(p); err == nil {
				p = lp
			}
		}
		s.paths[filepath.Base(p)] = filepath.Clean(p)
	}
	return s
}

// lookup symbolizes a site; empty results when it cannot.
func (s *symbolizer) lookup(site string) (fn, file string, line int) {
	name, offs, ok := strings.Cut(site, "+0x")
	if !ok {
		return "", "", 0
	}
	if i := strings.IndexByte(offs, '+'); i >= 0 { // more frames: the first
		offs = offs[:i]
	}
	off, err := strconv.ParseUint(offs, 16, 64)
	if err != nil {
		return "", "", 0
	}
	m := s.module(name)
	if m == nil {
		return "", "", 0
	}
	pc, ok := m.addr(off)
	if !ok {
		return "", "", 0
	}
	// A return address follows its call: the call's line is one byte back.
	pc--
	if m.dw != nil {
		fn, file, line = m.dwarfLine(pc)
	}
	if file == "" && m.gotab != nil {
		f, l, g := m.gotab.PCToLine(pc)
		if g != nil {
			fn, file, line = g.Name, f, l
		}
	}
	if fn == "" {
		fn = m.symbol(pc)
	}
	fn = demangleRust(fn)
	if file != "" {
		file = filepath.Base(file)
	}
	return fn, file, line
}

func (s *symbolizer) module(name string) *module {
	if m, ok := s.mods[name]; ok {
		return m
	}
	s.mods[name] = nil
	p := s.paths[name]
	if p == "" {
		lp, err := exec.LookPath(name)
		if err != nil {
			return nil
		}
		p = lp
	}
	f, err := elf.Open(p)
	if err != nil {
		return nil
	}
	m := &module{f: f}
	m.dw, _ = f.DWARF()
	m.syms, _ = f.Symbols()
	if len(m.syms) == 0 {
		// Stripped (Debian's packages): what it exports, which for a
		// server with a module API (Redis) is most of its functions.
		m.syms, _ = f.DynamicSymbols()
	}
	if sec := f.Section(".gopclntab"); sec != nil {
		if data, err := sec.Data(); err == nil {
			var text uint64
			if t := f.Section(".text"); t != nil {
				text = t.Addr
			}
			m.gotab, _ = gosym.NewTable(nil, gosym.NewLineTable(data, text))
		}
	}
	s.mods[name] = m
	return m
}

// addr converts a file offset into the ELF's virtual address.
func (m *module) addr(off uint64) (uint64, bool) {
	for _, p := range m.f.Progs {
		if p.Type == elf.PT_LOAD && off >= p.Off && off < p.Off+p.Filesz {
			return off - p.Off + p.Vaddr, true
		}
	}
	return 0, false
}

func (m *module) dwarfLine(pc uint64) (fn, file string, line int) {
	r := m.dw.Reader()
	cu, err := r.SeekPC(pc)
	if err != nil || cu == nil {
		return "", "", 0
	}
	lr, err := m.dw.LineReader(cu)
	if err != nil || lr == nil {
		return "", "", 0
	}
	var e dwarf.LineEntry
	if err := lr.SeekPC(pc, &e); err != nil {
		return "", "", 0
	}
	if e.File != nil {
		file = e.File.Name
	}
	// The function: the subprogram of the unit that holds pc.
	for {
		ent, err := r.Next()
		if err != nil || ent == nil || ent.Tag == dwarf.TagCompileUnit {
			break
		}
		if ent.Tag != dwarf.TagSubprogram {
			continue
		}
		if !m.holds(ent, pc) {
			if ent.Children {
				r.SkipChildren()
			}
			continue
		}
		frames, inner := m.inlined(r, ent, pc, lr.Files())
		return pick(append(frames, frame{fn: inner, file: file, line: e.Line}))
	}
	return fn, file, e.Line
}

// frame is one function on the inline chain at a pc: where in fn the pc
// is (a call to the next inlined function, or the pc itself).
type frame struct {
	fn, file string
	line     int
}

// holds says whether a DWARF entry's ranges hold pc.
func (m *module) holds(ent *dwarf.Entry, pc uint64) bool {
	ranges, err := m.dw.Ranges(ent)
	if err != nil {
		return false
	}
	for _, rg := range ranges {
		if pc >= rg[0] && pc < rg[1] {
			return true
		}
	}
	return false
}

// inlined walks the inline chain at pc down from subprogram sub (r is
// just past it): each inlined call holding pc gives its caller's frame,
// at the call's line. It returns those frames, outermost first, and the
// innermost function, whose code the line table's line is in.
func (m *module) inlined(r *dwarf.Reader, sub *dwarf.Entry, pc uint64, files []*dwarf.LineFile) ([]frame, string) {
	var out []frame
	fn := m.funcName(sub)
	if !sub.Children {
		return nil, fn
	}
	for {
		ent, err := r.Next()
		if err != nil || ent == nil || ent.Tag == 0 {
			// The end of the current parent's children: nothing deeper.
			break
		}
		switch {
		case ent.Tag == dwarf.TagInlinedSubroutine && m.holds(ent, pc):
			f := frame{fn: fn}
			if i, ok := ent.Val(dwarf.AttrCallFile).(int64); ok && i >= 0 && int(i) < len(files) && files[i] != nil {
				f.file = files[i].Name
			}
			if l, ok := ent.Val(dwarf.AttrCallLine).(int64); ok {
				f.line = int(l)
			}
			out = append(out, f)
			fn = m.funcName(ent)
			if !ent.Children {
				return out, fn
			}
			// Its children follow: read on, a level down.
		case ent.Tag == dwarf.TagLexDwarfBlock && m.holds(ent, pc):
			if !ent.Children {
				return out, fn
			}
		default:
			if ent.Children {
				r.SkipChildren()
			}
		}
	}
	return out, fn
}

// funcName names a subprogram or an inlined one (through its abstract
// origin): the linkage name demangled, else the name.
func (m *module) funcName(ent *dwarf.Entry) string {
	if off, ok := ent.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset); ok {
		r := m.dw.Reader()
		r.Seek(off)
		if o, err := r.Next(); err == nil && o != nil {
			ent = o
		}
	}
	if s, ok := ent.Val(dwarf.AttrLinkageName).(string); ok && s != "" {
		return demangleRust(s)
	}
	s, _ := ent.Val(dwarf.AttrName).(string)
	return s
}

// pick chooses the frame to report from an inline chain (outermost
// first): the innermost that is the program's, not a toolchain's library
// inlined into it (Go's syscall and net, Rust's std, C headers of
// /usr/include).
func pick(frames []frame) (fn, file string, line int) {
	best := frames[0]
	for _, f := range frames {
		if !toolchain(f) {
			best = f
		}
	}
	return best.fn, best.file, best.line
}

// toolchain says whether a frame is a language's library code.
func toolchain(f frame) bool {
	switch {
	case strings.Contains(f.file, "/rustc/") || strings.Contains(f.file, "/library/std/") || strings.Contains(f.file, "/library/core/") || strings.Contains(f.file, "/library/alloc/"):
		return true
	case strings.HasPrefix(f.file, "/usr/include/") || strings.HasPrefix(f.file, "/usr/lib/gcc/"):
		return true
	case strings.HasPrefix(f.fn, "std::") || strings.HasPrefix(f.fn, "core::") || strings.HasPrefix(f.fn, "alloc::") || strings.HasPrefix(f.fn, "<"):
		return true
	}
	return goStd(f.fn)
}

// goStd says whether a Go function's name is the runtime's or the standard
// library's: its import path's first element has no dot, and it is not
// main.
func goStd(fn string) bool {
	if fn == "" || strings.HasPrefix(fn, "main.") || !strings.Contains(fn, ".") {
		return false
	}
	first, _, _ := strings.Cut(fn, "/")
	if i := strings.IndexByte(first, '.'); i >= 0 && !strings.Contains(fn[:i], "/") && !strings.Contains(fn, "/") {
		// "fmt.Fprintf", "syscall.Read": no slash, the package is the
		// part before the dot.
		return true
	}
	return !strings.Contains(first, ".")
}

// symbol is the name of the function symbol holding pc.
func (m *module) symbol(pc uint64) string {
	for _, s := range m.syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && pc >= s.Value && pc < s.Value+s.Size {
			return s.Name
		}
	}
	return ""
}

// demangleRust turns a Rust symbol in the legacy mangling
// (_ZN2ms4Conn4send17h0123456789abcdefE) into its path (ms::Conn::send);
// any other name is returned as it is.
func demangleRust(s string) string {
	rest, ok := strings.CutPrefix(s, "_ZN")
	if !ok || !strings.HasSuffix(rest, "E") {
		return s
	}
	rest = rest[:len(rest)-1]
	var parts []string
	for rest != "" {
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		n, err := strconv.Atoi(rest[:i])
		if err != nil || i+n > len(rest) {
			return s
		}
		parts = append(parts, rest[i:i+n])
		rest = rest[i+n:]
	}
	if k := len(parts); k > 1 && len(parts[k-1]) == 17 && parts[k-1][0] == 'h' {
		parts = parts[:k-1] // the hash
	}
	return strings.Join(parts, "::")
}
