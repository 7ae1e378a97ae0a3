package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/lockstep-dev/lockstep/internal/ocitest"
	"github.com/lockstep-dev/lockstep/internal/testutil"
)

// composeFile runs the image tests' two nodes from a compose file: the
// image is an OCI layout named through x-lockstep (compose's image: names
// one to pull), and the faults come from the top-level x-lockstep.
const composeFile = `services:
  server:
    image: example/image-node
    x-lockstep: {image: "layout:v1"}
    command: [server, "7000"]
    expose: ["7000"]
    volumes: [data:/data]
  client:
    image: example/image-node
    x-lockstep: {image: "layout:v1"}
    entrypoint: /bin/image_node client
    command: server 7000 6 100
    depends_on: [server]
volumes:
  data: {}
x-lockstep:
  faults: {kinds: [crash], budget: 1, from: 450ms, until: 5s, spread: false}
  time: {delays: 0}
  limits: {virtual_time: 30s, real_time: 60s}
`

// lockstep import writes a spec from a compose file, and lockstep run
// takes the compose file itself: the trials run from the image, and a
// failing trace replays.
func TestImportAndRunCompose(t *testing.T) {
	bin := filepath.Join("..", "..", "testdata", "bin", "go", "image_node")
	testutil.RequireBinary(t, bin)
	prog, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Setenv("LOCKSTEP_IMAGE_CACHE", filepath.Join(dir, "cache"))
	cfg := v1.ImageConfig{Env: []string{"PATH=/bin"}, Entrypoint: []string{"image_node"}}
	if _, err := ocitest.WriteLayout(filepath.Join(dir, "layout"), "v1", cfg, ocitest.Layer{Files: []ocitest.File{
		{Name: "bin/image_node", Body: prog, Mode: 0o755},
		{Name: "image-marker", Body: []byte("from the image\n")},
	}}); err != nil {
		t.Fatal(err)
	}
	compose := filepath.Join(dir, "compose.yaml")
	os.WriteFile(compose, []byte(composeFile), 0o644)

	code, stdout, stderr := runCLI(t, "import", compose)
	if code != 0 {
		t.Fatalf("import: exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"  - name: server\n    role: server\n    image: \"layout:v1\"\n    command: [\"server\", \"7000\"]\n    ready: {listen: 7000}\n",
		"    entrypoint: [\"/bin/image_node\", \"client\"]\n    command: [\"server\", \"7000\", \"6\", \"100\"]\n",
		"# not carried over: volumes",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("imported spec lacks %q:\n%s", want, stdout)
		}
	}
	if code, _, stderr := runCLI(t, "import", filepath.Join(dir, "missing.yaml")); code != 2 || strings.Count(stderr, "\n") != 1 {
		t.Errorf("import of a missing file: exit %d, %q", code, stderr)
	}

	requireTrials(t)
	out := filepath.Join(dir, "out")
	code, stdout, stderr = runCLI(t, "run", compose, "-q", "--trials", "6", "-o", out)
	if code != 1 && code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, stdout, stderr)
	}
	traces, _ := filepath.Glob(filepath.Join(out, "trials", "*", "trace.jsonl"))
	if code != 1 || len(traces) == 0 {
		t.Fatalf("run: exit %d, %d traces, want failing trials (a crash restarts the server)\n%s", code, len(traces), stdout)
	}
	code, stdout, stderr = runCLI(t, "replay", traces[0], "-o", filepath.Join(dir, "replay"))
	if code != 1 || !strings.Contains(stdout, "same outcome and same op sequence") {
		t.Fatalf("replay: exit %d\n%s%s", code, stdout, stderr)
	}
}
