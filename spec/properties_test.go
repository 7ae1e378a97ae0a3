package spec

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The forms properties: takes: never: default alone, a list mixing
// default, patterns and mappings, sometimes with required, and unique.
func TestProperties(t *testing.T) {
	base := "name: p\nnodes:\n  - name: s1\n    command: [\"/bin/true\"]\n  - name: c1\n    role: client\n    command: [\"/bin/true\"]\n"
	for _, tc := range []struct {
		name, text string
		want       []string // kind:name, in order
		check      func(t *testing.T, ps []Property)
	}{
		{"default alone", "properties: {never: default}\n",
			[]string{"never:go panic", "never:go fatal error", "never:rust panic", "never:jvm uncaught exception", "never:sanitizer report", "never:failed assertion"}, nil},
		{"mixed", "properties:\n  never: [\"two leaders\", {match: \"corrupt\", nodes: [s1], name: disk}]\n  eventually: [\"^ready$\"]\n  sometimes: [{match: \"elected\", required: true}]\n",
			[]string{"never:two leaders", "never:disk", "eventually:^ready$", "sometimes:elected"},
			func(t *testing.T, ps []Property) {
				if !ps[1].Applies("s1") || ps[1].Applies("c1") || !ps[0].Applies("c1") {
					t.Errorf("nodes: %v and %v", ps[0].Nodes, ps[1].Nodes)
				}
				if !ps[3].Required || ps[2].Required {
					t.Errorf("required: %v", ps)
				}
			}},
		{"unique", "properties:\n  unique: [\"won term (\\\\d+)\", {match: \"primary of epoch (\\\\d+)\", nodes: [s1], name: one primary}]\n",
			[]string{"unique:won term (\\d+)", "unique:one primary"},
			func(t *testing.T, ps []Property) {
				if ps[0].Pattern.NumSubexp() != 1 || !ps[1].Applies("s1") || ps[1].Applies("c1") {
					t.Errorf("%v", ps)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "p.yaml")
			if err := os.WriteFile(path, []byte(base+tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			sp, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range sp.Properties {
				got = append(got, string(p.Kind)+":"+p.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("properties %v, want %v", got, tc.want)
			}
			if tc.check != nil {
				tc.check(t, sp.Properties)
			}
		})
	}
}

// The default never set matches what runtimes and sanitizers print when a
// program broke its own assumptions, and not ordinary lines about them.
func TestDefaultNever(t *testing.T) {
	match := func(line string) string {
		for _, p := range DefaultNever() {
			if p.Pattern.MatchString(line) {
				return p.Name
			}
		}
		return ""
	}
	for line, want := range map[string]string{
		"panic: runtime error: slice bounds out of range [:4] with capacity 2":    "go panic",
		"fatal error: concurrent map writes":                                      "go fatal error",
		`Exception in thread "main" java.lang.IllegalStateException: two leaders`: "jvm uncaught exception",
		"==4242==ERROR: AddressSanitizer: heap-use-after-free on address 0x6020":  "sanitizer report",
		"lockd: lockd.c:88: grant: Assertion `owner == NULL' failed.":             "failed assertion",
		"thread 'main' panicked at src/main.rs:9:5:":                              "rust panic",
		"assertion failed: leader.is_some()":                                      "failed assertion",
		"level=info msg=\"recovered from a panic: none\"":                         "",
		"2026/12/01 10:00:00 no panic: here":                                      "",
	} {
		if got := match(line); got != want {
			t.Errorf("%q matched %q, want %q", line, got, want)
		}
	}
}
