package spec

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse: any input of at most MaxSize bytes loads or fails with a
// one-line *Error, having allocated at most maxLoadAlloc (the bound
// TestLoadBound shows on inputs made to break it). `make fuzz` runs it
// for a few seconds; its seeds are the bad specs, a good one and
// spec/testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Add([]byte("name: t\nnodes:\n  - {name: c1, role: client, command: [\"/bin/true\", \"{{tmp}}\", \"{{addr \\\"c1\\\"}}\"]}\n"))
	bad, _ := filepath.Glob(repoPath("testdata", "specs", "bad", "*.yaml"))
	for _, p := range bad {
		if b, err := os.ReadFile(p); err == nil && len(b) < 4096 {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > MaxSize {
			t.Skip("over MaxSize: readFile refuses it unread")
		}
		alloc, err := allocated(func() error { _, err := load("fuzz.yaml", data, noHostNets); return err })
		if alloc > maxLoadAlloc {
			t.Fatalf("loading %d bytes allocated %d MB", len(data), alloc>>20)
		}
		if err == nil {
			return
		}
		if se := (*Error)(nil); !errors.As(err, &se) {
			t.Fatalf("%T, not a spec error: %v", err, err)
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "fuzz.yaml") {
			t.Fatalf("error %q: not one line naming the file", msg)
		}
	})
}

// FuzzTemplate: any template expands or fails with a one-line error,
// within the output budget (maxTemplateOutput) and having allocated at
// most maxLoadAlloc: no loop, call or string function escapes the bounds.
func FuzzTemplate(f *testing.F) {
	for _, s := range []string{
		`{{tmp}}/data`, `{{addr "m"}}:2379`, `{{nodes}} {{addrs}} {{seed}} {{node}} {{dir}} {{trialdir}}`,
		`{{if eq node "n"}}a{{else}}b{{end}}`, `{{with seed}}{{.}}{{end}}`, `{{printf "%0100d" 1}}`,
		`{{range 3}}x{{end}}`, `{{define "a"}}{{template "a"}}{{end}}`, `{{len (printf "%05d" 1) | print}}`,
		`{{html "<a>"}}{{js "'"}}{{urlquery "a b"}}{{index "abc" 1}}{{slice "abc" 1}}`, `{{addr "nope"}}`, `{{`,
	} {
		f.Add(s)
	}
	s := &Spec{Dir: "/spec", Nodes: []Node{{Name: "n"}, {Name: "m"}}}
	v := TemplateVars{TrialDir: "/trial", NodeDir: "/trial/n", Seed: 1,
		Addrs: map[string]netip.Addr{"n": netip.MustParseAddr("10.0.0.1"), "m": netip.MustParseAddr("10.0.0.2")}}
	f.Fuzz(func(t *testing.T, tmpl string) {
		if len(tmpl) > MaxSize {
			t.Skip("over MaxSize: no spec holds it")
		}
		alloc, err := allocated(func() error {
			// Twice, against one budget, as a node's fields are.
			out, err := s.expandAll("n", v, []string{tmpl, tmpl}, newBudget())
			if err == nil && len(out[0])+len(out[1]) > maxTemplateOutput {
				return fmt.Errorf("output of %d bytes", len(out[0])+len(out[1]))
			}
			return err
		})
		if alloc > maxLoadAlloc {
			t.Fatalf("expanding %d bytes allocated %d MB", len(tmpl), alloc>>20)
		}
		if err != nil && (strings.Contains(err.Error(), "\n") || strings.HasPrefix(err.Error(), "output of")) {
			t.Fatalf("error %q", err)
		}
	})
}
