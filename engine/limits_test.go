package engine

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/netns"
	"github.com/lockstep-dev/lockstep/spec"
)

// TestLimitsHog: a node exhausting memory, threads, its tmpfs mounts and
// its output at once is stopped by each limit; the host goes on (the test
// runs on), and the outcome names each limit it reached.
func TestLimitsHog(t *testing.T) {
	requireTrials(t)
	for _, native := range []bool{false, true} {
		name, file := "lockstep", "hog.yaml"
		if native {
			// A native node's /tmp is the host's: no files there.
			name, file = "native", "hog-native.yaml"
		}
		t.Run(name, func(t *testing.T) {
			sp, err := spec.Load(repoPath("testdata", "specs", "limits", file))
			if err != nil {
				t.Fatal(err)
			}
			sum, err := Run(context.Background(), sp, RunOptions{Trials: 1, OutDir: t.TempDir(), Native: native, NativeLimit: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			r := sum.Results[0]
			t.Logf("outcome: %v", r.Outcome)
			lpid := "client/0"
			if native {
				lpid = "client"
			}
			wants := []string{
				"client " + lpid + " was killed by the OOM killer at its 128 MiB memory limit (limits.node.memory)",
				"node client reached its limit of 32 processes and threads (limits.node.pids)",
				"node client's stdout passed its 1 MiB output limit and was cut there (limits.node.output)",
			}
			if !native {
				wants = append(wants, "node client's /tmp was full at its 8 MiB limit (limits.node.tmpfs)",
					"node client's /var/tmp was full at its 8 MiB limit (limits.node.tmpfs)",
					"node client's /dev/shm was full at its 8 MiB limit (limits.node.tmpfs)")
			}
			for _, want := range wants {
				if r.Outcome.Kind != ClientFailed || !strings.Contains(r.Outcome.Detail, want) {
					t.Errorf("outcome %v, want client-failed with %q", r.Outcome, want)
				}
			}
			errOut, _ := os.ReadFile(filepath.Join(r.Dir, "client.err"))
			wants = []string{"threads: ", "then Resource temporarily unavailable", "output: 16 MiB written"}
			if !native {
				wants = append(wants, "fill /tmp/hog: 8 MiB, then No space left on device", "fill /dev/shm/hog: 8 MiB, then No space left on device",
					"fill /var/tmp/hog: 8 MiB, then No space left on device")
			}
			for _, want := range wants {
				if !strings.Contains(string(errOut), want) {
					t.Errorf("client.err lacks %q:\n%s", want, errOut)
				}
			}
			fi, err := os.Stat(filepath.Join(r.Dir, "client.out"))
			if err != nil {
				t.Fatal(err)
			}
			if note := int64(200); fi.Size() > 1<<20+note {
				t.Errorf("client.out is %d bytes, want its 1 MiB cap and a note", fi.Size())
			}
		})
	}
}

// TestResolveLimits: defaults come from the host's memory and pid_max,
// the number of nodes and of jobs; the spec's fields win, node over
// limits.node.
func TestResolveLimits(t *testing.T) {
	const gib = 1 << 30
	host := hostResources{memory: 32 * gib, pidMax: 32768}
	mk := func(nodes int, lim spec.NodeLimits) *spec.Spec {
		sp := &spec.Spec{}
		sp.Limits.Node = lim
		for i := range nodes {
			sp.Nodes = append(sp.Nodes, spec.Node{Name: string(rune('a' + i))})
		}
		return sp
	}
	for _, tc := range []struct {
		name      string
		sp        *spec.Spec
		jobs      int
		total     netns.Limits
		a         nodeLimit
		memorySet bool
	}{
		{"one node, one job", mk(1, spec.NodeLimits{}), 1,
			netns.Limits{Memory: 24 * gib, Pids: 16384},
			nodeLimit{cg: netns.Limits{Memory: 24 * gib, Pids: 16384}, tmpfs: 6 * gib, tmp: 12 * gib, output: 64 << 20}, false},
		{"four nodes, two jobs", mk(4, spec.NodeLimits{}), 2,
			netns.Limits{Memory: 12 * gib, Pids: 8192},
			nodeLimit{cg: netns.Limits{Memory: 3 * gib, Pids: 2048}, tmpfs: 3 * gib / 4, tmp: 3 * gib / 2, output: 64 << 20}, false},
		{"many nodes: the floors", mk(64, spec.NodeLimits{}), 2,
			netns.Limits{Memory: 12 * gib, Pids: 8192},
			nodeLimit{cg: netns.Limits{Memory: gib, Pids: 1024}, tmpfs: gib / 4, tmp: gib / 2, output: 64 << 20}, false},
		{"the spec's", mk(2, spec.NodeLimits{Memory: 2 * gib, Pids: 100, Tmpfs: 1 << 20, Tmp: 8 << 20, Output: 4 << 10, CPUWeight: 50}), 1,
			netns.Limits{Memory: 24 * gib, Pids: 16384},
			nodeLimit{cg: netns.Limits{Memory: 2 * gib, Pids: 100, CPUWeight: 50}, tmpfs: 1 << 20, tmp: 8 << 20, output: 4 << 10, memorySet: true, pidsSet: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := resolveLimits(tc.sp, host, tc.jobs)
			if cl.total != tc.total {
				t.Errorf("total %+v, want %+v", cl.total, tc.total)
			}
			if got := cl.nodes["a"]; got != tc.a {
				t.Errorf("node a %+v, want %+v", got, tc.a)
			}
		})
	}
	// A node's own limits override limits.node field by field.
	sp := mk(2, spec.NodeLimits{Memory: 2 * gib, Pids: 100})
	sp.Nodes[1].Limits = spec.NodeLimits{Memory: 4 * gib}
	cl := resolveLimits(sp, host, 1)
	if b := cl.nodes["b"]; b.cg.Memory != 4*gib || b.cg.Pids != 100 {
		t.Errorf("node b %+v, want 4 GiB and 100 pids", b)
	}
}

// TestOutputCaps: an output file written past its cap is cut back to it
// while the writer goes on, and noted at the end; one under its cap is
// left alone. The cuts and the note go through lockstep's descriptors: a
// node that moves its output away and leaves a link to a host file in
// its place moves none of them onto the host's file.
func TestOutputCaps(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("host file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tf := trialFilesOf(t, dir)
	big, small := filepath.Join(dir, "n.out"), filepath.Join(dir, "n.err")
	bigf, err := tf.output("n.out")
	if err != nil {
		t.Fatal(err)
	}
	defer bigf.Close()
	smallf, err := tf.output("n.err")
	if err != nil {
		t.Fatal(err)
	}
	defer smallf.Close()
	oc := newOutputCaps(nil)
	oc.add(bigf, "n", "stdout", 64<<10)
	oc.add(smallf, "n", "stderr", 64<<10)
	f, err := os.OpenFile(big, os.O_WRONLY|os.O_APPEND, 0) // the node's
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 16<<10)
	for i := range 200 {
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
		if i%20 == 0 {
			time.Sleep(outputCheckPeriod)
		}
	}
	f.Close()
	os.WriteFile(small, []byte("a few words\n"), 0o644)
	if err := os.Rename(big, big+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, big); err != nil {
		t.Fatal(err)
	}
	oc.close()
	b, _ := os.ReadFile(big + ".moved")
	if len(b) < 64<<10 || len(b) > 64<<10+200 || !strings.HasSuffix(string(b), "[lockstep: node n's stdout was cut here at its 64 KiB output limit (limits.node.output)]\n") {
		t.Errorf("n.out: %d bytes ending %q", len(b), b[max(0, len(b)-120):])
	}
	if b, _ := os.ReadFile(small); string(b) != "a few words\n" {
		t.Errorf("n.err: %q", b)
	}
	if b, _ := os.ReadFile(victim); string(b) != "host file\n" {
		t.Errorf("the host's file holds %q", b)
	}
	if got := oc.truncated("n"); len(got) != 1 || got[0] != "stdout" {
		t.Errorf("truncated: %v", got)
	}
}

// TestExitTexts: how a node's end reads in an outcome, as a sentence.
func TestExitTexts(t *testing.T) {
	j := &job{spec: &spec.Spec{Nodes: []spec.Node{{Name: "db1"}}}, jobs: 1,
		limits: &campaignLimits{total: netns.Limits{Memory: 12 << 30}, nodes: map[string]nodeLimit{"db1": {cg: netns.Limits{Memory: 2 << 30}, memorySet: true}}}}
	sleep := exec.Command("sleep", "10")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	sleep.Process.Signal(syscall.SIGTERM)
	sleep.Wait()
	exit3 := exec.Command("sh", "-c", "exit 3")
	exit3.Run()
	for _, tc := range []struct {
		name string
		role spec.Role
		e    exitDesc
		ev   netns.LimitEvents
		want string
	}{
		{"exit code", spec.RoleServer, nativeExit("db1", exit3.ProcessState, nil), netns.LimitEvents{}, "node db1 exited with code 3"},
		{"signal", spec.RoleClient, nativeExit("db1", sleep.ProcessState, nil), netns.LimitEvents{}, "client db1 was killed by SIGTERM"},
		{"OOM at its own limit", spec.RoleServer, exitDesc{node: "db1", lpid: "db1/0", signal: syscall.SIGKILL}, netns.LimitEvents{OOMKills: 1, MemoryMax: 3},
			"node db1/0 was killed by the OOM killer at its 2 GiB memory limit (limits.node.memory)"},
		{"OOM at the shared limit", spec.RoleClient, exitDesc{node: "db1", lpid: "db1/0", signal: syscall.SIGKILL}, netns.LimitEvents{OOMKills: 1},
			"client db1/0 was killed by the OOM killer at the 12 GiB memory limit the trial's nodes share (3/4 of the host's memory)"},
		{"SIGKILL without OOM", spec.RoleServer, exitDesc{node: "db1", lpid: "db1/0", text: "db1/0 was killed by SIGKILL", signal: syscall.SIGKILL}, netns.LimitEvents{},
			"node db1/0 was killed by SIGKILL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := j.exitText(tc.role, tc.e, tc.ev); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestCheckerEnd: a checker's failure reads as a sentence.
func TestCheckerEnd(t *testing.T) {
	exit1 := exec.Command("sh", "-c", "exit 1")
	err1 := exit1.Run()
	missing := exec.Command("/no/such/checker").Run()
	for _, tc := range []struct {
		err, ctxErr error
		want        string
	}{
		{err1, nil, "checker check.sh exited with code 1"},
		{errors.New("signal: killed"), context.DeadlineExceeded, "checker check.sh did not finish within its 30s timeout (checker.timeout)"},
		{missing, nil, "checker check.sh could not run: fork/exec /no/such/checker: no such file or directory"},
	} {
		if got := checkerEnd("check.sh", tc.err, tc.ctxErr, 30*time.Second); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}
