package tracer

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/internal/testutil"
	"github.com/lockstep-dev/lockstep/sched"
)

// bin returns the path of a test program built by `make testdata`.
func bin(t testing.TB, lang, name string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	p := filepath.Join(filepath.Dir(file), "..", "testdata", "bin", lang, name)
	testutil.RequireBinary(t, p)
	return p
}

func requireTracing(t testing.TB) {
	t.Helper()
	testutil.RequireRoot(t)
	testutil.RequirePtrace(t)
}

// testClock is a settable virtual clock for tests (vclock has the real one).
type testClock struct {
	mu  sync.Mutex
	now time.Duration
}

func (c *testClock) Now() time.Duration { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *testClock) Read(id int32) (int64, bool) {
	switch id {
	case 0, 5, 11: // realtime family
		return time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano() + int64(c.Now()), true
	case 1, 4, 6, 7: // monotonic family, from a boot time an hour ago
		return int64(time.Hour + c.Now()), true
	}
	return 0, false
}
func (c *testClock) set(d time.Duration) { c.mu.Lock(); c.now = d; c.mu.Unlock() }

var loopbackGated = func(a netip.Addr) bool { return a.IsLoopback() }

// harness runs programs under a Tracer with output captured per node.
type harness struct {
	t     *testing.T
	tr    *Tracer
	dir   string
	clock *testClock
	ports int
}

// newHarness makes a harness whose tracer runs its nodes as the engine's
// trials do, under SCHED_RR on one CPU (Options.Serialize). Under the
// default policy, a tracer pinned to a CPU another process keeps busy (the
// other test packages of a `go test ./...`) hands that process a whole time
// slice at each of its yields: a trial of many ops ran a hundred times
// slower and a test timed out.
func newHarness(t *testing.T, opts Options) *harness {
	opts.Serialize = true
	return newPlainHarness(t, opts)
}

// newPlainHarness makes a harness whose tracer takes opts as they are.
func newPlainHarness(t *testing.T, opts Options) *harness {
	requireTracing(t)
	if opts.Gated == nil {
		opts.Gated = loopbackGated
	}
	if os.Getenv("LOCKSTEP_DEBUG") != "" && opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	h := &harness{t: t, dir: t.TempDir()}
	if opts.Clock != nil {
		h.clock = opts.Clock.(*testClock)
	}
	h.tr = New(opts)
	t.Cleanup(func() { h.tr.Close() })
	return h
}

func (h *harness) launch(node string, argv ...string) {
	h.t.Helper()
	f, err := os.Create(filepath.Join(h.dir, node+".out"))
	if err != nil {
		h.t.Fatal(err)
	}
	defer f.Close()
	if _, err := h.tr.Launch(LaunchConfig{Node: node, Argv: argv, Stdout: f, Stderr: f}); err != nil {
		h.t.Fatalf("launching %s: %v", node, err)
	}
}

func (h *harness) output(node string) string {
	b, _ := os.ReadFile(filepath.Join(h.dir, node+".out"))
	return string(b)
}

// result of running a harness to the end.
type result struct {
	ops   []sched.Op
	exits []Exit
	state State    // the last state seen
	timed []string // every state's Timed, in order
}

// run releases enabled ops with choose (FIFO when nil), advancing the test
// clock when nothing is enabled, until no thread is left or stop says so.
func (h *harness) run(choose func(st *State) *sched.Op, stop func(st *State) bool) result {
	h.t.Helper()
	var res result
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := h.tr.Drive(ctx, func(st *State, _ Released) (Action, error) {
		res.exits = append(res.exits, st.Exits...)
		res.timed = append(res.timed, st.Timed...)
		res.state = *st
		if st.Live == 0 || (stop != nil && stop(st)) {
			return Action{Stop: true}, nil
		}
		if len(st.Enabled) == 0 {
			if st.HasDeadline && h.clock != nil {
				h.clock.set(st.NextDeadline)
				return Action{}, nil
			}
			return Action{}, fmt.Errorf("deadlock: pending %v", st.Pending)
		}
		op := st.Enabled[0]
		if choose != nil {
			if op = choose(st); op == nil {
				// Everything enabled is held: let time pass if it can.
				if st.HasDeadline && h.clock != nil && st.NextDeadline > h.clock.Now() {
					h.clock.set(st.NextDeadline)
					return Action{}, nil
				}
				return Action{Stop: true}, nil
			}
		}
		res.ops = append(res.ops, *op)
		return Action{Release: op.ID}, nil
	})
	if err != nil {
		n := len(res.ops)
		tail := res.ops[max(0, n-40):]
		var now time.Duration
		if h.clock != nil {
			now = h.clock.Now()
		}
		h.t.Fatalf("driving: %v (after %d ops, virtual %v; last ops %s; enabled %d, pending %v)",
			err, n, now, kinds(tail), len(res.state.Enabled), res.state.Pending)
	}
	return res
}

