package tracer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/bpf"
	"github.com/lockstep-dev/lockstep/internal/testutil"
	"github.com/lockstep-dev/lockstep/netns"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/vclock"
)

// TestQuiescenceShortcuts runs an echo client against a server in their own
// namespaces and cgroups, beside an idle server, and checks at every state
// that the shortcuts quiescence and the state take are exact: the held
// counts are the threads' states, a skipped wait would have found nothing,
// the batched readiness poll, and the answers lockstep's books give in its
// place (known), agree with one poll per op. In C every thread
// is often held (no wait at all); in Go idle runtime threads sleep in the
// kernel, and the idle node's are not read from /proc again and again.
func TestQuiescenceShortcuts(t *testing.T) {
	requireTracing(t)
	testutil.RequireNetns(t)
	testutil.RequireCgroup2(t, testutil.CgroupRoot)
	for _, lang := range []string{"c", "go"} {
		// Whether a node ran since its threads were seen asleep, from
		// its cgroup's cpu.stat or from the activity counters.
		for _, counters := range []bool{false, true} {
			name := lang + "/cpu.stat"
			if counters {
				name = lang + "/counters"
			}
			t.Run(name, func(t *testing.T) { testQuiescenceShortcuts(t, lang, counters) })
		}
	}
}

func testQuiescenceShortcuts(t *testing.T, lang string, counters bool) {
	srvBin, cliBin := bin(t, lang, "pingpong_server"), bin(t, lang, "pingpong_client")
	ctx := context.Background()
	tr, cl, dir := clusterTracer(t, vclock.New(vclock.DefaultEpoch, 0), "server", "client", "idle")
	if counters {
		tr.opts.WatchCgroup, tr.opts.WatchThread = activityWatch(t)
	}
	threadsCounted := 0
	srv, cli, idle := cl.Node("server"), cl.Node("client"), cl.Node("idle")
	launchIn(t, tr, dir, idle, srvBin, "7600")
	launchIn(t, tr, dir, srv, srvBin, "7600")
	launchIn(t, tr, dir, cli, cliBin, srv.Addr.String(), "7600", "40", "3")

	rng := rand.New(rand.NewPCG(7, 7))
	var steps, quietSteps, polledOps, booksOps int
	clientDone, waited := false, false
	var f stepFailures
	fail := f.fail
	err := tr.Drive(ctx, func(st *State, _ Released) (Action, error) {
		// On the tracer thread: its state may be read directly.
		steps++
		f.step = steps
		var count [numStates]int
		for _, th := range tr.pt.threads {
			count[th.state]++
		}
		if count != tr.pt.nState {
			fail("state counts %v, threads' states %v", tr.pt.nState, count)
		}
		for _, th := range tr.pt.threads {
			if th.activity.count != nil {
				threadsCounted++
			}
		}
		if tr.q.quiet() {
			quietSteps++
			// Peek (WNOWAIT) at what a wait for each tracee would have
			// returned (not P_ALL: it sees the children of every thread of
			// this test binary, such as other tests' commands).
			for tid := range tr.pt.threads {
				var info unix.Siginfo
				err := unix.Waitid(unix.P_PID, tid, &info, unix.WEXITED|unix.WSTOPPED|unix.WNOHANG|unix.WNOWAIT|unix.WALL, nil)
				if err == nil && info.Signo != 0 {
					fail("quiet, but an event of %d was waiting (signo %d)", tid, info.Signo)
				}
			}
		}
		polled, books := checkBatched(tr, fail)
		polledOps += polled
		booksOps += books
		if waited && books > 0 {
			fail("%d answers from the books after a step that released nothing", books)
		}
		waited = false
		for _, e := range st.Exits {
			if e.Node == "client" && e.Root {
				if e.Code != 0 {
					return Action{}, fmt.Errorf("client exited %d", e.Code)
				}
				clientDone = true
			}
		}
		if len(st.Enabled) == 0 && clientDone {
			// The server read the end of the stream, closed, and waits
			// for the next connection.
			return Action{Stop: true}, nil
		}
		if len(st.Enabled) == 0 {
			return Action{}, fmt.Errorf("nothing enabled: %v", st.Pending)
		}
		if steps%10 == 0 {
			// Release nothing, as a replay waiting for its op does: the
			// next state is all polls.
			waited = true
			return Action{}, nil
		}
		return Action{Release: st.Enabled[rng.IntN(len(st.Enabled))].ID}, nil
	})
	if err != nil {
		out, _ := os.ReadFile(filepath.Join(dir, "client"))
		t.Fatalf("%v; client: %s", err, out)
	}
	f.report(t)
	for _, ni := range tr.pt.nodeList {
		if (ni.cpu.count != nil) != counters {
			t.Errorf("node %s: counted by the activity counters %v, want %v", ni.name, ni.cpu.count != nil, counters)
		}
	}
	if (threadsCounted > 0) != counters {
		t.Errorf("threads counted on their own at %d steps' looks, want some: %v", threadsCounted, counters)
	}
	stats := tr.Stats()
	t.Logf("%d steps, %d with every thread held and no wait, %d ops answered by the batched poll (%d of them by the books), %d sleeper reads skipped",
		steps, quietSteps, polledOps, booksOps, stats.SleepersSkipped)
	if polledOps == 0 {
		t.Error("no op was answered by the batched poll")
	}
	if lang == "c" && quietSteps == 0 {
		t.Error("every thread was never held with nothing to wait for")
	}
	if stats.BooksMissed != 0 {
		t.Errorf("the books missed %d ops' readiness", stats.BooksMissed)
	}
	if lang == "c" && booksOps == 0 {
		t.Error("no blocking recv's or captured send's readiness came from the books")
	}
	if lang == "go" && stats.SleepersSkipped == 0 {
		t.Error("the idle node's sleeping threads were read at every check")
	}
}

