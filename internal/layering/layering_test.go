package layering

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLayering: lockstep's packages import in the direction docs/architecture.md
// gives (see Rules).
func TestLayering(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	g, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(g) < 20 {
		t.Fatalf("read %d packages from %s: not lockstep's module", len(g), root)
	}
	for _, v := range g.Check(Rules) {
		t.Error(v)
	}
	// What the rules are about, in the log (go test -v): spec's and
	// report's reach.
	for _, p := range []string{"spec", "report", "result"} {
		t.Logf("%s reaches %s", p, strings.Join(g.Deps(p), ", "))
	}
}

// TestCheck: the checker finds a leak through any chain, honours allow
// lists and "$", and reports a rule whose package is gone.
func TestCheck(t *testing.T) {
	g := Graph{
		"spec":              {"image"},
		"image":             {"tracer/stats"},
		"report":            {"result"},
		"result":            {"tracer/stats", "sched"},
		"sched":             nil,
		"tracer/stats":      nil,
		"tracer":            {"tracer/internal/x", "sched"},
		"tracer/internal/x": nil,
		"cmd":               {"report", "tracer"},
	}
	for _, tc := range []struct {
		name string
		rule Rule
		want []string
	}{
		{"allow list, indirect", Rule{Pkg: "spec", Only: []string{"image"}, Why: "w"}, []string{"spec reaches tracer/stats (via spec → image → tracer/stats): w"}},
		{"allow list covers subpackages", Rule{Pkg: "spec", Only: []string{"image", "tracer"}, Why: "w"}, nil},
		{"$ is the package alone", Rule{Pkg: "report", Never: []string{"tracer$"}, Why: "w"}, nil},
		{"a prefix covers subpackages", Rule{Pkg: "report", Never: []string{"tracer"}, Why: "w"}, []string{"report reaches tracer/stats (via report → result → tracer/stats): w"}},
		{"a prefix is a path element", Rule{Pkg: "cmd", Never: []string{"trace"}, Why: "w"}, nil},
		{"every reach", Rule{Pkg: "cmd", Never: []string{"sched", "tracer/internal"}, Why: "w"},
			[]string{"cmd reaches sched (via cmd → tracer → sched): w", "cmd reaches tracer/internal/x (via cmd → tracer → tracer/internal/x): w"}},
		{"no imports, empty allow list", Rule{Pkg: "sched", Only: []string{}, Why: "w"}, nil},
		{"missing package", Rule{Pkg: "gone", Never: []string{"x"}, Why: "w"}, []string{"gone: no such package (rule: w)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := g.Check([]Rule{tc.rule})
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}