func kinds(ops []sched.Op) string {
	var b []string
	for _, o := range ops {
		b = append(b, o.LPID+":"+o.Kind.String())
	}
	return strings.Join(b, " ")
}

func exitCode(t *testing.T, exits []Exit, node string) int {
	t.Helper()
	for _, e := range exits {
		if e.Node == node && e.Root {
			if e.Signal != 0 {
				return 128 + int(e.Signal)
			}
			return e.Code
		}
	}
	t.Fatalf("no exit recorded for %s (exits %v)", node, exits)
	return -1
}

func TestPingPongOpsSequence(t *testing.T) {
	h := newHarness(t, Options{Capture: true})
	h.launch("server", bin(t, "c", "pingpong_server"), "7301")
	h.launch("client", bin(t, "c", "pingpong_client"), "127.0.0.1", "7301", "2", "4")
	res := h.run(nil, func(st *State) bool {
		for _, e := range st.Exits {
			if e.Node == "client" && e.Root {
				return true
			}
		}
		return false
	})
	if got := exitCode(t, res.exits, "client"); got != 0 {
		t.Fatalf("client exit %d; output:\n%s", got, h.output("client"))
	}
	// With FIFO release the handshake and the two round trips happen in
	// exactly this order: each send becomes a delivery, then the recv runs.
	seq := kinds(res.ops)
	want := []string{
		"client/0/t0:connect", "server/0/t0:accept",
		"client/0/t0:send", "client/0/t0:deliver", "server/0/t0:recv",
		"server/0/t0:send", "server/0/t0:deliver", "client/0/t0:recv",
	}
	for _, w := range want {
		i := strings.Index(seq, w)
		if i < 0 {
			t.Fatalf("op %q missing or out of order in:\n%s", w, kinds(res.ops))
		}
		seq = seq[i+len(w):]
	}
	if !strings.Contains(h.output("client"), "done 2") {
		t.Fatalf("client output: %q", h.output("client"))
	}
}

// signatures runs server and client programs once and returns each op as
// "lpid kind site".
func signatures(t *testing.T, lang, server, client string, port string) []string {
	h := newHarness(t, Options{Capture: true, Clock: &testClock{}})
	env := os.Environ()
	_ = env
	h.launch("server", bin(t, lang, server), port)
	h.launch("client", bin(t, lang, client), "127.0.0.1", port, "3", "8")
	res := h.run(nil, func(st *State) bool {
		for _, e := range st.Exits {
			if e.Node == "client" && e.Root {
				return true
			}
		}
		return false
	})
	var out []string
	for _, o := range res.ops {
		if o.Kind == sched.Poll || o.Kind == sched.Sleep {
			continue // runtime-internal timing differs in count across runs
		}
		out = append(out, o.LPID+" "+o.Kind.String()+" "+o.Site)
	}
	h.tr.Close() // free the port for the next run
	return out
}

