package tracer

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/sched"
)

// seededRandom is a per-node deterministic stream, as vclock provides.
func seededRandom(seed uint64) func(node string) io.Reader {
	return func(node string) io.Reader {
		var key [32]byte
		copy(key[:], fmt.Sprintf("%d/%s", seed, node))
		return rand.NewChaCha8(key)
	}
}

// TestVirtualSleepAllLanguages: each program sleeps 600 times one second
// and prints its clocks; under virtual time every line is exact.
func TestVirtualSleepAllLanguages(t *testing.T) {
	for _, tc := range []struct{ lang, prog string }{
		{"c", "clock_sleep"}, {"go", "clock_sleep"}, {"rust", "clock_sleep"}, {"java", "ClockSleep"},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			h := newHarness(t, Options{Clock: &testClock{}})
			h.launch("n", bin(t, tc.lang, tc.prog), "600")
			start := time.Now()
			res := h.run(nil, nil)
			real := time.Since(start)
			if c := exitCode(t, res.exits, "n"); c != 0 {
				t.Fatalf("exit %d:\n%s", c, h.output("n"))
			}
			epoch := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
			lines := 0
			sc := bufio.NewScanner(strings.NewReader(h.output("n")))
			for sc.Scan() {
				var i int
				var mono, realNs int64
				if n, _ := fmt.Sscanf(sc.Text(), "i=%d mono_ns=%d real_ns=%d", &i, &mono, &realNs); n != 3 {
					continue
				}
				lines++
				if want := int64(i) * 1e9; mono != want {
					t.Fatalf("line %q: mono_ns %d, want %d", sc.Text(), mono, want)
				}
				// Realtime is the epoch plus virtual time; Java prints it
				// from currentTimeMillis, so compare at ms precision.
				if d := realNs - (epoch + int64(i)*1e9); d < 0 || d >= 1e6 {
					t.Fatalf("line %q: real_ns off by %d ns", sc.Text(), d)
				}
			}
			if lines != 600 {
				t.Fatalf("%d clock lines, want 600:\n%s", lines, h.output("n"))
			}
			st := h.tr.Stats()
			t.Logf("%s: 600 virtual seconds in %v real; %d clock reads, %d timed waits, %d ops", tc.lang, real, st.ClockReads, st.TimedWaits, st.Ops)
		})
	}
}

// TestSeededRandomness: the same seed gives the same bytes from getrandom
// and /dev/urandom in every language; another seed gives others.
func TestSeededRandomness(t *testing.T) {
	for _, tc := range []struct{ lang, prog string }{
		{"c", "random_bytes"}, {"go", "random_bytes"}, {"rust", "random_bytes"}, {"java", "RandomBytes"},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			run := func(seed uint64) string {
				h := newHarness(t, Options{Clock: &testClock{}, Random: seededRandom(seed)})
				h.launch("n", bin(t, tc.lang, tc.prog))
				res := h.run(nil, nil)
				if c := exitCode(t, res.exits, "n"); c != 0 {
					t.Fatalf("exit %d:\n%s", c, h.output("n"))
				}
				return h.output("n")
			}
			a, b, c := run(1), run(1), run(2)
			if a != b {
				t.Fatalf("same seed, different output:\n%s\n%s", a, b)
			}
			if a == c {
				t.Fatalf("different seeds, same output:\n%s", a)
			}
			if !strings.Contains(a, "urandom=") {
				t.Fatalf("unexpected output %q", a)
			}
		})
	}
}

// TestPollTimeoutExactlyFiveSeconds: the server's reply is held, so the
// client's 5-second wait times out at exactly 5 virtual seconds.
func TestPollTimeoutExactlyFiveSeconds(t *testing.T) {
	for _, lang := range []string{"c", "go", "rust"} {
		t.Run(lang, func(t *testing.T) {
			h := newHarness(t, Options{Clock: &testClock{}, Capture: true})
			h.launch("server", bin(t, "c", "pingpong_server"), "7341")
			h.launch("client", bin(t, lang, "timeout_client"), "127.0.0.1", "7341", "5000")
			res := h.run(func(st *State) *sched.Op {
				for _, o := range st.Enabled {
					if o.Kind == sched.Deliver && o.Node == "server" {
						continue // hold the reply in flight
					}
					return o
				}
				return nil
			}, rootExited("client"))
			if c := exitCode(t, res.exits, "client"); c != 3 {
				t.Fatalf("client exit %d, want 3 (timeout):\n%s", c, h.output("client"))
			}
			if out := h.output("client"); !strings.Contains(out, "timeout elapsed_ms=5000\n") {
				t.Fatalf("client did not time out at exactly 5 s: %q", out)
			}
		})
	}
}

