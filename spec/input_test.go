package spec

import (
	"bytes"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func noHostNets() ([]netip.Prefix, error) { return nil, nil }

// TestNestingBound: a spec nested 100,000 deep (200 KB; it took lockstep
// 2.3 GB and 23 s before it died) is refused with one line, at once and
// in little memory, in flow and in block style.
func TestNestingBound(t *testing.T) {
	const deep = 100_000
	for _, tc := range []struct {
		name string
		data string
		line int
	}{
		{"flow list", "name: t\nnodes: " + strings.Repeat("[", deep) + strings.Repeat("]", deep) + "\n", 2},
		{"flow mapping", "name: t\nnodes: " + strings.Repeat("{a: ", deep) + "1" + strings.Repeat("}", deep) + "\n", 2},
		{"block list", "name: t\nnodes:\n" + strings.Repeat("- ", deep) + "x\n", 3},
		{"flow list over lines", "name: t\nnodes:\n" + strings.Repeat("[\n", deep) + strings.Repeat("]\n", deep), 66},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := parse("deep.yaml", []byte(tc.data), noHostNets)
			runtime.ReadMemStats(&after)
			var se *Error
			if !errors.As(err, &se) || se.Line != tc.line || !strings.Contains(err.Error(), "nested more than 64 levels deep") {
				t.Fatalf("error %v, want one naming line %d and the bound", err, tc.line)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines")
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
				t.Errorf("refusing it took %d MB", alloc>>20)
			}
		})
	}
}

// TestNestingDepth: the estimate on ordinary YAML, quotes and comments.
func TestNestingDepth(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want int
	}{
		{"a: 1\n", 1},
		{"a:\n  b:\n    c: 1\n", 3},
		{"a:\n  - x\n  - y\n", 2},
		{"a: [1, [2, [3]]]\n", 4},
		{"a: \"[[[[\" # [[[[\n", 1},
		{"a: '[[[{' \nb: don't [x]\n", 2},
		{"a: {b: [1, 2]}\n", 3},
		{"- - - x\n", 3},
	} {
		if got, _ := nestingDepth([]byte(tc.src), 100); got != tc.want {
			t.Errorf("%q: depth %d, want %d", tc.src, got, tc.want)
		}
	}
}

// TestShippedSpecsShallow: every spec in the repository is far from the
// nesting bound.
func TestShippedSpecsShallow(t *testing.T) {
	var files []string
	for _, pat := range []string{"testdata/*/*.yaml", "testdata/*/*/*.yaml", "testdata/*/*/*/*.yaml", "examples/*/*.yaml"} {
		m, _ := filepath.Glob(repoPath(pat))
		files = append(files, m...)
	}
	if len(files) < 50 {
		t.Fatalf("found %d specs", len(files))
	}
	for _, f := range files {
		if strings.Contains(f, "nested-") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if d, _ := nestingDepth(b, maxNesting); d > maxNesting/4 {
			t.Errorf("%s: nested %d deep", f, d)
		}
	}
}

// TestBOM: a byte order mark at the start of a spec is dropped: the spec
// loads, its digest is the file's.
func TestBOM(t *testing.T) {
	src := []byte("name: t\nnodes:\n  - {name: c1, role: client, command: [\"/bin/true\"]}\n")
	plain, err := parse("t.yaml", src, noHostNets)
	if err != nil {
		t.Fatal(err)
	}
	withBOM := append([]byte("\xef\xbb\xbf"), src...)
	sp, err := parse("t.yaml", withBOM, noHostNets)
	if err != nil {
		t.Fatalf("with a BOM: %v", err)
	}
	if sp.Name != "t" || sp.Digest == plain.Digest || sp.Digest != digest(withBOM) {
		t.Errorf("name %q, digest %s (plain %s)", sp.Name, sp.Digest, plain.Digest)
	}
	// One inside the file never reaches a message.
	_, err = parse("t.yaml", bytes.Replace(src, []byte("role"), []byte("\xef\xbb\xbfrole"), 1), noHostNets)
	if err == nil || strings.Contains(err.Error(), "\ufeff") {
		t.Errorf("error %q", err)
	}
}
