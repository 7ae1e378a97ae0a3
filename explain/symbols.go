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
		ranges, err := m.dw.Ranges(ent)
		if err != nil {
			continue
		}
		for _, rg := range ranges {
			if pc >= rg[0] && pc < rg[1] {
				fn, _ = ent.Val(dwarf.AttrName).(string)
				return fn, file, e.Line
			}
		}
	}
	return fn, file, e.Line
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
