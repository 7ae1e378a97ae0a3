package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/internal/testutil"
	"github.com/lockstep-dev/lockstep/spec"
)

// TestSweepTmp: lockstep clean unmounts the {{tmp}} mounts of a lockstep
// that has ended, and keeps a live one's (its own here); unmountStale
// unmounts every one below a directory, and nothing else.
func TestSweepTmp(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t.TempDir()
	mount := func(name, source string) string {
		at := filepath.Join(dir, name)
		if err := os.Mkdir(at, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount(source, at, "tmpfs", 0, "size=1m"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Unmount(at, unix.MNT_DETACH) })
		return at
	}
	gone := mount("gone", tmpSource+"-999999999-1")
	live := mount("live", tmpOwner())
	other := mount("other", "not-lockstep")
	swept, err := SweepTmp(false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(swept, gone) || slices.Contains(swept, live) || slices.Contains(swept, other) {
		t.Fatalf("swept %v, want %s and not %s or %s", swept, gone, live, other)
	}
	if err := unmountStale(dir); err != nil {
		t.Fatal(err)
	}
	var st unix.Statfs_t
	if unix.Statfs(live, &st) != nil || st.Type == unix.TMPFS_MAGIC {
		t.Errorf("%s is still mounted", live)
	}
	if unix.Statfs(other, &st) != nil || st.Type != unix.TMPFS_MAGIC {
		t.Errorf("%s, not lockstep's, was unmounted", other)
	}
}

// TestDropTmp: a failing trial's {{tmp}} directories are copied to its
// directory, unless DropTmp: then only its trace and the nodes' output
// stay. KeepTmp with DropTmp is refused.
func TestDropTmp(t *testing.T) {
	requireTrials(t)
	bin := repoPath("testdata", "bin", "c", "disk_log")
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("skipping: %v (make testdata builds it)", err)
	}
	text := fmt.Sprintf(`name: drop-tmp
nodes:
  - name: s1
    role: server
    command: [%q, "{{tmp}}/db", "10"]
  - name: c1
    role: client
    command: ["/bin/sh", "-c", "sleep 1; exit 3"]
limits: {virtual_time: 10s, real_time: 60s}
`, bin)
	sp := loadText(t, filepath.Join(t.TempDir(), "drop-tmp.yaml"), text)
	for _, drop := range []bool{false, true} {
		sum, err := Run(t.Context(), sp, RunOptions{Trials: 1, Strategy: "pos", OutDir: filepath.Join(t.TempDir(), "out"), DropTmp: drop})
		if err != nil {
			t.Fatal(err)
		}
		r := sum.Results[0]
		if !r.Outcome.Kind.IsFailure() {
			t.Fatalf("drop %v: %v, want the client's failure", drop, r.Outcome)
		}
		for _, f := range []string{"trace.jsonl", "s1.out", "c1.out"} {
			if _, err := os.Stat(filepath.Join(r.Dir, f)); err != nil {
				t.Errorf("drop %v: %v", drop, err)
			}
		}
		_, err = os.Stat(filepath.Join(r.Dir, "s1", "db"))
		if drop != os.IsNotExist(err) {
			t.Errorf("drop %v: s1's {{tmp}}/db: %v", drop, err)
		}
	}
	if _, err := Run(t.Context(), sp, RunOptions{Trials: 1, OutDir: filepath.Join(t.TempDir(), "out"), KeepTmp: true, DropTmp: true}); err == nil {
		t.Error("KeepTmp and DropTmp together were not refused")
	}
}

