package spec

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// maxLoadAlloc is what loading any input of at most MaxSize bytes may
// allocate, all told (runtime.MemStats.TotalAlloc), whether it loads or
// fails.
const maxLoadAlloc = 256 << 20

// hostileSpecs are inputs built to make a parser or a template take
// without bound, each at most MaxSize bytes, with the error each must
// end with (the file and line come before it).
func hostileSpecs() []struct{ name, data, err string } {
	const deep = 100_000
	node := func(arg string) string {
		return "name: t\nnodes:\n  - name: c\n    role: client\n    command: [\"/bin/true\", " + arg + "]\n"
	}
	laughs := "services:\n  a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
	for i, prev := 1, "a"; i < 10; i++ {
		name := string(rune('a' + i))
		laughs += "  " + name + ": &" + name + " [" + strings.TrimSuffix(strings.Repeat("*"+prev+", ", 9), ", ") + "]\n"
		prev = name
	}
	return []struct{ name, data, err string }{
		// The issue's: under a key no spec has, so that nothing about
		// the spec's fields is reached first (6 GB, 61 s before).
		{"flow under any key", "x: " + strings.Repeat("[", deep) + strings.Repeat("]", deep) + "\n", "nested more than 64 levels deep (100001 here): a spec needs a handful"},
		{"flow mapping", "x: " + strings.Repeat("{a: ", deep) + "1" + strings.Repeat("}", deep) + "\n", "nested more than 64 levels deep (100001 here): a spec needs a handful"},
		{"block", "x:\n" + strings.Repeat("- ", deep) + "x\n", "nested more than 64 levels deep (100000 here): a spec needs a handful"},
		// Wide rather than deep: the parser's cost grows with the
		// entries (575 MB for the flow list before).
		{"block list", "x:\n" + strings.Repeat("- a\n", MaxSize/4-2), "more than 20000 entries (lines, or items of a [...] or {...}): a spec needs a few hundred"},
		{"flow list", "x: [" + strings.Repeat("a,", MaxSize/2-4) + "a]\n", "more than 20000 entries (lines, or items of a [...] or {...}): a spec needs a few hundred"},
		{"comments", strings.Repeat("# c\n", MaxSize/4), "more than 20000 entries (lines, or items of a [...] or {...}): a spec needs a few hundred"},
		{"one long string", "name: \"" + strings.Repeat("a", MaxSize-20) + "\"\n", "nodes: missing"},
		{"billion laughs", laughs, "its aliases expand to more than 32768 nodes (a scalar counting one per 64 bytes): a spec or compose file needs far fewer"},
		{"not UTF-8 in a comment", "name: t # caf\xe9\n", "not UTF-8 text: byte 0xe9 at column 14 (save the file as UTF-8)"},
		// The template: a million megabytes (5 GB before).
		{"template range", node(`"{{range 1000000}}{{printf \"%01000000d\" 0}}{{end}}"`), "are not allowed in a spec's templates"},
		{"template recursion", node(`"{{define \"a\"}}{{template \"a\"}}{{end}}{{template \"a\"}}"`), "are not allowed in a spec's templates"},
		// Many cheap actions: text/template's parse is what costs.
		{"template actions", node(`"` + strings.Repeat(`{{(((1)))}}`, 90000) + `"`), "templates hold more than 10000 actions, pipes and parentheses, the most a spec's may"},
		{"template actions over fields", "name: t\nnodes:\n  - name: c\n    role: client\n    command: [\"/bin/true\"" +
			strings.Repeat(`, "{{1}}{{1}}{{1}}{{1}}{{1}}{{1}}{{1}}{{1}}{{1}}{{1}}"`, 1500) + "]\n", "templates hold more than 10000 actions, pipes and parentheses, the most a spec's may"},
		{"template pipes", node(`"{{1` + strings.Repeat(`|print`, MaxSize/7) + `}}"`), "templates hold more than 10000 actions, pipes and parentheses, the most a spec's may"},
		{"template output", node(`"` + strings.Repeat(`{{printf \"%01000000d\" 0}}`, 40) + `"`), "templates produce more than 16 MiB, the most a spec's may (a command line holds at most 6 MiB)"},
		// Strings tested, never written: counted all the same.
		{"template unwritten", node(`"` + strings.Repeat(`{{if printf \"%01000000d\" 0}}{{end}}`, 4000) + `"`), "templates produce more than 16 MiB, the most a spec's may (a command line holds at most 6 MiB)"},
		{"template output over fields", "name: t\nnodes:\n  - name: c\n    role: client\n    command: [\"/bin/true\"]\n    env:\n" +
			strings.Repeat("      V{{n}}: \"{{printf \\\"%01000000d\\\" 0}}\"\n", 1) +
			func() string {
				var b strings.Builder
				for i := range 40 {
					b.WriteString("      V" + strings.Repeat("X", i+1) + ": \"{{printf \\\"%01000000d\\\" 0}}\"\n")
				}
				return b.String()
			}(), "templates produce more than 16 MiB, the most a spec's may (a command line holds at most 6 MiB)"},
	}
}

// TestLoadBound: each hostile input fails with its one-line error, having
// allocated at most maxLoadAlloc: refused before the parser or the
// template sees it, or stopped by a budget, not by running out of memory.
func TestLoadBound(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range hostileSpecs() {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.data) > MaxSize {
				t.Fatalf("the input is %d bytes, over MaxSize", len(tc.data))
			}
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".yaml")
			if err := os.WriteFile(path, []byte(tc.data), 0o644); err != nil {
				t.Fatal(err)
			}
			alloc, err := allocated(func() error { _, err := Load(path); return err })
			var se *Error
			if !errors.As(err, &se) || !strings.HasPrefix(err.Error(), path) || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %.300v, want one of %s with %q", err, path, tc.err)
			}
			if strings.Contains(err.Error(), "\n") || len(err.Error()) > 1024 {
				t.Errorf("error of %d bytes, on more than one line", len(err.Error()))
			}
			if alloc > maxLoadAlloc {
				t.Errorf("loading it allocated %d MB", alloc>>20)
			}
			t.Logf("%d KB allocated", alloc>>10)
		})
	}
}

// allocated is what f allocates, all told.
func allocated(f func() error) (uint64, error) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, err
}

// TestNotUTF8Line: the first byte that is not UTF-8 is named by its line
// and column, past valid multi-byte text.
func TestNotUTF8Line(t *testing.T) {
	_, err := parse("t.yaml", []byte("name: \"café\"\n# ok: ünïcode\nnodes: [] # \xff\n"), noHostNets)
	if err == nil || err.Error() != "t.yaml:3: not UTF-8 text: byte 0xff at column 13 (save the file as UTF-8)" {
		t.Fatalf("error %v", err)
	}
}

// TestTemplateActions: what a spec's templates may do (variables, if,
// with, printf within the budget) still expands.
func TestTemplateActions(t *testing.T) {
	s := &Spec{Nodes: []Node{{Name: "n"}}}
	v := TemplateVars{NodeDir: "/d", Seed: 7}
	for in, want := range map[string]string{
		`{{tmp}}/x`:                              "/d/x",
		`{{if eq node "n"}}yes{{else}}no{{end}}`: "yes",
		`{{with seed}}{{.}}{{end}}`:              "7",
		`{{printf "%03d" seed}}`:                 "007",
		`{{len (printf "%05d" 1)}}`:              "5",
		`{{urlquery "a b"}}`:                     "a+b",
	} {
		out, err := s.expandAll("n", v, []string{in}, newBudget())
		if err != nil || out[0] != want {
			t.Errorf("%s: %q, %v; want %q", in, out, err, want)
		}
	}
}