func TestSignaturesStableAcrossRuns(t *testing.T) {
	for _, tc := range []struct{ lang, server, client string }{
		{"c", "pingpong_server", "pingpong_client"},
		{"go", "pingpong_server", "pingpong_client"},
		{"rust", "pingpong_server", "pingpong_client"},
		{"java", "PingPongServer", "PingPongClient"},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			a := signatures(t, tc.lang, tc.server, tc.client, "7311")
			b := signatures(t, tc.lang, tc.server, tc.client, "7311")
			unknown := 0
			for _, s := range a {
				if strings.HasSuffix(s, " ?") {
					unknown++
				}
			}
			t.Logf("%s: %d ops, %d without a call site; first: %v", tc.lang, len(a), unknown, a[:min(len(a), 6)])
			if tc.lang == "java" {
				// Best effort: JIT code has no stable address.
				if strings.Join(a, "\n") != strings.Join(b, "\n") {
					t.Logf("java signatures differ between runs (JIT frames)")
				}
				return
			}
			if len(a) == 0 {
				t.Fatal("no ops recorded")
			}
			if strings.Join(a, "\n") != strings.Join(b, "\n") {
				t.Fatalf("signatures differ between runs:\nrun 1: %v\nrun 2: %v", a, b)
			}
			if unknown > 0 {
				t.Fatalf("%d ops without a call site", unknown)
			}
		})
	}
}

// TestDeliverOutOfOrder: two clients send to a single-threaded server; the
// test delivers the second client's message first and the server sees it
// first, although the first client sent earlier.
func TestDeliverOutOfOrder(t *testing.T) {
	for _, lang := range []string{"c", "go"} {
		t.Run(lang, func(t *testing.T) {
			h := newHarness(t, Options{Capture: true, Clock: &testClock{}})
			h.launch("server", bin(t, lang, "order_server"), "7321", "2")
			// Let the server reach its poll loop before clients start.
			h.run(nil, func(st *State) bool { return len(st.Enabled) == 0 })
			h.launch("a", bin(t, "c", "msg_client"), "127.0.0.1", "7321", "first")
			var sentA bool
			res := h.run(func(st *State) *sched.Op {
				for _, o := range st.Enabled {
					if o.Kind == sched.Deliver && o.Node == "a" {
						sentA = true
						return nil // hold a's message in flight
					}
				}
				return st.Enabled[0]
			}, nil)
			if !sentA {
				t.Fatalf("client a never sent: %v", kinds(res.ops))
			}
			h.launch("b", bin(t, "c", "msg_client"), "127.0.0.1", "7321", "second")
			h.run(func(st *State) *sched.Op {
				var aDeliver *sched.Op
				for _, o := range st.Enabled {
					if o.Kind == sched.Deliver && o.Node == "a" {
						aDeliver = o
						continue
					}
					return o
				}
				// Only a's delivery is left: release it last.
				return aDeliver
			}, nil)
			out := h.output("server")
			i, j := strings.Index(out, "got second"), strings.Index(out, "got first")
			if i < 0 || j < 0 || i > j {
				t.Fatalf("server saw the messages in the wrong order:\n%s", out)
			}
		})
	}
}

// TestHeldRecvStopsProgress: while the server's recv is held, the client
// cannot get its reply: its own recv stays disabled.
func TestHeldRecvStopsProgress(t *testing.T) {
	h := newHarness(t, Options{Capture: true})
	h.launch("server", bin(t, "c", "pingpong_server"), "7331")
	h.launch("client", bin(t, "c", "pingpong_client"), "127.0.0.1", "7331", "1", "4")
	res := h.run(func(st *State) *sched.Op {
		for _, o := range st.Enabled {
			if !(o.Node == "server" && o.Kind == sched.Recv) {
				return o
			}
		}
		return nil // only the server's recv is left
	}, nil)
	var clientRecv, serverRecv bool
	for _, o := range res.state.Pending {
		clientRecv = clientRecv || (o.Node == "client" && o.Kind == sched.Recv)
		serverRecv = serverRecv || (o.Node == "server" && o.Kind == sched.Recv)
	}
	for _, o := range res.state.Enabled {
		if o.Node == "client" {
			t.Fatalf("client op enabled while the server is held: %v", o)
		}
	}
	if !clientRecv || !serverRecv {
		t.Fatalf("want both recvs pending, got %v", res.state.Pending)
	}
}

