package engine

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/spec"
)

// A spec's env entry replaces the base entry of the same name instead of
// adding a second one that some programs would read and others not.
func TestNodeEnv(t *testing.T) {
	t.Setenv("JAVA_HOME", "")
	base := baseEnv()
	tests := []struct {
		name string
		spec []string
		want []string
	}{
		{"none", nil, base},
		{"added", []string{"FOO=1"}, append(append([]string(nil), base...), "FOO=1")},
		{"replaces PATH", []string{"PATH=/opt/bin"}, append([]string{"PATH=/opt/bin"}, base[1:]...)},
		{"prefix is not a match", []string{"PATHS=x"}, append(append([]string(nil), base...), "PATHS=x")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nodeEnv(tt.spec); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// Nodes run on one CPU, and lockstep says so in GOMAXPROCS, whichever way
// they start (at once, or later by the trial's step), unless the node's env
// sets it; --native runs leave it unset. Go libraries that size GOMAXPROCS
// from cgroup files read per-run /proc contents without it, and their
// schedules did not replay (see tracer.prepareLaunch).
func TestNodesGOMAXPROCS(t *testing.T) {
	skipUnlessTrials(t)
	sp, err := spec.Parse("s.yaml", []byte(`name: t
nodes:
  - name: first
    role: client
    command: ["/bin/sh", "-c", "echo \"[$GOMAXPROCS]\""]
  - name: later
    role: client
    start_delay: 10ms
    command: ["/bin/sh", "-c", "echo \"[$GOMAXPROCS]\""]
  - name: own
    role: client
    env: {GOMAXPROCS: "3"}
    command: ["/bin/sh", "-c", "echo \"[$GOMAXPROCS]\""]
network:
  subnet: 10.78.0.0/24
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, native := range []bool{false, true} {
		sum, err := Run(context.Background(), sp, RunOptions{Trials: 1, OutDir: t.TempDir(), Native: native, NativeLimit: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		r := sum.Results[0]
		want := map[string]string{"first": "[1]", "later": "[1]", "own": "[3]"}
		if native {
			want = map[string]string{"first": "[]", "later": "[]", "own": "[3]"}
		}
		for node, w := range want {
			b, err := os.ReadFile(filepath.Join(r.Dir, node+".out"))
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(string(b)); got != w {
				t.Errorf("native %v: node %s saw GOMAXPROCS %s, want %s", native, node, got, w)
			}
		}
	}
}
