package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSandboxNamed: what the sandbox does to a node that natively would
// run on is named in the outcome. A server whose command starts the server
// in the background and returns (`&`, a daemonize option) is ended by its
// PID namespace's end, which the kernel makes at its first process's exit:
// a lockstep error saying so, not a deadlock of the clients that wait for
// it. A node that dies of a write the read-only host refused is a crash
// whose outcome says why. The same exit without a process left, a
// client's, and one with a failing code are what they were.
func TestSandboxNamed(t *testing.T) {
	requireTrials(t)
	for _, tc := range []struct {
		name, server, client string
		want                 OutcomeKind // "" for Run's error
		says                 string
	}{
		{"backgrounded", "sleep 100 & sleep 101 & exit 0", "sleep 1", "", "server/0 exited with code 0, and the kernel killed its 2 other processes with it"},
		{"alone", "exit 0", "sleep 1", Pass, ""},
		{"client's", "sleep 100", "sleep 100 & exit 0", Pass, ""},
		{"failing", "sleep 100 & exit 3", "sleep 1", NodeCrashed, "exited with code 3"},
		{"read-only", "echo x > /etc/lockstep-probe || exit 7; sleep 100", "sleep 1", NodeCrashed, `exited with code 7; its output says "Read-only file system": a node sees the host's files read-only`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := loadText(t, filepath.Join(t.TempDir(), "fg.yaml"), fmt.Sprintf(`name: fg
nodes:
  - name: server
    command: ["/bin/sh", "-c", %q]
  - name: client
    role: client
    command: ["/bin/sh", "-c", %q]
limits: {virtual_time: 10s, real_time: 60s}
`, tc.server, tc.client))
			sum, err := Run(t.Context(), sp, RunOptions{Trials: 1, Strategy: "pos", OutDir: t.TempDir()})
			if tc.want == "" {
				if err == nil || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "run it in the foreground") {
					t.Fatalf("err %v; want it to say %q and why", err, tc.says)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o := sum.Results[0].Outcome; o.Kind != tc.want || !strings.Contains(o.Detail, tc.says) {
				t.Fatalf("%v; want %s saying %q", o, tc.want, tc.says)
			}
		})
	}
}

// TestReadyOnAnotherPort: a server whose ready.listen names another port
// than it opens leaves the nodes after it unstarted for good. That wait is
// the spec's, so the trial is a lockstep error naming both ports (in trial
// 0, the campaign stops with it), not a deadlock of the system; a server
// that listens where its ready.listen says runs as before.
func TestReadyOnAnotherPort(t *testing.T) {
	requireTrials(t)
	bin := repoPath("testdata", "bin", "c")
	if _, err := os.Stat(filepath.Join(bin, "pingpong_server")); err != nil {
		t.Skipf("skipping: %v (make testdata builds it)", err)
	}
	for _, tc := range []struct {
		name   string
		listen int
		says   string // "" for a pass
	}{
		{"another", 7001, "client waits for server to listen on port 7000 (its ready.listen), but server listens on 7001 and not there"},
		{"the same", 7000, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := loadText(t, filepath.Join(t.TempDir(), "ready.yaml"), fmt.Sprintf(`name: ready
nodes:
  - name: server
    command: ["%[1]s/pingpong_server", "%[2]d"]
    ready: {listen: 7000}
  - name: client
    role: client
    command: ["%[1]s/tick_client", "server", "7000", "2", "10"]
limits: {virtual_time: 10s, real_time: 60s}
`, bin, tc.listen))
			sum, err := Run(t.Context(), sp, RunOptions{Trials: 1, Strategy: "pos", OutDir: t.TempDir()})
			if tc.says != "" {
				if err == nil || !strings.Contains(err.Error(), "where node server could not start") || !strings.Contains(err.Error(), tc.says) {
					t.Fatalf("err %v; want it to say %q", err, tc.says)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o := sum.Results[0].Outcome; o.Kind != Pass {
				t.Fatalf("%v, want a pass", o)
			}
		})
	}
}

// TestNodeHostName: a node's host name is its own name, under lockstep and
// natively, whatever the host's is, so a program that names itself after
// its host (an Erlang short name, a JVM's local address) sees what it
// would on a machine of that name.
func TestNodeHostName(t *testing.T) {
	requireTrials(t)
	sp := loadText(t, filepath.Join(t.TempDir(), "host.yaml"), `name: host
nodes:
  - name: alpha
    command: ["/bin/sh", "-c", "echo $(hostname) $(uname -n); sleep 0.1"]
  - name: client
    role: client
    command: ["/bin/sh", "-c", "cat /proc/sys/kernel/hostname"]
limits: {virtual_time: 10s, real_time: 60s}
`)
	for _, native := range []bool{false, true} {
		sum, err := Run(t.Context(), sp, RunOptions{Trials: 1, Strategy: "pos", OutDir: t.TempDir(), Native: native})
		if err != nil {
			t.Fatal(err)
		}
		r := sum.Results[0]
		if r.Outcome.Kind != Pass {
			t.Fatalf("native %v: %v", native, r.Outcome)
		}
		for node, want := range map[string]string{"alpha": "alpha alpha\n", "client": "client\n"} {
			out, err := os.ReadFile(filepath.Join(r.Dir, node+".out"))
			if err != nil || string(out) != want {
				t.Errorf("native %v: %s printed %q (%v), want %q", native, node, out, err, want)
			}
		}
	}
}
