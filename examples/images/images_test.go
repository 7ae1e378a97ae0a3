package images_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/lockstep-dev/lockstep/engine"
	"github.com/lockstep-dev/lockstep/examples/internal/extest"
	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/internal/testutil"
)

func TestMain(m *testing.M) { extest.Main(m) }

// requireImages skips unless build.sh has put the example's images in
// podman's store (building them takes minutes: not part of make test).
func requireImages(t *testing.T) {
	t.Helper()
	for _, name := range []string{"localhost/lockstep-redis:latest", "localhost/lockstep-kvclient:latest"} {
		if err := exec.Command("podman", "image", "exists", name).Run(); err != nil {
			t.Skipf("image %s not in podman's store (examples/images/build.sh builds it): skipping the images example", name)
		}
	}
	testutil.RequireTrials(t)
}

// One trial from spec.yaml and one from compose.yaml, the same system:
// each passes or loses acknowledged writes under its partition (as
// examples/redis does), and each trace replays.
func TestRedisFromImages(t *testing.T) {
	requireImages(t)
	for _, file := range []string{"spec.yaml", "compose.yaml"} {
		t.Run(file, func(t *testing.T) {
			sp := extest.LoadSpec(t, file)
			sum := extest.Run(t, sp, engine.RunOptions{Trials: 1, TraceAll: true})
			r := sum.Results[0]
			if k := r.Outcome.Kind; k != engine.Pass && k != engine.NotLinearizable {
				t.Fatalf("trial 0: %v", r.Outcome)
			}
			rr := extest.Replay(t, r.TracePath)
			if !rr.Same {
				t.Fatalf("replay of trial 0 (%s) differs: %s", r.Outcome.Kind, rr.Diff)
			}
		})
	}
}

// TestImagesExplained: lockstep explain on the first failing trial of
// spec.yaml (POS, seed 1): the nodes run from images, and explain's
// forced runs and its minimized run start them from the images as the
// trial did. It keeps the partition of r1's host (as on the host's
// programs, examples/redis), and its minimized trace replays, in explain
// and here. About 30 runs of the trial (2 to 4 minutes here), so only
// with LOCKSTEP_EXPLAIN_EXAMPLES=1.
func TestImagesExplained(t *testing.T) {
	if os.Getenv("LOCKSTEP_EXPLAIN_EXAMPLES") == "" {
		t.Skip("set LOCKSTEP_EXPLAIN_EXAMPLES=1 to explain a failing trial from the images (minutes)")
	}
	requireImages(t)
	ex, _ := extest.ExplainFirst(t, extest.LoadSpec(t, "spec.yaml"), 5)
	cut := false
	for _, r := range ex.Races {
		cut = cut || r.Decision.Op.Kind == faults.Partition && r.Decision.Op.Node == "r1"
	}
	if !cut {
		t.Errorf("no kept decision is the partition of r1: %d races", len(ex.Races))
	}
	if ex.MinimizedTrace == "" || !ex.MinimizedReplays {
		t.Fatalf("minimized trace %q, replays in explain %v: %s", ex.MinimizedTrace, ex.MinimizedReplays, ex.MinimizedDiverged)
	}
	if rr := extest.Replay(t, ex.MinimizedTrace); !rr.Same {
		t.Fatalf("replay of the minimized trace differs: %s", rr.Diff)
	}
}
