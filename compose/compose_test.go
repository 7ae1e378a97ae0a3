package compose

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestImport: each testdata/NAME.compose.yaml imports to NAME.spec.yaml, or
// fails with the one-line error in NAME.err.
func TestImport(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.compose.yaml"))
	if err != nil || len(files) < 8 {
		t.Fatalf("want at least 8 compose files, found %d (%v)", len(files), err)
	}
	for _, f := range files {
		base := strings.TrimSuffix(f, ".compose.yaml")
		t.Run(filepath.Base(base), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if !Is(f, data) {
				t.Fatal("not recognized as a compose file")
			}
			got, err := Import(f, data)
			golden := base + ".spec.yaml"
			if err != nil {
				golden = base + ".err"
				got = []byte(err.Error() + "\n")
				if strings.Count(err.Error(), "\n") > 0 {
					t.Fatalf("error spans lines: %q", err)
				}
			}
			if *update {
				os.WriteFile(golden, got, 0o644)
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if string(got) != string(want) {
				t.Errorf("%s differs:\n--- got\n%s--- want\n%s", golden, got, want)
			}
		})
	}
}

func TestIs(t *testing.T) {
	for _, c := range []struct {
		path, data string
		want       bool
	}{
		{"x/compose.yaml", "nodes: []", true},
		{"x/docker-compose.yml", "", true},
		{"app.yaml", "services:\n  a: {image: x}\n", true},
		{"spec.yaml", "name: t\nnodes:\n  - name: a\n", false},
		{"spec.yaml", "name: t\nservices: 1\nnodes: []\n", false},
		{"spec.yaml", ": not yaml [", false},
	} {
		if got := Is(c.path, []byte(c.data)); got != c.want {
			t.Errorf("Is(%q, %q) = %v, want %v", c.path, c.data, got, c.want)
		}
	}
}

func TestSplitWords(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{`redis-server --save ""`, []string{"redis-server", "--save", ""}},
		{`sh -c 'echo $HOME; exit 1'`, []string{"sh", "-c", "echo $HOME; exit 1"}},
		{`a\ b "c \"d\" \x"  e`, []string{"a b", `c "d" \x`, "e"}},
		{"  ", nil},
	} {
		got, err := splitWords(c.in)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("splitWords(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}
