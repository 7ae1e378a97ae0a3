package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDaemonUnderInit: a server whose command starts it in the background
// and returns runs on under init: true, as natively, and its clients
// reach it; the node's exit is its last process's, so a daemon that dies
// later is the node's crash, named by the daemon's exit, and its trace
// replays. Without init the same command is the lockstep error
// TestSandboxNamed checks. Natively (--native) the node likewise lives
// until its cgroup is empty, though how its last process exited is not
// known there.
func TestDaemonUnderInit(t *testing.T) {
	requireTrials(t)
	bin := repoPath("testdata", "bin", "c")
	if _, err := os.Stat(filepath.Join(bin, "pingpong_server")); err != nil {
		t.Skipf("skipping: %v (make testdata builds it)", err)
	}
	serve := filepath.Join(bin, "pingpong_server") + " 7000"
	for _, tc := range []struct {
		name, server string
		serves       bool // the client pings it; else the client sleeps
		want         OutcomeKind
		says, native string // what the outcome says, under lockstep and natively
	}{
		{"backgrounded", serve + " & exit 0", true, Pass, "", ""},
		// The classic way: a child that forks the server and exits, so
		// the server is orphaned to pid 1, in a session of its own.
		{"double fork", "(setsid " + serve + " &) ; exit 0", true, Pass, "", ""},
		{"foreground", "exec " + serve, true, Pass, "", ""},
		{"daemon dies", "(sleep 0.3; exit 3) & exit 0", false, NodeCrashed, "exited with code 3", "server: its last process exited"},
		{"daemon killed", "sh -c 'sleep 0.3; kill -SEGV $$' & exit 0", false, NodeCrashed, "was killed by SIGSEGV", "server: its last process exited"},
		{"start fails", "exit 4", false, NodeCrashed, "server/0.0 exited with code 4", "server exited with code 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := loadText(t, filepath.Join(t.TempDir(), "daemon.yaml"), fmt.Sprintf(`name: daemon
nodes:
  - name: server
    command: ["/bin/sh", "-c", %q]
    init: true
    ready: {listen: 7000}
  - name: client
    role: client
    command: ["%s/tick_client", "server", "7000", "2", "10"]
limits: {virtual_time: 10s, real_time: 60s}
`, tc.server, bin))
			if !tc.serves {
				sp.Nodes[0].ReadyPort = 0
				sp.Nodes[1].Command = []string{"/bin/sh", "-c", "sleep 5"}
			}
			seed := int64(1)
			sum, err := Run(t.Context(), sp, RunOptions{Trials: 2, Seed: &seed, Strategy: "pos", OutDir: t.TempDir(), Verify: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range sum.Results {
				if o := r.Outcome; o.Kind != tc.want || !strings.Contains(o.Detail, tc.says) {
					t.Fatalf("trial %d: %v; want %s saying %q", r.Index, o, tc.want, tc.says)
				}
				if tc.want != Pass && (r.Verify == nil || !r.Verify.Same) {
					t.Errorf("trial %d's trace did not replay: %+v", r.Index, r.Verify)
				}
			}
			native, err := Run(t.Context(), sp, RunOptions{Trials: 1, OutDir: t.TempDir(), Native: true, NativeLimit: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if o := native.Results[0].Outcome; o.Kind != tc.want || !strings.Contains(o.Detail, tc.native) {
				t.Fatalf("natively: %v; want %s saying %q", o, tc.want, tc.native)
			}
		})
	}
}

// TestInitNotReadable: lockstep's init is a copy of lockstep's zygote, its
// environment and memory lockstep's: a node's process cannot read them
// through /proc/1, though it shares the init's credentials, and the init
// holds no capability (it never execs, so the sandbox's drop from the
// bounding set alone would leave it its own). Without init, pid 1 is the
// node's own program, which it may read.
func TestInitNotReadable(t *testing.T) {
	requireTrials(t)
	for _, init := range []bool{true, false} {
		sp := loadText(t, filepath.Join(t.TempDir(), "environ.yaml"), fmt.Sprintf(`name: environ
nodes:
  - name: server
    command: ["/bin/sh", "-c", "for f in environ maps; do head -c 1 /proc/1/$f >/dev/null 2>&1 && echo read $f; done; grep CapEff /proc/1/status; sleep 0.1"]
    init: %v
  - name: client
    role: client
    command: ["/bin/sh", "-c", "sleep 0.5"]
limits: {virtual_time: 10s, real_time: 60s}
`, init))
		sum, err := Run(t.Context(), sp, RunOptions{Trials: 1, Strategy: "pos", OutDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.ReadFile(filepath.Join(sum.Results[0].Dir, "server.out"))
		if err != nil {
			t.Fatal(err)
		}
		want := "CapEff:\t0000000000000000\n"
		if !init {
			want = "read environ\nread maps\nCapEff:" // the node's own
		}
		if init && string(out) != want || !init && !strings.HasPrefix(string(out), want) {
			t.Errorf("init %v: the node printed %q, want %q", init, out, want)
		}
	}
}

// TestPrivateDirs: a node's private directory shows what the host's holds,
// takes the node's writes, keeps them across the node's crash and
// restart, and leaves the host's as it was; natively too.
func TestPrivateDirs(t *testing.T) {
	requireTrials(t)
	// Below /var/lib, as a package's state is: not below /tmp, which a
	// node has of its own already.
	dir, err := os.MkdirTemp("/var/lib", "lockstep-private-test-")
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "seed"), []byte("host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sp := loadText(t, filepath.Join(t.TempDir(), "private.yaml"), fmt.Sprintf(`name: private
nodes:
  - name: server
    command: ["/bin/sh", "-c", "cat seed; echo start >> starts; cat starts; rm seed; sleep 100"]
    workdir: %[1]s
    private_dirs: [%[1]s]
  - name: client
    role: client
    command: ["/bin/sh", "-c", "sleep 5"]
faults:
  kinds: [crash]
  nodes: [server]
  budget: 1
  from: 1s
  until: 2s
  spread: time
  max_outage: 500ms
limits: {virtual_time: 20s, real_time: 60s}
`, dir))
	seed := int64(1)
	sum, err := Run(t.Context(), sp, RunOptions{Trials: 1, Seed: &seed, Strategy: "pos", OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	r := sum.Results[0]
	out, _ := os.ReadFile(filepath.Join(r.Dir, "server.out"))
	// The first start sees the host's seed and removes it; the restart
	// finds it gone and its first start recorded.
	if r.Outcome.Kind != Pass || string(out) != "host\nstart\nstart\nstart\n" {
		t.Fatalf("%v; the server printed %q", r.Outcome, out)
	}
	native, err := Run(t.Context(), sp, RunOptions{Trials: 1, OutDir: t.TempDir(), Native: true, NativeLimit: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	out, _ = os.ReadFile(filepath.Join(native.Results[0].Dir, "server.out"))
	if !strings.HasPrefix(string(out), "host\nstart\n") {
		t.Fatalf("natively: %v; the server printed %q", native.Results[0].Outcome, out)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 || entries[0].Name() != "seed" {
		t.Fatalf("the host's directory changed: %v (%v)", entries, err)
	}
}

// TestPrivateDirsLinkNotFollowed: a node that swaps its private layers in
// its {{tmp}} for a link to a host directory does not make lockstep, which
// makes them again at the node's restart, write there.
func TestPrivateDirsLinkNotFollowed(t *testing.T) {
	requireTrials(t)
	dir, err := os.MkdirTemp("/var/lib", "lockstep-private-test-")
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	victim, err := os.MkdirTemp("/var/lib", "lockstep-victim-test-")
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(victim) })
	sp := loadText(t, filepath.Join(t.TempDir(), "link.yaml"), fmt.Sprintf(`name: link
nodes:
  - name: server
    command: ["/bin/sh", "-c", "rm -rf {{tmp}}/.private && ln -s %s {{tmp}}/.private; sleep 100"]
    private_dirs: [%s]
  - name: client
    role: client
    command: ["/bin/sh", "-c", "sleep 5"]
faults:
  kinds: [crash]
  nodes: [server]
  budget: 1
  from: 1s
  until: 2s
  spread: time
  max_outage: 500ms
limits: {virtual_time: 20s, real_time: 60s}
`, victim, dir))
	seed := int64(1)
	sum, err := Run(t.Context(), sp, RunOptions{Trials: 1, Seed: &seed, Strategy: "pos", OutDir: t.TempDir()})
	if err != nil && !strings.Contains(err.Error(), "private directory") {
		t.Fatal(err)
	}
	if sum != nil && len(sum.Results) > 0 {
		t.Logf("outcome: %v", sum.Results[0].Outcome)
	} else {
		t.Logf("run: %v", err)
	}
	if entries, err := os.ReadDir(victim); err != nil || len(entries) != 0 {
		t.Fatalf("lockstep wrote in the host's directory the node linked to: %v (%v)", entries, err)
	}
}
