package layering

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// repoRoot is the module's root, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("%s is not the module's root: %v", root, err)
	}
	return root
}

// modulePackages lists the module's packages relative to its root: every
// directory holding a Go file that is not a test, outside testdata,
// hidden and "_" directories and nested modules (directories with their
// own go.mod), whatever its build tags.
func modulePackages(root string) ([]string, error) {
	var pkgs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root {
				if name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
					return filepath.SkipDir
				}
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if !slices.Contains(pkgs, rel) {
			pkgs = append(pkgs, rel)
		}
		return nil
	})
	slices.Sort(pkgs)
	return pkgs, err
}

// tableColumn returns the first column of the Markdown table that follows
// the heading `## title` (up to the next heading), each cell's
// backquoted name; rows whose first cell is not one backquoted name are
// reported as bad.
func tableColumn(t *testing.T, path, title string) (names, bad []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cell := regexp.MustCompile("^`([^`]+)`$")
	in, inTable, done := false, false, false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	fenced := false
	for sc.Scan() && !done {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		switch {
		case fenced:
		case strings.HasPrefix(line, "#"):
			if in {
				done = true
				break
			}
			in = strings.TrimSpace(strings.TrimLeft(line, "#")) == title
		case !in:
		case strings.HasPrefix(line, "|"):
			if !inTable {
				inTable = true // the header row
				continue
			}
			cells := strings.Split(line, "|")
			first := strings.TrimSpace(cells[1])
			if strings.Trim(first, "-: ") == "" {
				continue // the delimiter row
			}
			if m := cell.FindStringSubmatch(first); m != nil {
				names = append(names, m[1])
			} else {
				bad = append(bad, first)
			}
		case inTable:
			done = true // the first table only
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !in && len(names) == 0 {
		t.Fatalf("%s: no table under the heading %q", path, title)
	}
	return names, bad
}

// TestArchitecturePackages: docs/architecture.md's package table names
// every package of the module, once each, and nothing else.
func TestArchitecturePackages(t *testing.T) {
	root := repoRoot(t)
	doc := filepath.Join(root, "docs", "architecture.md")
	named, bad := tableColumn(t, doc, "Packages")
	for _, b := range bad {
		t.Errorf("docs/architecture.md, Packages: row %q does not start with one `package` path", b)
	}
	pkgs, err := modulePackages(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 20 {
		t.Fatalf("found %d packages under %s: not lockstep's module", len(pkgs), root)
	}
	seen := map[string]bool{}
	for _, n := range named {
		if seen[n] {
			t.Errorf("docs/architecture.md, Packages: %s is named twice", n)
		}
		seen[n] = true
		if !slices.Contains(pkgs, n) {
			t.Errorf("docs/architecture.md, Packages: %s is no package of the module (renamed or removed?)", n)
		}
	}
	for _, p := range pkgs {
		if !seen[p] {
			t.Errorf("docs/architecture.md, Packages: package %s is not named; add its row", p)
		}
	}
}

// TestArchitectureTracerParts: the tracer's parts the architecture names
// are types of package tracer.
func TestArchitectureTracerParts(t *testing.T) {
	root := repoRoot(t)
	parts, bad := tableColumn(t, filepath.Join(root, "docs", "architecture.md"), "The tracer's parts")
	for _, b := range bad {
		t.Errorf("docs/architecture.md, The tracer's parts: row %q does not start with one `type` name", b)
	}
	if len(parts) == 0 {
		t.Fatal("docs/architecture.md names no tracer part")
	}
	files, err := filepath.Glob(filepath.Join(root, "tracer", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var src strings.Builder
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src.Write(b)
	}
	for _, p := range parts {
		if !regexp.MustCompile(`(?m)^type ` + regexp.QuoteMeta(p) + ` `).MatchString(src.String()) {
			t.Errorf("docs/architecture.md names tracer part %s, which is no type of package tracer", p)
		}
	}
}

// TestModulePackages: the walk finds packages and leaves out testdata and
// nested modules.
func TestModulePackages(t *testing.T) {
	pkgs, err := modulePackages(repoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"engine", "tracer", "tracer/internal/ptrace", "internal/safefs", "cmd/lockstep"} {
		if !slices.Contains(pkgs, want) {
			t.Errorf("modulePackages misses %s", want)
		}
	}
	for _, p := range pkgs {
		if strings.HasPrefix(p, "testdata") || strings.Contains(p, "/testdata") {
			t.Errorf("modulePackages lists %s, under testdata", p)
		}
		if p == "examples/raft/raftex" || p == "examples/etcd/client" {
			t.Errorf("modulePackages lists %s, a nested module", p)
		}
	}
}
