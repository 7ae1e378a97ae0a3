package explain

import (
	"debug/dwarf"
	"strings"

	"github.com/lockstep-dev/lockstep/internal/symname"
)

// dwarfLine is pc's function, file and line from DWARF: the line table's
// line, or, when pc is in a library's code inlined into the program, the
// program's line that the inline chain leads to.
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
		return symname.Demangle(s)
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
	case strings.Contains(f.fn, "::") && symname.RustLibrary(f.fn):
		// Rust's std and kin, C++'s std::, by the crate or namespace.
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