// TestJVMSmallTCPProgram: the JVM starts, runs a TCP exchange between its
// own threads with socket timeouts and sleeps, and exits, under virtual time.
func TestJVMSmallTCPProgram(t *testing.T) {
	h := newHarness(t, Options{Clock: &testClock{}, Capture: true})
	h.launch("jvm", bin(t, "java", "TcpSmall"))
	start := time.Now()
	res := h.run(nil, nil)
	if c := exitCode(t, res.exits, "jvm"); c != 0 || !strings.Contains(h.output("jvm"), "ok") {
		t.Fatalf("exit %d:\n%s", c, h.output("jvm"))
	}
	st := h.tr.Stats()
	threads := map[string]bool{}
	for _, o := range res.ops {
		threads[o.LPID] = true
	}
	t.Logf("JVM TcpSmall: %v real, %v virtual, %d clock reads, %d timed waits, %d ops from %d threads",
		time.Since(start), h.clock.Now(), st.ClockReads, st.TimedWaits, len(res.ops), len(threads))
}

// rootExited ends a run once the node's first process has exited.
func rootExited(node string) func(*State) bool {
	return func(st *State) bool {
		for _, e := range st.Exits {
			if e.Node == node && e.Root {
				return true
			}
		}
		return false
	}
}

// TestPIDNamespaceAndAuxvRandom: in a PID namespace of its own a node's
// pids are the same in every run (the program is pid 1, its thread and
// child come next), and the kernel's AT_RANDOM bytes come from the seed:
// the same for the same seed, others for another.
func TestPIDNamespaceAndAuxvRandom(t *testing.T) {
	run := func(seed uint64) string {
		h := newHarness(t, Options{Clock: &testClock{}, Random: seededRandom(seed)})
		f, err := os.Create(filepath.Join(h.dir, "n.out"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := h.tr.Launch(LaunchConfig{Node: "n", Argv: []string{bin(t, "c", "ids")}, Stdout: f, Stderr: f, PIDNamespace: true}); err != nil {
			t.Fatal(err)
		}
		res := h.run(nil, nil)
		if c := exitCode(t, res.exits, "n"); c != 0 {
			t.Fatalf("exit %d:\n%s", c, h.output("n"))
		}
		return h.output("n")
	}
	a, b, c := run(1), run(1), run(2)
	for _, want := range []string{"pid=1\n", "thread tid=2\n", "child pid=3\n", "at_random="} {
		if !strings.Contains(a, want) {
			t.Fatalf("missing %q in:\n%s", want, a)
		}
	}
	if a != b {
		t.Fatalf("same seed, different output:\n%s\n%s", a, b)
	}
	if a == c {
		t.Fatalf("different seeds, same AT_RANDOM:\n%s", a)
	}
}

// TestRandomPerProcess: two processes of one node that read random bytes
// at the same time each get a stream of their own, the same in every run
// whichever reads first.
func TestRandomPerProcess(t *testing.T) {
	prog := bin(t, "c", "random_bytes")
	run := func(seed uint64) (string, string) {
		h := newHarness(t, Options{Clock: &testClock{}, Random: seededRandom(seed)})
		a, b := filepath.Join(h.dir, "a"), filepath.Join(h.dir, "b")
		h.launch("n", "/bin/sh", "-c", `"$1" >"$2" & "$1" >"$3"; wait`, "sh", prog, a, b)
		res := h.run(nil, nil)
		if c := exitCode(t, res.exits, "n"); c != 0 {
			t.Fatalf("exit %d:\n%s", c, h.output("n"))
		}
		ab, _ := os.ReadFile(a)
		bb, _ := os.ReadFile(b)
		return string(ab), string(bb)
	}
	a1, b1 := run(1)
	for i := 0; i < 3; i++ {
		if a, b := run(1); a != a1 || b != b1 {
			t.Fatalf("run %d: the processes read other bytes:\n%s%s\nthen\n%s%s", i, a1, b1, a, b)
		}
	}
	if a1 == b1 || !strings.Contains(a1, "urandom=") {
		t.Fatalf("the two processes read the same stream, or nothing:\n%s\n%s", a1, b1)
	}
}

// TestNodeCannotKillLockstep: a program that kills the process that
// started it (getppid, /proc/self/status) cannot reach it from its PID
// namespace: lockstep, here the test process itself, survives.
func TestNodeCannotKillLockstep(t *testing.T) {
	h := newHarness(t, Options{Clock: &testClock{}})
	f, err := os.Create(filepath.Join(h.dir, "n.out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := h.tr.Launch(LaunchConfig{Node: "n", Argv: []string{bin(t, "c", "killparent")}, Stdout: f, Stderr: f, PIDNamespace: true}); err != nil {
		t.Fatal(err)
	}
	res := h.run(nil, nil)
	if c := exitCode(t, res.exits, "n"); c != 0 {
		t.Fatalf("exit %d:\n%s", c, h.output("n"))
	}
	// /proc is still the host's, so PPid names lockstep's host pid; but a
	// kill from the node resolves pids in its own namespace, where that
	// one does not exist.
	if out := h.output("n"); !strings.Contains(out, "getppid=0 ") || !strings.HasSuffix(out, "still here\n") {
		t.Fatalf("the node saw a parent: %q", out)
	}
}

// With Serialize a node's process runs under SCHED_RR (its threads and
// children inherit it); without, under the default policy.
func TestSerialize(t *testing.T) {
	for _, serialize := range []bool{false, true} {
		h := newPlainHarness(t, Options{Clock: &testClock{}, Serialize: serialize})
		f, err := os.Create(filepath.Join(h.dir, "n.out"))
		if err != nil {
			t.Fatal(err)
		}
		pid, err := h.tr.Launch(LaunchConfig{Node: "n", Argv: []string{bin(t, "c", "clock_sleep"), "1"}, Stdout: f, Stderr: f})
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		attr, err := unix.SchedGetAttr(pid, 0)
		if err != nil {
			t.Fatal(err)
		}
		want := uint32(unix.SCHED_NORMAL)
		if serialize {
			want = unix.SCHED_RR
		}
		if attr.Policy != want {
			t.Errorf("Serialize %v: policy %d, want %d", serialize, attr.Policy, want)
		}
		h.tr.Close()
	}
}

// A thread that clones and its new thread go on in one order, the
// creating thread first, however lockstep happened to see their stops:
// which of them the kernel queues first decides what each finds done (in
// Go and glibc, whose memory), so it must not depend on timing.
func TestCloneOrder(t *testing.T) {
	var first string
	for i := 0; i < 10; i++ {
		h := newHarness(t, Options{Clock: &testClock{}, CPU: benchCPU()})
		h.launch("n", bin(t, "c", "thread_order"))
		h.run(nil, nil)
		out := h.output("n")
		if !strings.HasPrefix(out, "order ") || len(out) != len("order PPPP0123\n") {
			t.Fatalf("run %d: %q", i, out)
		}
		if first == "" {
			first = out
		} else if out != first {
			t.Fatalf("run %d: %q, run 0: %q", i, out, first)
		}
		h.tr.Close()
	}
}

// TestCloneRace: two threads woken together each start a thread; the one
// that woke the other gets to its clone first. The new threads' names
// must not say which did: a thread is named by its creator, so A's child
// is n/0/t0.1.1 in every run, and clones run one at a time, in the order
// of their creators' LPIDs. Numbered in the order the kernel reported the
// clones, it was B's (and a JVM's threads took each other's names in
// replays of a ZooKeeper trace). With "bfirst" A waits until B has started
// its child, as a creator blocked on a lock another holds in user space
// (where lockstep orders nothing) does: the names stay. Numbered in the
// order the clones ran, A's child was n/0/t3, and n/0/t4 with bfirst.
func TestCloneRace(t *testing.T) {
	requireTracing(t)
	for _, args := range [][]string{nil, {"bfirst"}} {
		for i := 0; i < 3; i++ {
			h := newHarness(t, Options{Clock: &testClock{}, CPU: benchCPU()})
			h.launch("n", append([]string{bin(t, "c", "clone_race")}, args...)...)
			res := h.run(nil, nil)
			names := map[string]string{}
			for _, op := range res.ops {
				if op.Kind == sched.Sleep {
					names[op.Thread] = op.LPID
				}
			}
			if names["childA"] != "n/0/t0.1.1" || names["childB"] != "n/0/t0.2.1" {
				t.Fatalf("%v, run %d: the children's LPIDs are %v, want childA n/0/t0.1.1 and childB n/0/t0.2.1", args, i, names)
			}
			if s := h.tr.Stats(); s.Clones != 4 {
				t.Errorf("%v, run %d: %d clones held, want 4", args, i, s.Clones)
			}
			if out := h.output("n"); out != "done\n" {
				t.Fatalf("%v, run %d: output %q", args, i, out)
			}
			h.tr.Close()
		}
	}
}

// TestDiskSyscallAlone: a syscall that may sleep on the disk runs only when
// no other thread can run: the thread disk_alone wakes runs before the
// waking thread's fsync returns, in every run. Run at once, the fsync of a
// clean file returned before the woken thread got the CPU (one sleeping on
// the disk, after), so the order depended on the disk.
func TestDiskSyscallAlone(t *testing.T) {
	requireTracing(t)
	for i := 0; i < 5; i++ {
		h := newHarness(t, Options{Clock: &testClock{}, CPU: benchCPU()})
		h.launch("n", bin(t, "c", "disk_alone"), filepath.Join(t.TempDir(), "f"))
		h.run(nil, nil)
		if out := h.output("n"); out != "woken synced\n" {
			t.Fatalf("run %d: %q, want the woken thread's line first", i, out)
		}
		// The fsync of a file is answered at once; the ftruncate is held.
		if s := h.tr.Stats(); s.Alone != 1 || s.DiskSyncs != 1 {
			t.Fatalf("run %d: %d disk syscalls held, %d flushes answered; want 1 and 1", i, s.Alone, s.DiskSyncs)
		}
		h.tr.Close()
	}
}

// TestChildExitEndsWait: a parent that waits for its child in pselect6, with
// SIGCHLD unblocked only there (Erlang's erl_child_setup), is woken by the
// child's exit: lockstep reaps the child first, so the kernel's SIGCHLD to
// the parent must make the gated wait enabled, or it is never released.
func TestChildExitEndsWait(t *testing.T) {
	requireTracing(t)
	h := newHarness(t, Options{Clock: &testClock{}})
	h.launch("n", bin(t, "c", "child_wait"))
	h.run(nil, nil)
	if out := h.output("n"); out != "reaped status 7\n" {
		t.Fatalf("output %q", out)
	}
}

// TestSocketFlagsChangeBetweenReads: a socket's blocking mode and receive
// timeout change between reads (fcntl, ioctl FIONBIO, SO_RCVTIMEO). Each
// read with nothing to read must end as the kernel would end it: at once
// with EAGAIN when non-blocking, after exactly the timeout otherwise; a
// tracer that kept the first read's view would wait for data forever (a
// deadlock here) or let a timed read return at once. Last, with a
// low-water mark of 2 (SO_RCVLOWAT), the read is released only once two
// bytes wait, as the kernel would return it.
func TestSocketFlagsChangeBetweenReads(t *testing.T) {
	h := newHarness(t, Options{Clock: &testClock{}, Capture: true})
	h.launch("server", bin(t, "c", "pingpong_server"), "7343")
	h.launch("client", bin(t, "c", "sockflags_client"), "127.0.0.1", "7343")
	res := h.run(nil, rootExited("client"))
	if c := exitCode(t, res.exits, "client"); c != 0 {
		t.Fatalf("client exit %d:\n%s", c, h.output("client"))
	}
	want := "blocking data 0ms\nfcntl EAGAIN 0ms\nblocking data 0ms\nfionbio EAGAIN 0ms\n" +
		"blocking data 0ms\nrcvtimeo EAGAIN 200ms\nblocking data 0ms\nrcvlowat data 0ms\n"
	if got := h.output("client"); got != want {
		t.Fatalf("client output:\n%s\nwant:\n%s", got, want)
	}
	// The bytes delivered to the client between its last two recvs.
	var recvs []int
	for i, o := range res.ops {
		if o.Node == "client" && o.Kind == sched.Recv {
			recvs = append(recvs, i)
		}
	}
	if len(recvs) < 2 {
		t.Fatalf("%d client recvs: %s", len(recvs), kinds(res.ops))
	}
	arrived := 0
	for _, o := range res.ops[recvs[len(recvs)-2]:recvs[len(recvs)-1]] {
		if o.Kind == sched.Deliver && o.Node == "server" {
			arrived += o.Bytes
		}
	}
	if arrived < 2 {
		t.Fatalf("the read with SO_RCVLOWAT 2 was released with %d bytes waiting", arrived)
	}
}

// TestInit: under LaunchConfig.Init a command that starts a process in the
// background and returns leaves it running: the node's first process (the
// init) exits once the last one has, and its Exit is that process's, named
// by its LPID. Without Init the kernel kills it with the command, which
// Exit.Took counts. The program runs as pid 2, its children after it.
func TestInit(t *testing.T) {
	for _, tc := range []struct {
		name string
		init bool
		want string // the root's exit, as Exit.String words it
		took int
	}{
		{"init", true, "n/0.0.0 exited with code 5", 0},
		{"without", false, "n/0 exited with code 0", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Options{Clock: &testClock{}})
			f, err := os.Create(filepath.Join(h.dir, "n.out"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			cmd := `echo "pid $$"; (sleep 0.5; echo late; exit 5) & exit 0`
			if _, err := h.tr.Launch(LaunchConfig{Node: "n", Argv: []string{"/bin/sh", "-c", cmd}, Stdout: f, Stderr: f, PIDNamespace: true, Init: tc.init}); err != nil {
				t.Fatal(err)
			}
			res := h.run(nil, nil)
			var root *Exit
			for i, e := range res.exits {
				if e.Root {
					root = &res.exits[i]
				}
			}
			if root == nil || root.String() != tc.want || root.Took != tc.took {
				t.Fatalf("root exit %+v, want %q having taken %d (exits %v)", root, tc.want, tc.took, res.exits)
			}
			out := h.output("n")
			if tc.init && out != "pid 2\nlate\n" || !tc.init && out != "pid 1\n" {
				t.Fatalf("output %q", out)
			}
		})
	}
}