func TestFollowsForksThreadsAndExec(t *testing.T) {
	h := newHarness(t, Options{Clock: &testClock{}})
	h.launch("n", bin(t, "c", "forker"))
	res := h.run(nil, nil)
	lpids := map[string]bool{}
	for _, o := range res.ops {
		lpids[o.LPID] = true
	}
	for _, want := range []string{"n/0/t0", "n/0.0/t0", "n/0.0/t0.1"} {
		if !lpids[want] {
			t.Errorf("no op from %s; saw %v", want, lpids)
		}
	}
	if c := exitCode(t, res.exits, "n"); c != 0 {
		t.Fatalf("forker exit %d: %s", c, h.output("n"))
	}

	h2 := newHarness(t, Options{Clock: &testClock{}})
	h2.launch("m", bin(t, "c", "threads_exec"))
	res = h2.run(nil, nil)
	if c := exitCode(t, res.exits, "m"); c != 0 || !strings.Contains(h2.output("m"), "exec-ok") {
		t.Fatalf("threads_exec exit %d: %s", c, h2.output("m"))
	}
}

func TestBadPrograms(t *testing.T) {
	requireTracing(t)
	tr := New(Options{})
	defer tr.Close()
	if _, err := tr.Launch(LaunchConfig{Node: "x", Argv: []string{"/nonexistent/prog"}}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("missing program: got %v", err)
	}
	if _, err := tr.Launch(LaunchConfig{Node: "x", Argv: []string{"/etc/hostname"}}); err == nil {
		t.Fatal("non-executable program launched")
	}

	// A program that exits at once is reported, not hung on.
	h := newHarness(t, Options{})
	h.launch("f", "/bin/false")
	res := h.run(nil, nil)
	if c := exitCode(t, res.exits, "f"); c != 1 {
		t.Fatalf("/bin/false exit %d", c)
	}

	// A program that spins without syscalls is reported after the grace.
	h = newHarness(t, Options{Grace: 200 * time.Millisecond})
	h.launch("spin", "/bin/sh", "-c", "while :; do :; done")
	res = h.run(nil, func(st *State) bool { return len(st.Spinning) > 0 })
	if len(res.state.Spinning) == 0 || !strings.HasPrefix(res.state.Spinning[0], "spin/") {
		t.Fatalf("spinning not reported: %+v", res.state)
	}

	// A process that ignores SIGTERM still goes away with the tracer.
	h = newHarness(t, Options{})
	h.launch("stubborn", "/bin/sh", "-c", "trap '' TERM; sleep 1000")
	h.run(nil, func(st *State) bool { return true })
	if err := h.tr.KillAll(); err != nil {
		t.Fatal(err)
	}
}

func TestCloseKillsTree(t *testing.T) {
	h := newHarness(t, Options{})
	h.launch("tree", "/bin/sh", "-c", "sleep 1000 & sleep 1000 & wait")
	h.run(nil, func(st *State) bool { return true })
	h.tr.Close()
	// LeakCheckMain fails the package if any process survived.
}

// TestRDTSCVirtual: rdtsc and rdtscp fault and are answered from virtual
// time, so the program reads the virtual counter (tscBase plus virtual
// nanoseconds: 0 before its 1 s sleep, 1e9 after it) in every run, whether
// or not this machine honours PR_TSC_SIGSEGV. How many reads trapped is
// not asserted: where the kernel faults the counter, the C library's own
// reads at startup trap too (10 here), and where it does not (`rdtsc
// --probe` exits 3) only the rewritten instructions of the image do.
func TestRDTSCVirtual(t *testing.T) {
	requireTracing(t)
	prog := bin(t, "tsc", "rdtsc")
	want := fmt.Sprintf("tsc0=%d tsc1=%d delta=1000000000\n", tscBase, tscBase+uint64(time.Second))
	for i := 0; i < 2; i++ {
		h := newHarness(t, Options{Clock: &testClock{}})
		h.launch("n", prog)
		h.run(nil, nil)
		if got := h.output("n"); got != want {
			t.Fatalf("run %d printed %q, want the virtual counter %q", i, got, want)
		}
		// The program's own two reads at least were answered.
		if s := h.tr.Stats(); s.TSCReads < 2 {
			t.Fatalf("run %d: TSC reads answered: %d, want at least 2", i, s.TSCReads)
		}
	}
}

