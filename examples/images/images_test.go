package images_test

import (
	"os/exec"
	"testing"

	"github.com/lockstep-dev/lockstep/engine"
	"github.com/lockstep-dev/lockstep/examples/internal/extest"
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
