package tracer

import (
	"context"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"
)

func TestSmokePingPong(t *testing.T) {
	if _, err := os.Stat("/tmp/smoke/pp"); err != nil {
		t.Skip("no smoke binary")
	}
	tr := New(Options{Gated: func(a netip.Addr) bool { return a.IsLoopback() }, Capture: os.Getenv("NOCAP") == ""})
	defer tr.Close()
	out, _ := os.CreateTemp(t.TempDir(), "out")
	if _, err := tr.Launch(LaunchConfig{Node: "server", Argv: []string{"/tmp/smoke/pp", "server", "7222"}, Stdout: out, Stderr: out}); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Launch(LaunchConfig{Node: "client", Argv: []string{"/tmp/smoke/pp", "client", "7222", os.Getenv("ROUNDS")}, Stdout: out, Stderr: out}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	steps := 0
	start := time.Now()
	err := tr.Drive(ctx, func(st *State, _ Released) (Action, error) {
		if st.Live == 0 {
			return Action{Stop: true}, nil
		}
		if len(st.Enabled) == 0 {
			t.Fatalf("deadlock after %d steps: pending %v", steps, st.Pending)
		}
		steps++
		return Action{Release: st.Enabled[0].ID}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out.Name())
	t.Logf("%d steps in %v; stats %+v\n%s", steps, time.Since(start), tr.Stats(), b)
	if !strings.Contains(string(b), "done "+os.Getenv("ROUNDS")) {
		t.Fatalf("client did not finish: %s", b)
	}
}
