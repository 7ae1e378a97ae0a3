package layering

import (
	"fmt"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Module is lockstep's module path; packages are named relative to it.
const Module = "github.com/lockstep-dev/lockstep"

// Graph maps each of the module's packages (relative to Module, "" for
// the root) to the module packages it imports, tests left out.
type Graph map[string][]string

// Load reads the import graph of the module rooted at dir, for this
// machine's GOOS and GOARCH. Directories holding their own go.mod (nested
// modules), testdata and hidden ones are not the module's.
func Load(dir string) (Graph, error) {
	g := Graph{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != dir {
			if name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		pkg, err := build.Default.ImportDir(path, 0)
		if err != nil {
			var none *build.NoGoError
			if errorsAs(err, &none) {
				return nil
			}
			return fmt.Errorf("reading %s: %w", path, err)
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == "." {
			rel = ""
		}
		var deps []string
		for _, imp := range pkg.Imports {
			if imp == Module {
				deps = append(deps, "")
			} else if p, ok := strings.CutPrefix(imp, Module+"/"); ok {
				deps = append(deps, p)
			}
		}
		g[rel] = deps
		return nil
	})
	return g, err
}

func errorsAs(err error, target **build.NoGoError) bool {
	e, ok := err.(*build.NoGoError)
	if ok {
		*target = e
	}
	return ok
}

// Deps is every module package pkg imports, directly or not, sorted.
func (g Graph) Deps(pkg string) []string {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(p string) {
		for _, d := range g[p] {
			if !seen[d] {
				seen[d] = true
				walk(d)
			}
		}
	}
	walk(pkg)
	out := make([]string, 0, len(seen))
	for d := range seen {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

// Rule constrains what one package may reach through its imports.
type Rule struct {
	Pkg string
	// Only, when set, lists everything Pkg may reach (an allow list);
	// otherwise Never lists what it must not reach. A name covers the
	// packages under it too ("tracer" covers "tracer/internal/ptrace")
	// unless it ends in "$" ("tracer$" is the tracer alone).
	Only, Never []string
	Why         string
}

// matches reports whether pkg is named by pattern (see Rule).
func matches(pattern, pkg string) bool {
	if p, ok := strings.CutSuffix(pattern, "$"); ok {
		return pkg == p
	}
	return pkg == pattern || strings.HasPrefix(pkg, pattern+"/")
}

func matchesAny(patterns []string, pkg string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return matches(p, pkg) })
}

// Check lists the rules' violations, one line each: the package, what it
// reaches that it must not, and the rule's reason. A rule whose package
// is missing is a violation too: a renamed package must not silently
// escape its rule.
func (g Graph) Check(rules []Rule) []string {
	var out []string
	for _, r := range rules {
		if _, ok := g[r.Pkg]; !ok {
			out = append(out, fmt.Sprintf("%s: no such package (rule: %s)", r.Pkg, r.Why))
			continue
		}
		for _, d := range g.Deps(r.Pkg) {
			bad := matchesAny(r.Never, d)
			if r.Only != nil {
				bad = !matchesAny(r.Only, d)
			}
			if bad {
				out = append(out, fmt.Sprintf("%s reaches %s (via %s): %s", r.Pkg, d, strings.Join(g.path(r.Pkg, d), " → "), r.Why))
			}
		}
	}
	return out
}

// path is a shortest import chain from one package to another.
func (g Graph) path(from, to string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == to {
			var chain []string
			for q := to; q != from; q = prev[q] {
				chain = append(chain, q)
			}
			chain = append(chain, from)
			slices.Reverse(chain)
			return chain
		}
		for _, d := range g[p] {
			if _, ok := prev[d]; !ok {
				prev[d] = p
				queue = append(queue, d)
			}
		}
	}
	return nil
}

// Rules is lockstep's dependency direction: cmd → {explain, report} →
// engine → {spec, netns, tracer, bpf, vclock, sched, conflict, faults};
// spec is data, report reads results, and the pure packages stay pure.
var Rules = []Rule{
	{Pkg: "spec", Only: []string{"compose", "internal/execpath"},
		Why: "spec is data and validation only, importing no runtime package (nor image, which unpacks a spec's images): the engine maps it onto them"},
	{Pkg: "result", Never: []string{"engine", "tracer$", "tracer/internal", "netns", "bpf", "vclock", "faults", "report", "explain"},
		Why: "results are plain data"},
	{Pkg: "report", Never: []string{"engine", "tracer$", "tracer/internal", "netns", "bpf", "vclock", "faults", "explain", "shard"},
		Why: "report reads results, not the engine"},
	{Pkg: "sched", Never: []string{"tracer", "netns", "bpf", "conflict", "engine", "spec"},
		Why: "sched is pure: the vocabulary of scheduling, and it asks conflict analysis through its own interface"},
	{Pkg: "vclock", Never: []string{"tracer", "netns", "bpf", "engine"}, Why: "vclock is pure virtual time"},
	{Pkg: "conflict", Never: []string{"tracer", "netns", "bpf", "engine"}, Why: "conflict is pure analysis over traces"},
	{Pkg: "faults", Never: []string{"tracer", "netns", "bpf", "engine"}, Why: "faults plans; the engine applies them"},
	{Pkg: "coverage", Never: []string{"tracer", "netns", "bpf", "engine", "faults", "report", "explain"},
		Why: "coverage reads traces and trial directories into features; it runs nothing, and report (which must not reach faults) draws on it"},
	{Pkg: "history", Never: []string{"tracer", "netns", "bpf", "engine"}, Why: "history checks histories"},
	{Pkg: "bpf", Only: []string{}, Why: "bpf imports no other lockstep package"},
	{Pkg: "netcut", Only: []string{}, Why: "netcut is how faults, the tracer and netns, which must not reach each other, name one cut: it imports no other lockstep package"},
	{Pkg: "internal/safefs", Only: []string{}, Why: "safefs is a leaf that every package writing where a node can uses"},
	{Pkg: "tracer", Never: []string{"engine", "spec", "netns", "faults", "report", "explain"},
		Why: "the tracer runs what the engine tells it, through its own options"},
	{Pkg: "netns", Never: []string{"engine", "spec", "tracer", "sched", "faults"}, Why: "netns knows nothing of scheduling"},
	{Pkg: "engine", Never: []string{"report", "explain", "shard", "k8s", "cmd"}, Why: "the engine is below what reads its results"},
}