// TestTmpNeedsRoom: a failing trial's {{tmp}} is copied only while the
// copy leaves keepFree of the output's disk free. On a 64 MiB disk (9.6
// MiB kept free) whose trials each leave 20 MiB there, the first two are
// copied and the third is not; its trace and outputs are kept, and its
// result says why.
func TestTmpNeedsRoom(t *testing.T) {
	requireTrials(t)
	disk := t.TempDir()
	if err := unix.Mount("tmpfs", disk, "tmpfs", 0, "size=64m"); err != nil {
		t.Skipf("skipping: mounting a small disk for the output: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(disk, unix.MNT_DETACH) })
	text := `name: tmp-room
nodes:
  - name: c1
    role: client
    command: ["/bin/sh", "-c", "head -c 20971520 /dev/zero > {{tmp}}/db; exit 3"]
limits: {virtual_time: 10s, real_time: 60s, node: {tmp: 32MiB}}
`
	sp := loadText(t, filepath.Join(t.TempDir(), "tmp-room.yaml"), text)
	sum, err := Run(t.Context(), sp, RunOptions{Trials: 3, Strategy: "pos", OutDir: filepath.Join(disk, "out")})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range sum.Results {
		if !r.Outcome.Kind.IsFailure() {
			t.Fatalf("trial %d: %v, want the client's failure", i, r.Outcome)
		}
		for _, f := range []string{"trace.jsonl", "c1.out"} {
			if _, err := os.Stat(filepath.Join(r.Dir, f)); err != nil {
				t.Errorf("trial %d: %v", i, err)
			}
		}
		st, err := os.Stat(filepath.Join(r.Dir, "c1", "db"))
		kept := err == nil && st.Size() == 20<<20
		if want := i < 2; kept != want || (r.TmpNotKept == "") != want {
			t.Errorf("trial %d: c1's {{tmp}}/db kept %v (%v), TmpNotKept %q; want kept %v", i, kept, err, r.TmpNotKept, want)
		}
	}
	if why := sum.Results[2].TmpNotKept; !strings.Contains(why, "copying its 20 MiB would leave") || !strings.Contains(why, "9.6 MiB lockstep keeps free") {
		t.Errorf("TmpNotKept %q does not say what the copy needed and what is kept free", why)
	}
}

// TestMountBelowTmp: a filesystem mounted below /tmp shows in a node's
// private /tmp as on the host, read-only, with a program on it and the
// output directory there (writable for the node's own trial), but not
// another trial's {{tmp}} mounted on it. The node's
// /tmp is an overlay whose lower layer is /tmp's own filesystem, without
// the mounts below it: both were missing (the program could not be
// executed, and no node could start).
func TestMountBelowTmp(t *testing.T) {
	requireTrials(t)
	disk, err := os.MkdirTemp("/tmp", "lockstep-test-mount-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(disk) })
	if err := unix.Mount("tmpfs", disk, "tmpfs", 0, "size=16m"); err != nil {
		t.Skipf("skipping: mounting a filesystem below /tmp: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(disk, unix.MNT_DETACH) })
	echo, err := os.ReadFile("/bin/echo")
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	if err := os.WriteFile(filepath.Join(disk, "echo"), echo, 0o755); err != nil {
		t.Fatal(err)
	}
	// Another trial's {{tmp}} on the same volume, as with --jobs 2: hidden.
	other := filepath.Join(disk, "other")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(tmpSource+"-999999999-1", other, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(other, unix.MNT_DETACH) })
	if err := os.WriteFile(filepath.Join(other, "secret"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	text := fmt.Sprintf(`name: below-tmp
nodes:
  - name: s1
    role: server
    command: [%q, "from the mount"]
  - name: c1
    role: client
    # exit 4: the node could write the mount; exit 5: it saw another trial's {{tmp}}
    command: ["/bin/sh", "-c", "if echo x > %s/w; then exit 4; fi; if test -e %s/secret; then exit 5; fi; echo here > {{tmp}}/mark && echo done > {{trialdir}}/c1.mark"]
limits: {virtual_time: 10s, real_time: 60s}
`, filepath.Join(disk, "echo"), disk, other)
	r := runMarking(t, text, filepath.Join(disk, "out"))
	if out, err := os.ReadFile(filepath.Join(r.Dir, "s1.out")); err != nil || string(out) != "from the mount\n" {
		t.Errorf("the program on the mount printed %q (%v)", out, err)
	}
}

// TestOutputBelowPrivateDirs: an output directory below /var/tmp or
// /dev/shm works, though a node gets empty ones of its own there: its
// trial's directory is set aside before they are mounted and put back
// after (no node could start before). A program there cannot run, and
// the error says why.
func TestOutputBelowPrivateDirs(t *testing.T) {
	requireTrials(t)
	for _, root := range []string{"/var/tmp", "/dev/shm"} {
		t.Run(root, func(t *testing.T) {
			dir, err := os.MkdirTemp(root, "lockstep-test-")
			if err != nil {
				t.Skipf("skipping: %v", err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			text := `name: below-private
nodes:
  - name: c1
    role: client
    command: ["/bin/sh", "-c", "echo here > {{tmp}}/mark && echo done > {{trialdir}}/c1.mark"]
limits: {virtual_time: 10s, real_time: 60s}
`
			runMarking(t, text, filepath.Join(dir, "out"))

			echo, err := os.ReadFile("/bin/echo")
			if err != nil {
				t.Skipf("skipping: %v", err)
			}
			prog := filepath.Join(dir, "echo")
			if err := os.WriteFile(prog, echo, 0o755); err != nil {
				t.Fatal(err)
			}
			sp := clientSpec(t, "program-there", prog, "hi")
			_, err = Run(t.Context(), sp, RunOptions{Trials: 1, Strategy: "pos", OutDir: filepath.Join(t.TempDir(), "out")})
			if want := "(a node's " + root + " is its own and empty"; err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("a program below %s: %v, want an error saying %q", root, err, want)
			}
		})
	}
}

// runMarking runs one trial of a spec whose client c1 writes c1.mark in
// its trial's directory and mark in its {{tmp}}, into out: it must pass
// (a client's exit code says what it found wrong), and both writes must
// be there.
func runMarking(t *testing.T, text, out string) *TrialResult {
	t.Helper()
	sp := loadText(t, filepath.Join(t.TempDir(), "marking.yaml"), text)
	sum, err := Run(t.Context(), sp, RunOptions{Trials: 1, Strategy: "pos", OutDir: out, KeepTmp: true})
	if err != nil {
		t.Fatal(err)
	}
	r := sum.Results[0]
	if r.Outcome.Kind != Pass {
		t.Fatalf("%v, want a pass", r.Outcome)
	}
	for _, f := range []string{"c1.mark", "c1/mark"} {
		if _, err := os.Stat(filepath.Join(r.Dir, f)); err != nil {
			t.Errorf("the node's write did not reach the trial's directory: %v", err)
		}
	}
	return r
}

// clientSpec is a spec of one client node, c1, running command.
func clientSpec(t *testing.T, name string, command ...string) *spec.Spec {
	t.Helper()
	var argv []string
	for _, a := range command {
		argv = append(argv, strconv.Quote(a))
	}
	return loadText(t, filepath.Join(t.TempDir(), name+".yaml"), fmt.Sprintf(`name: %s
nodes:
  - name: c1
    role: client
    command: [%s]
limits: {virtual_time: 10s, real_time: 60s}
`, name, strings.Join(argv, ", ")))
}
