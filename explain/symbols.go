package explain

import (
	"debug/dwarf"
	"debug/elf"
	"debug/gosym"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/lockstep-dev/lockstep/coverage"
	"github.com/lockstep-dev/lockstep/internal/symname"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/spec"
)

// symbolizer turns call sites ("demoproc+0x15cb": a module's base name and
// a file offset, see tracer/internal/callsite) into function, file and
// line, from the binary's DWARF, or Go's pclntab, or the nearest symbol of
// its symbol table (demangled: C++, Rust; a JNI method as Java's name).
// Programs are found among the spec's node commands and on PATH, shared
// objects (a JVM's libnio.so) in the library folders; a module it cannot
// find or read (a JVM's code cache) keeps its module+offset.
type symbolizer struct {
	paths   map[string]string // base name → path
	libDirs []string          // folders searched for a shared object
	mods    map[string]*module
	// hints are the notes to print once: each program whose sites had
	// no line because it was built without debug information.
	hints  []string
	hinted map[string]bool
	// kinds names messages by their kinds, numbered as the explained
	// trace's (nil: events carry no kind). It rides here because every
	// event is made with the symbolizer at hand.
	kinds *coverage.Namer
}

type module struct {
	name  string
	f     *elf.File
	dw    *dwarf.Data
	gotab *gosym.Table
	funcs []elf.Symbol // function symbols, sorted by address
	// program says the module is one of the spec's programs (not a
	// system or JVM library), whose missing DWARF is worth a hint.
	program bool
}

// kind is the kind of r's message, nil where none is named.
func (s *symbolizer) kind(r *sched.Record) *coverage.Kind {
	if s == nil {
		return nil
	}
	return s.kinds.Kind(r)
}

func newSymbolizer(sp *spec.Spec) *symbolizer {
	s := &symbolizer{paths: map[string]string{}, mods: map[string]*module{}, hinted: map[string]bool{}}
	if sp != nil {
		for _, n := range sp.Nodes {
			if p := nodeProgram(sp, n.Command); p != "" {
				s.paths[filepath.Base(p)] = p
			}
		}
	}
	s.libDirs = libraryDirs(s.paths)
	return s
}

// nodeProgram is the path of a node's program, "" when the command is
// templated past what explain can fill in.
func nodeProgram(sp *spec.Spec, cmd []string) string {
	if len(cmd) == 0 {
		return ""
	}
	p := strings.ReplaceAll(cmd[0], "{{dir}}", sp.Dir)
	if strings.Contains(p, "{{") {
		return ""
	}
	if !filepath.IsAbs(p) {
		if lp, err := exec.LookPath(p); err == nil {
			p = lp
		}
	}
	return filepath.Clean(p)
}

// libraryDirs are the folders a shared object named in a site is looked
// for in: beside the programs and their ../lib, the JDK's (from JAVA_HOME
// or the java on PATH: libnio.so, libjava.so), and the system's.
func libraryDirs(programs map[string]string) []string {
	var dirs []string
	for _, p := range programs {
		dirs = append(dirs, filepath.Dir(p), filepath.Join(filepath.Dir(p), "..", "lib"))
	}
	var homes []string
	if h := os.Getenv("JAVA_HOME"); h != "" {
		homes = append(homes, h)
	}
	if j, err := exec.LookPath("java"); err == nil {
		if r, err := filepath.EvalSymlinks(j); err == nil {
			homes = append(homes, filepath.Dir(filepath.Dir(r)))
		}
	}
	for _, h := range homes {
		dirs = append(dirs, filepath.Join(h, "lib"), filepath.Join(h, "lib", "server"))
	}
	return append(dirs, "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/usr/lib", "/usr/local/lib")
}

// where symbolizes an op's call site: its Caller (the program's own frame
// past a library's) when the tracer found one, else its Site. A JVM op's
// caller is its Java method as the tracer read it from the JVM
// (Class.method(File.java:line)): it names itself.
func (s *symbolizer) where(op *sched.Op) (fn, file string, line int) {
	if method, file, line, ok := symname.JavaFrame(op.Caller); ok {
		return method, file, line
	}
	if op.Caller != "" {
		if fn, file, line = s.lookup(op.Caller); fn != "" || file != "" {
			return fn, file, line
		}
	}
	return s.lookup(op.Site)
}