// TestLaunchSetupFailures: a node whose setup fails before exec names the
// failing step, in the error and in the node's stderr.
func TestLaunchSetupFailures(t *testing.T) {
	requireTracing(t)
	z, err := StartZygote()
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	for _, via := range []struct {
		name   string
		zygote *Zygote
	}{{"fork", nil}, {"zygote", z}} {
		t.Run(via.name, func(t *testing.T) { testLaunchSetupFailures(t, via.zygote) })
	}
}

func testLaunchSetupFailures(t *testing.T, z *Zygote) {
	for _, tc := range []struct {
		name string
		cfg  LaunchConfig
		want string
	}{
		{"missing netns", LaunchConfig{Netns: "/nonexistent/netns"}, "opening network namespace"},
		{"not a netns", LaunchConfig{Netns: "/etc/hostname"}, "entering the network namespace: invalid argument"},
		{"missing dir", LaunchConfig{Dir: "/nonexistent/dir"}, "changing directory: no such file or directory"},
		{"missing hosts file", LaunchConfig{HostsFile: "/nonexistent/hosts"}, "bind-mounting the node's hosts file over /etc/hosts: no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := New(Options{Zygote: z})
			defer tr.Close()
			errf, err := os.Create(filepath.Join(t.TempDir(), "err"))
			if err != nil {
				t.Fatal(err)
			}
			defer errf.Close()
			cfg := tc.cfg
			cfg.Node, cfg.Argv, cfg.Stderr = "x", []string{"/bin/true"}, errf
			_, err = tr.Launch(cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			if tc.name != "missing netns" {
				b, _ := os.ReadFile(errf.Name())
				if !strings.Contains(string(b), tc.want) {
					t.Fatalf("node stderr %q does not say %q", b, tc.want)
				}
			}
		})
	}
}

// TestNodeInheritsOnlyStdio: a node starts with descriptors 0-2 only, never
// with lockstep's own (another job's sockets would stay open in it).
func TestNodeInheritsOnlyStdio(t *testing.T) {
	requireTracing(t)
	z, err := StartZygote()
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	t.Run("fork", func(t *testing.T) { testNodeInheritsOnlyStdio(t, nil) })
	t.Run("zygote", func(t *testing.T) { testNodeInheritsOnlyStdio(t, z) })
}

func testNodeInheritsOnlyStdio(t *testing.T, z *Zygote) {
	h := newHarness(t, Options{Zygote: z})
	// A descriptor lockstep holds without close-on-exec.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if _, err := unix.FcntlInt(r.Fd(), unix.F_SETFD, 0); err != nil {
		t.Fatal(err)
	}
	h.launch("n", "/bin/sh", "-c", "ls /proc/$$/fd")
	res := h.run(nil, nil)
	if c := exitCode(t, res.exits, "n"); c != 0 {
		t.Fatalf("exit %d: %s", c, h.output("n"))
	}
	if got := strings.Fields(h.output("n")); strings.Join(got, " ") != "0 1 2" {
		t.Fatalf("node's descriptors: %v, want [0 1 2]", got)
	}
}