// clusterTracer gives a tracer that captures and serializes, on the
// benchmarks' CPU, gating a netns cluster of the named nodes; both close
// when the test ends. dir is for the nodes' output.
func clusterTracer(t *testing.T, clock Clock, nodes ...string) (tr *Tracer, cl *netns.Cluster, dir string) {
	t.Helper()
	requireTracing(t)
	testutil.RequireNetns(t)
	testutil.RequireCgroup2(t, testutil.CgroupRoot)
	cl, err := netns.New(context.Background(), netns.Config{Nodes: nodes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	tr = New(Options{Capture: true, Clock: clock, CPU: benchCPU(), Serialize: true,
		Gated: func(a netip.Addr) bool { return cl.Subnet().Contains(a) }})
	t.Cleanup(func() { tr.Close() })
	return tr, cl, t.TempDir()
}

// stepFailures keeps the first failures of a run, each with its step.
type stepFailures struct {
	step int
	list []string
}

func (f *stepFailures) fail(format string, a ...any) {
	if len(f.list) < 10 {
		f.list = append(f.list, fmt.Sprintf("step %d: ", f.step)+fmt.Sprintf(format, a...))
	}
}

func (f *stepFailures) report(t *testing.T) {
	t.Helper()
	for _, e := range f.list {
		t.Error(e)
	}
}

// checkBatched compares each answer of this state's batched poll, and of
// the books in its place (known), with a poll of the op's own, and what
// enabled makes of each; it returns how many answers it compared and how
// many of them were the books'.
func checkBatched(tr *Tracer, fail func(format string, a ...any)) (polled, books int) {
	for _, p := range tr.ops.pending {
		if p.polled != tr.ops.pollGen || p.polled == 0 {
			continue
		}
		polled++
		if p.byBooks {
			books++
		}
		if k := tr.ops.kinds[p.op.Kind]; k.polls != nil {
			if fds := k.polls(nil, p); len(fds) > 0 {
				if alone := ready(fds); alone != p.pollReady {
					fail("%s: ready %v from the batched poll (books: %v), %v from its own", p.op.String(), p.pollReady, p.byBooks, alone)
				}
			}
		}
		batched := tr.ops.enabled(p)
		gen := p.polled
		p.polled = 0
		if alone := tr.ops.enabled(p); alone != batched {
			fail("%s: enabled %v from the batched poll, %v from its own", p.op.String(), batched, alone)
		}
		p.polled = gen
	}
	return polled, books
}

// TestBooksAfterCrash: a server crashes between two rounds of a pipelining
// client; the client's next writes go to a socket no one holds, which
// answers the first with a reset, an error for the ones after it. Every
// readiness the books give (known), before and after, must be a poll's.
func TestBooksAfterCrash(t *testing.T) {
	srvBin, cliBin := bin(t, "c", "pipeline_server"), bin(t, "c", "pipeline_client")
	clock := &testClock{}
	tr, cl, dir := clusterTracer(t, clock, "server", "client")
	srv, cli := cl.Node("server"), cl.Node("client")
	const depth = 4
	launchIn(t, tr, dir, srv, srvBin, "7610", "64")
	launchIn(t, tr, dir, cli, cliBin, srv.Addr.String(), "7610", "3", strconv.Itoa(depth))
	var f stepFailures
	steps, books, sends := 0, 0, 0
	crashed := false
	err := tr.Drive(context.Background(), func(st *State, last Released) (Action, error) {
		steps++
		f.step = steps
		_, b := checkBatched(tr, f.fail)
		books += b
		if st.Live == 0 || len(st.Enabled) == 0 && crashed {
			return Action{Stop: true}, nil
		}
		if len(st.Enabled) == 0 && st.HasDeadline {
			clock.set(st.NextDeadline) // the client retries its connect
			return Action{}, nil
		}
		if len(st.Enabled) == 0 {
			return Action{}, fmt.Errorf("nothing enabled: %v", st.Pending)
		}
		op := st.Enabled[0]
		if op.Node == "client" && op.Kind == sched.Send {
			if sends++; sends == depth+1 && !crashed {
				// The first write of the second round.
				crashed = true
				return Action{Crash: "server"}, nil
			}
		}
		return Action{Release: op.ID}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	f.report(t)
	if !crashed || books == 0 {
		t.Errorf("crashed %v, %d answers from the books", crashed, books)
	}
	if n := tr.Stats().BooksMissed; n != 0 {
		t.Errorf("the books missed %d ops' readiness", n)
	}
	out, _ := os.ReadFile(filepath.Join(dir, "client"))
	t.Logf("%d steps, %d answers from the books; client: %s", steps, books, out)
}

// TestReadCPU reads the CPU time out of cgroup cpu.stat texts.
func TestReadCPU(t *testing.T) {
	for _, tc := range []struct {
		text string
		want uint64
		ok   bool
	}{
		{"usage_usec 1234\nuser_usec 1000\nsystem_usec 234\n", 1234, true},
		{"usage_usec 0\n", 0, true},
		{"usage_usec 99", 99, true},
		{"user_usec 1\n", 0, false},
		{"usage_usec x\n", 0, false},
		{"", 0, false},
	} {
		f, err := os.CreateTemp(t.TempDir(), "cpu.stat")
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(tc.text)
		f.Close()
		ni := &nodeInfo{}
		ni.openCPUStat(filepath.Dir(f.Name())+"/"+filepath.Base(f.Name())+".missing", nil)
		if ni.cpu.fd > 0 {
			t.Fatal("opened a cpu.stat that does not exist")
		}
		fd, err := unix.Open(f.Name(), unix.O_RDONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		ni.cpu.fd = fd
		ni.readCPU()
		ni.closeCPUStat()
		if ni.cpu.ok != tc.ok || (tc.ok && ni.cpu.usage != tc.want) {
			t.Errorf("%q: got %d, %v; want %d, %v", tc.text, ni.cpu.usage, ni.cpu.ok, tc.want, tc.ok)
		}
	}
}

// TestAsleepSince: a node's sleepers are skipped only while its count has
// not moved since they were seen asleep and nothing stirred it.
func TestAsleepSince(t *testing.T) {
	ni := &nodeInfo{}
	ni.cpu.ok, ni.cpu.usage = true, 10
	if ni.asleepSince() {
		t.Error("skipped before its threads were ever seen asleep")
	}
	ni.cpu.asleepAt, ni.cpu.asleepOK = 10, true
	if !ni.asleepSince() {
		t.Error("not skipped with the same count")
	}
	ni.cpu.usage = 11
	if ni.asleepSince() {
		t.Error("skipped although the node ran")
	}
	ni.cpu.usage = 10
	ni.stir()
	if ni.asleepSince() {
		t.Error("skipped after lockstep stirred the node")
	}
	var none *nodeInfo
	if none.asleepSince() {
		t.Error("a thread of no node skipped")
	}
	none.stir() // must not panic
}

// TestReset: a sending socket whose peer closed with bytes unread is reset
// (closed though lockstep's duplicate holds it); an open one is not.
func TestReset(t *testing.T) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp4", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.(*net.TCPConn).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd := int(f.Fd())
	if reset(fd) {
		t.Fatal("an open connection reads as reset")
	}
	if _, err := c.Write([]byte("unread")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // the bytes reach the receiver
	s.Close()                         // with bytes unread: an RST
	deadline := time.Now().Add(2 * time.Second)
	for !reset(fd) {
		if time.Now().After(deadline) {
			t.Fatal("the connection did not read as reset after the peer's RST")
		}
		time.Sleep(time.Millisecond)
	}
	if reset(-1) {
		t.Error("no descriptor reads as reset")
	}
}

// activityWatch gives the tracer the activity counters of bpf.Activity
// (what the engine gives it), or skips the test where BPF cannot load.
func activityWatch(t *testing.T) (WatchCgroup, WatchThread) {
	t.Helper()
	testutil.RequireBPF(t)
	a, err := bpf.NewActivity(nil)
	if err != nil {
		t.Skipf("skipping: activity counters cannot load here: %v", err)
	}
	t.Cleanup(func() { a.Close() })
	return func(dir string) (func() uint64, func(), error) {
			c, err := a.Watch(dir)
			if err != nil {
				return nil, nil, err
			}
			return c.Count, func() { c.Close() }, nil
		}, func(tid int) (func() uint64, func(), error) {
			c, err := a.WatchTask(tid)
			if err != nil {
				return nil, nil, err
			}
			return c.Count, func() { c.Close() }, nil
		}
}
