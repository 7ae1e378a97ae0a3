package engine

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/spec"
)

// TestNativeLimitDefault: without --native-limit a native trial may run
// as long as the spec's limits.real_time, so a client that takes 6 s
// passes (a fixed 5 s called it a hang); with a shorter limit it is one.
func TestNativeLimitDefault(t *testing.T) {
	requireTrials(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "slow.yaml")
	os.WriteFile(path, []byte("name: slow\nnodes:\n  - {name: c, role: client, command: [/bin/sleep, \"6\"]}\nlimits: {real_time: 20s}\n"), 0o644)
	sp, err := spec.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		limit time.Duration
		want  OutcomeKind
	}{{0, Pass}, {2 * time.Second, Hang}} {
		sum, err := Run(context.Background(), sp, RunOptions{Trials: 1, OutDir: t.TempDir(), Native: true, NativeLimit: tc.limit})
		if err != nil {
			t.Fatal(err)
		}
		if got := sum.Results[0].Outcome; got.Kind != tc.want {
			t.Errorf("native limit %v: %v, want %s", tc.limit, got, tc.want)
		}
	}
}