// A runnable thread that gets no CPU (a loaded machine; here a cgroup
// throttled to 1 % of a CPU) is not reported as spinning; one that burns the
// CPU is.
func TestStarvedIsNotSpinning(t *testing.T) {
	const cpuRoot = "/sys/fs/cgroup/cpu"
	if _, err := os.Stat(filepath.Join(cpuRoot, "cpu.cfs_quota_us")); err != nil {
		t.Skipf("skipping: no cgroup v1 cpu controller at %s to throttle with (%v)", cpuRoot, err)
	}
	for _, throttled := range []bool{false, true} {
		// The default policy: a SCHED_RR thread cannot join a group
		// whose CPU time is limited.
		h := newPlainHarness(t, Options{Grace: 200 * time.Millisecond})
		f, err := os.Create(filepath.Join(h.dir, "spin.out"))
		if err != nil {
			t.Fatal(err)
		}
		pid, err := h.tr.Launch(LaunchConfig{Node: "spin", Argv: []string{"/bin/sh", "-c", "while :; do :; done"}, Stdout: f, Stderr: f})
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if throttled {
			cg := filepath.Join(cpuRoot, fmt.Sprintf("lockstep-test-%d", os.Getpid()))
			if err := os.Mkdir(cg, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				// The killed spinner may take a moment to leave the group.
				var err error
				for i := 0; i < 100; i++ {
					if err = os.Remove(cg); err == nil || os.IsNotExist(err) {
						return
					}
					time.Sleep(10 * time.Millisecond)
				}
				t.Errorf("cgroup %s left behind: %v", cg, err)
			})
			for file, v := range map[string]string{"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "1000"} {
				if err := os.WriteFile(filepath.Join(cg, file), []byte(v), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(cg, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// On a loaded machine an unthrottled spinner can be as starved as
		// a throttled one for a whole settle (the tracer then rightly
		// declines to call it spinning): settle again, a few times, until
		// it got the CPU to show what it is. A throttled one must never
		// be called spinning.
		var st State
		for attempt := 0; attempt < 5; attempt++ {
			if st, err = h.tr.Settle(context.Background()); err != nil {
				t.Fatal(err)
			}
			if throttled || len(st.Spinning) > 0 {
				break
			}
		}
		if spinning := len(st.Spinning) > 0; spinning == throttled {
			t.Fatalf("throttled %v: spinning %v", throttled, st.Spinning)
		}
		h.tr.KillAll()
		h.tr.Close()
	}
}

// TestDupsCloseOnExec: every socket lockstep holds for the tracees (its
// duplicates of their sockets, one per datagram or connection in flight)
// is close-on-exec. That it is so from the moment it exists, which a scan
// cannot see, TestNoDupWithoutCloexec checks in the source.
func TestDupsCloseOnExec(t *testing.T) {
	for _, tc := range []struct {
		name           string
		server, client []string
	}{
		{"datagram", []string{bin(t, "c", "udp_echo"), "7351"}, []string{bin(t, "c", "udp_client"), "127.0.0.1", "7351", "3"}},
		{"stream", []string{bin(t, "c", "pingpong_server"), "7352"}, []string{bin(t, "c", "pingpong_client"), "127.0.0.1", "7352", "2", "16"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Options{Capture: true})
			h.launch("server", tc.server...)
			h.run(nil, func(st *State) bool { return len(st.Enabled) == 0 })
			h.launch("client", tc.client...)
			res := h.run(nil, func(st *State) bool {
				for _, o := range st.Enabled {
					if o.Kind == sched.Deliver && o.Node == "client" {
						return true // a message in flight: lockstep holds a duplicate for it
					}
				}
				return false
			})
			ents, err := os.ReadDir("/proc/self/fd")
			if err != nil {
				t.Fatal(err)
			}
			sockets := 0
			for _, e := range ents {
				fd, err := strconv.Atoi(e.Name())
				if err != nil {
					continue
				}
				target, err := os.Readlink("/proc/self/fd/" + e.Name())
				if err != nil || !strings.HasPrefix(target, "socket:") {
					continue
				}
				sockets++
				flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
				if err != nil {
					continue // closed meanwhile
				}
				if flags&unix.FD_CLOEXEC == 0 {
					t.Errorf("fd %d (%s) is not close-on-exec", fd, target)
				}
			}
			if sockets == 0 {
				t.Fatalf("no socket held with a message in flight (ops %s)", kinds(res.ops))
			}
		})
	}
}

// TestNoDupWithoutCloexec: the package makes no descriptor that is not
// close-on-exec from the start (dup, dup2, or open without O_CLOEXEC). A
// dup followed by FD_CLOEXEC left a moment in which another job's fork
// (its sentinel's cat, syscall.ForkExec) took a copy and kept it across
// exec: a node's UDP socket outlived its trial, bound in its namespace,
// and the next trial's node failed to bind its port (node-crashed at step
// 0, "bind: Address already in use", with --jobs 2).
func TestNoDupWithoutCloexec(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	dup := regexp.MustCompile(`\b(unix|syscall)\.(Dup|Dup2)\(`)
	open := regexp.MustCompile(`\bunix\.Open\(`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if dup.MatchString(line) || open.MatchString(line) && !strings.Contains(line, "O_CLOEXEC") {
				t.Errorf("%s:%d: a descriptor that is not close-on-exec from the start: %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}
