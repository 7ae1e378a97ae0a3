package engine

import (
	"archive/tar"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	v1 "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/internal/ocitest"
	"github.com/lockstep-dev/lockstep/internal/testutil"
	"github.com/lockstep-dev/lockstep/spec"
)

// imageSpec is a 2-node system whose nodes both run from one image holding
// only a static program and a marker file (no shell, no libc): the server
// counts its starts in /data/starts, a path of the image's root, and the
// client fails when a pong comes from a restarted server. The client's
// working directory is not in the image: lockstep makes it.
const imageSpec = `name: image-nodes
nodes:
  - name: server
    image: layout:v1
    command: [server, "7000"]
    ready: {listen: 7000}
  - name: client
    role: client
    image: layout:v1
    entrypoint: [/bin/image_node, client]
    command: [server, "7000", "6", "100"]
    workdir: /made/by/lockstep
faults:
  kinds: [crash]
  budget: 1
  from: 450ms
  until: 5s
  # Offered from 450 ms on: the client is done at 600 ms, long before
  # until, so a trigger drawn over the window would miss it.
  spread: false
time:
  delays: 0
limits:
  virtual_time: 30s
  real_time: 60s
`

// writeImageSpec builds the image (an OCI layout) and the spec beside it.
func writeImageSpec(t *testing.T) string {
	t.Helper()
	bin := repoPath("testdata", "bin", "go", "image_node")
	testutil.RequireBinary(t, bin)
	prog, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Setenv("LOCKSTEP_IMAGE_CACHE", filepath.Join(dir, "cache"))
	cfg := v1.ImageConfig{Entrypoint: []string{"image_node"}, Env: []string{"PATH=/bin"}, WorkingDir: "/data"}
	_, err = ocitest.WriteLayout(filepath.Join(dir, "layout"), "v1", cfg,
		ocitest.Layer{Files: []ocitest.File{
			{Name: "bin/", Type: tar.TypeDir},
			{Name: "bin/image_node", Body: prog, Mode: 0o755},
			{Name: "data/", Type: tar.TypeDir},
		}},
		ocitest.Layer{Files: []ocitest.File{{Name: "image-marker", Body: []byte("from the image\n")}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "image.yaml")
	if err := os.WriteFile(path, []byte(imageSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Image nodes run in the image's root (the server checks it sees the
// image's marker and no host shell, lockstep's /proc, /dev, hosts file and
// trial directory, a read-only /proc/sys); the writable layer survives a
// crash and restart (the restarted server counts 2 and the client fails)
// and each trial starts from the image (every server's first start counts
// 1); failing and passing traces replay.
func TestImageNodes(t *testing.T) {
	requireTrials(t)
	sp, err := spec.Load(writeImageSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Run(context.Background(), sp, RunOptions{Trials: 12, OutDir: t.TempDir(), TraceAll: true})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Errors != 0 {
		t.Fatalf("lockstep errors: %v", sum.FirstError.Outcome)
	}
	t.Logf("outcomes: %v", sum.ByKind)
	var failing, passing *TrialResult
	for _, r := range sum.Results {
		out, err := os.ReadFile(filepath.Join(r.Dir, "server.out"))
		if err != nil {
			t.Fatal(err)
		}
		restarted := false
		for _, rec := range traceRecords(t, r) {
			restarted = restarted || rec.Op.Kind == faults.Restart
		}
		starts := strings.Fields(string(out))
		switch {
		case r.Outcome.Kind == Pass && passing == nil:
			passing = r
		case r.Outcome.Kind != Pass && failing == nil:
			failing = r
		}
		if len(starts) < 2 || !reflect.DeepEqual(starts[:2], []string{"start", "1"}) {
			errOut, _ := os.ReadFile(filepath.Join(r.Dir, "server.err"))
			t.Fatalf("trial %d: server output %q (stderr %q), want a first start counted 1: the image's root, clean", r.Index, out, errOut)
		}
		if restarted && !reflect.DeepEqual(starts, []string{"start", "1", "start", "2"}) {
			t.Fatalf("trial %d: restarted server's output %q, want its second start counted 2 from the writable layer", r.Index, out)
		}
		if r.Outcome.Kind != Pass && r.Outcome.Kind != ClientFailed {
			t.Fatalf("trial %d: %v", r.Index, r.Outcome)
		}
		if _, err := os.Stat(filepath.Join(r.Dir+".server.root", "upper", "data", "starts")); err != nil {
			t.Fatalf("trial %d: the writable layer is not beside the trial directory: %v", r.Index, err)
		}
	}
	if failing == nil || passing == nil {
		r := sum.Results[0]
		cout, _ := os.ReadFile(filepath.Join(r.Dir, "client.out"))
		cerr, _ := os.ReadFile(filepath.Join(r.Dir, "client.err"))
		t.Fatalf("want failing and passing trials (a crash restarts the server in some), got %v; trial 0: %v, client: %q %q", sum.ByKind, r.Outcome, cout, cerr)
	}
	for _, r := range []*TrialResult{failing, passing} {
		rr, err := Replay(context.Background(), r.TracePath, filepath.Join(t.TempDir(), "replay"))
		if err != nil {
			t.Fatal(err)
		}
		if !rr.Same {
			t.Fatalf("replay of trial %d (%s) differs: %s", r.Index, r.Outcome.Kind, rr.Diff)
		}
	}
}
