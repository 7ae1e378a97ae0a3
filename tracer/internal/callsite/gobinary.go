package callsite

import (
	"debug/buildinfo"
	"debug/elf"
	"debug/gosym"
	"strings"
)

// goBinary is what a Go binary says about its code: the module paths of
// the program and of what it depends on. A Go binary links its runtime and
// standard library in, so the module is no guide; a function's package is.
type goBinary struct {
	main string   // the main module's path ("" when the binary does not say)
	deps []string // the modules it depends on
	// tab names functions from the pclntab, which a stripped binary
	// (no symbol table: go test's, release builds') keeps.
	tab *gosym.Table
}

// funcName names the function at a virtual address, "" if none.
func (g *goBinary) funcName(pc uint64) string {
	if g.tab == nil {
		return ""
	}
	if fn := g.tab.PCToFunc(pc); fn != nil {
		return fn.Name
	}
	return ""
}

// readGoBinary reads a Go binary's build information; nil for any other
// binary. path is the file f was opened from.
func readGoBinary(f *elf.File, path string) *goBinary {
	if f.Section(".gopclntab") == nil && f.Section(".go.buildinfo") == nil {
		return nil
	}
	g := &goBinary{}
	if sec, text := f.Section(".gopclntab"), f.Section(".text"); sec != nil && text != nil {
		if data, err := sec.Data(); err == nil {
			g.tab, _ = gosym.NewTable(nil, gosym.NewLineTable(data, text.Addr))
		}
	}
	if bi, err := buildinfo.ReadFile(path); err == nil {
		g.main = bi.Main.Path
		for _, d := range bi.Deps {
			g.deps = append(g.deps, d.Path)
		}
	}
	return g
}

// cgoRuntime are the C functions cgo links into a Go binary (thread start,
// calls between C and Go): never the program's.
var cgoRuntime = []string{"crosscall", "_cgo_", "x_cgo_", "threadentry", "_rt0_", "__"}

// class tells a function of a Go binary (its symbol name) as the program's
// own (package main, or of the main module), a dependency's, or the
// runtime's and the standard library's.
func (g *goBinary) class(name string) frameClass {
	switch {
	case name == "":
		return frameUnknown
	case strings.HasPrefix(name, "main."):
		return frameUser
	case strings.HasPrefix(name, "type:") || strings.HasPrefix(name, "type.") || strings.HasPrefix(name, "go:") ||
		strings.HasPrefix(name, "go.itab") || strings.HasPrefix(name, "go.shape") || strings.HasPrefix(name, "go.buildid"):
		return frameSkip
	}
	if !strings.Contains(name, ".") {
		// Not a Go function: the runtime's assembly has package names
		// too, so this is C linked in by cgo, the program's unless it is
		// cgo's own.
		for _, p := range cgoRuntime {
			if strings.HasPrefix(name, p) {
				return frameSkip
			}
		}
		return frameUser
	}
	if g.main != "" && inModule(name, g.main) {
		return frameUser
	}
	for _, d := range g.deps {
		if inModule(name, d) {
			return frameDep
		}
	}
	// Without build information: the standard library's import paths
	// have no dot in their first element, a module's have a domain.
	first, _, _ := strings.Cut(name, "/")
	if g.main == "" && strings.Contains(first, ".") && strings.Contains(name, "/") {
		return frameUser
	}
	return frameSkip
}

// inModule says whether a function's symbol name belongs to a package of
// module mod ("mod.F", "mod.(*T).M", "mod/sub.F").
func inModule(name, mod string) bool {
	return strings.HasPrefix(name, mod) && len(name) > len(mod) && (name[len(mod)] == '.' || name[len(mod)] == '/')
}
