package spec_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/image"
	"github.com/lockstep-dev/lockstep/spec"
)

// TestBadSpecs: every file in testdata/specs/bad fails to load with exactly
// the one-line error in its .err file (file:line: field: message; the
// corpus's absolute directory is written {{dir}}). An image node's errors
// come when its image is resolved, as the CLI does right after loading.
func TestBadSpecs(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	files, err := filepath.Glob(filepath.Join(filepath.Dir(file), "..", "testdata", "specs", "bad", "*.yaml"))
	if err != nil || len(files) < 60 {
		t.Fatalf("want at least 60 bad specs, found %d (%v)", len(files), err)
	}
	dir, err := filepath.Abs(filepath.Dir(files[0]))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("LOCKSTEP_IMAGE_CACHE", t.TempDir())
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(strings.TrimSuffix(name, ".yaml"), func(t *testing.T) {
			want, err := os.ReadFile(strings.TrimSuffix(f, ".yaml") + ".err")
			if err != nil {
				t.Fatalf("no .err file: %v", err)
			}
			sp, err := spec.Load(f)
			if err == nil {
				if err = image.Resolve(context.Background(), sp); err == nil {
					t.Fatal("loaded and resolved without error")
				}
				if !strings.Contains(string(want), ".image: ") {
					t.Fatalf("loaded, but its images failed to resolve: %v", err)
				}
			}
			got := strings.Replace(err.Error(), f, name, 1)
			got = strings.ReplaceAll(got, dir, "{{dir}}")
			if strings.Contains(got, "\n") {
				t.Fatalf("error spans lines: %q", got)
			}
			if got != strings.TrimSpace(string(want)) {
				t.Fatalf("error\n  got  %s\n  want %s", got, strings.TrimSpace(string(want)))
			}
		})
	}
}