// lookup symbolizes a site's first frame; empty results when it cannot.
func (s *symbolizer) lookup(site string) (fn, file string, line int) {
	site, _, _ = strings.Cut(site, ";") // more frames: the first
	name, offs, ok := strings.Cut(site, "+0x")
	if !ok {
		return "", "", 0
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
	fn, file, line = m.lineOf(pc - 1)
	if fn == "" {
		fn = m.nearest(pc)
	}
	if file == "" && m.program {
		// (A Rust binary built without -g still has DWARF: std's.)
		s.hint(m, fn != "")
	}
	if file != "" {
		file = filepath.Base(file)
	}
	fn = readable(fn)
	if m.gotab == nil {
		fn = symname.StripClone(fn) // a Go name's dots are its own
	}
	return fn, file, line
}

// hint notes, once per program, that its code has no line information,
// or (named false) not even the names of its functions.
func (s *symbolizer) hint(m *module, named bool) {
	if s.hinted[m.name] {
		return
	}
	s.hinted[m.name] = true
	h := fmt.Sprintf("%s has no debug information for its code: its call sites name functions, not lines (build it with -g for file:line)", m.name)
	if !named {
		h = fmt.Sprintf("%s is stripped: its call sites are offsets in it (build it with -g, and keep its symbols, for function and file:line)", m.name)
	}
	s.hints = append(s.hints, h)
}

// readable is a symbol as its source spelled it: demangled, or a JNI
// native method's Java name.
func readable(fn string) string {
	if j, ok := symname.JNIMethod(fn); ok {
		return j
	}
	return symname.Demangle(fn)
}

// module opens the named module once; nil when it cannot be found or read.
func (s *symbolizer) module(name string) *module {
	if m, ok := s.mods[name]; ok {
		return m
	}
	s.mods[name] = nil
	p, program := s.find(name)
	if p == "" {
		return nil
	}
	m, err := openModule(p)
	if err != nil {
		return nil
	}
	m.name, m.program = name, program
	s.mods[name] = m
	return m
}

// find locates a module by base name: a program (a node's command or on
// PATH), or a shared object in the library folders.
func (s *symbolizer) find(name string) (path string, program bool) {
	if p := s.paths[name]; p != "" {
		return p, true
	}
	if strings.Contains(name, ".so") {
		for _, d := range s.libDirs {
			p := filepath.Join(d, name)
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
				return p, false
			}
		}
		return "", false
	}
	if lp, err := exec.LookPath(name); err == nil {
		return lp, true
	}
	return "", false
}

func openModule(p string) (*module, error) {
	f, err := elf.Open(p)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", p, err)
	}
	m := &module{f: f}
	m.dw, _ = f.DWARF()
	syms, _ := f.Symbols()
	if len(syms) == 0 {
		// Stripped (Debian's packages): what it exports, which for a
		// server with a module API (Redis) is most of its functions.
		syms, _ = f.DynamicSymbols()
	}
	for _, sy := range syms {
		if elf.ST_TYPE(sy.Info) == elf.STT_FUNC && sy.Value != 0 {
			m.funcs = append(m.funcs, sy)
		}
	}
	sort.SliceStable(m.funcs, func(i, j int) bool { return m.funcs[i].Value < m.funcs[j].Value })
	if sec := f.Section(".gopclntab"); sec != nil {
		if data, err := sec.Data(); err == nil {
			var text uint64
			if t := f.Section(".text"); t != nil {
				text = t.Addr
			}
			m.gotab, _ = gosym.NewTable(nil, gosym.NewLineTable(data, text))
		}
	}
	return m, nil
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

// lineOf is pc's function, file and line from DWARF or Go's line table.
func (m *module) lineOf(pc uint64) (fn, file string, line int) {
	if m.dw != nil {
		fn, file, line = m.dwarfLine(pc)
	}
	if file == "" && m.gotab != nil {
		f, l, g := m.gotab.PCToLine(pc)
		if g != nil {
			fn, file, line = g.Name, f, l
		}
	}
	return fn, file, line
}

// nearest names the function symbol holding the call before return
// address ret, or, when that lies past the end of the nearest symbol
// before it (a stripped binary's local function, which only the exported
// symbols surround), that symbol and ret's distance from it:
// "handler+0x1a4".
func (m *module) nearest(ret uint64) string {
	pc := ret - 1
	i := sort.Search(len(m.funcs), func(i int) bool { return m.funcs[i].Value > pc })
	if i == 0 {
		return ""
	}
	// Aliases share an address: prefer one whose size holds pc.
	for j := i - 1; j >= 0 && m.funcs[j].Value == m.funcs[i-1].Value; j-- {
		if sy := m.funcs[j]; pc < sy.Value+sy.Size {
			return sy.Name
		}
	}
	sy := m.funcs[i-1]
	if sy.Size == 0 {
		return sy.Name
	}
	name := readable(sy.Name)
	if m.gotab == nil {
		name = symname.StripClone(name)
	}
	return fmt.Sprintf("%s+%#x", name, ret-sy.Value)
}
