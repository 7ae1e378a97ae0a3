package tracer

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/internal/testutil"
	"github.com/lockstep-dev/lockstep/netns"
	"github.com/lockstep-dev/lockstep/tracer/internal/launch"
	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
	"github.com/lockstep-dev/lockstep/vclock"
)

func benchRounds() int {
	if n, err := strconv.Atoi(os.Getenv("LOCKSTEP_BENCH_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 100_000
}

// launchIn starts argv under tr as node n of a netns cluster (its
// namespace, hosts file and cgroup), its output in dir/NAME.
// It returns the process's pid.
func launchIn(tb testing.TB, tr *Tracer, dir string, n *netns.Node, argv ...string) int {
	tb.Helper()
	f, err := os.Create(filepath.Join(dir, n.Name))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	pid, err := tr.Launch(LaunchConfig{Node: n.Name, Addr: n.Addr, Argv: argv, Netns: n.NetnsPath,
		HostsFile: n.HostsFile, Cgroup: n.CgroupDir, Stdout: f, Stderr: f})
	if err != nil {
		tb.Fatalf("launching %s: %v", n.Name, err)
	}
	return pid
}

// nativeIn runs argv in the node's namespace without lockstep.
func nativeIn(n *netns.Node, argv ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", filepath.Base(n.NetnsPath)}, argv...)...)
}

// BenchmarkRoundTrips: 1-byte TCP round trips between two C processes in
// two namespaces, natively and with every send, delivery and recv gated
// and released one at a time in FIFO order: as the engine runs nodes
// (threads serialized, Options.Serialize) and under the kernel's default
// policy, and with stops only (the floor). Figures are medians of five
// repetitions of the four runs, ratios the medians of each repetition's
// own (a native round trip's cost also depends on whether the kernel put
// the two on one CPU). LOCKSTEP_BENCH_LANG=go runs the Go client and
// server instead (their call sites are walked along frame pointers).
func BenchmarkRoundTrips(b *testing.B) {
	requireTracing(b)
	testutil.RequireNetns(b)
	testutil.RequireCgroup2(b, testutil.CgroupRoot)
	lang := cmp.Or(os.Getenv("LOCKSTEP_BENCH_LANG"), "c")
	srvBin, cliBin := bin(b, lang, "pingpong_server"), bin(b, lang, "pingpong_client")
	rounds := benchRounds()
	ctx := context.Background()
	cl, err := netns.New(ctx, netns.Config{Nodes: []string{"server", "client"}})
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	srv, cli := cl.Node("server"), cl.Node("client")
	port := "7500"
	reset := func() {
		if err := cl.Reset(ctx); err != nil {
			b.Fatal(err)
		}
	}
	native := func(rounds int) time.Duration {
		s := nativeIn(srv, srvBin, port)
		if err := s.Start(); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		out, err := nativeIn(cli, cliBin, srv.Addr.String(), port, strconv.Itoa(rounds), "1").CombinedOutput()
		d := time.Since(t0)
		s.Process.Kill()
		s.Wait()
		if err != nil {
			b.Fatalf("native client: %v: %s", err, out)
		}
		reset()
		return d
	}
	traced := func(serialize bool, rounds int) (time.Duration, int, Stats) {
		tr := New(Options{Capture: true, Clock: vclock.New(vclock.DefaultEpoch, 0), CPU: benchCPU(), Serialize: serialize,
			Gated: func(a netip.Addr) bool { return cl.Subnet().Contains(a) }})
		dir := b.TempDir()
		t0 := time.Now()
		launchIn(b, tr, dir, srv, srvBin, port)
		launchIn(b, tr, dir, cli, cliBin, srv.Addr.String(), port, strconv.Itoa(rounds), "1")
		ops := 0
		err := tr.Drive(ctx, func(st *State, _ Released) (Action, error) {
			for _, e := range st.Exits {
				if e.Node == "client" && e.Root {
					if e.Code != 0 {
						return Action{}, fmt.Errorf("client exited %d", e.Code)
					}
					return Action{Stop: true}, nil
				}
			}
			if len(st.Enabled) == 0 {
				return Action{}, fmt.Errorf("nothing enabled: %v", st.Pending)
			}
			ops++
			return Action{Release: st.Enabled[0].ID}, nil
		})
		d := time.Since(t0)
		stats := tr.Stats()
		tr.Close()
		if err != nil {
			b.Fatalf("traced run: %v", err)
		}
		reset()
		return d, ops, stats
	}

	// The floor: the same run with the same seccomp filter, where the
	// tracer only resumes each stop (no registers, no decoding, no
	// quiescence, no capture). What lockstep adds is the rest.
	floor := func(rounds int) time.Duration {
		devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			b.Fatal(err)
		}
		defer devnull.Close()
		d, err := stopsOnly(
			LaunchConfig{Node: "server", Argv: []string{srvBin, port}, Netns: srv.NetnsPath, HostsFile: srv.HostsFile, Stdout: devnull, Stderr: devnull},
			LaunchConfig{Node: "client", Argv: []string{cliBin, srv.Addr.String(), port, strconv.Itoa(rounds), "1"}, Netns: cli.NetnsPath, HostsFile: cli.HostsFile, Stdout: devnull, Stderr: devnull})
		if err != nil {
			b.Fatalf("stops-only run: %v", err)
		}
		reset()
		return d
	}

	// This machine's speed drifts by tens of percent within minutes: each
	// repetition runs natively, serialized, with the default policy and
	// stops-only back to back, and a ratio is the median of the
	// repetitions' own ratios.
	const reps = 5
	n := max(rounds/reps, 1)
	for range b.N {
		var nat, ser, def, flo []time.Duration
		var ops int
		var stats Stats
		for range reps {
			nat = append(nat, native(n))
			d, _, _ := traced(true, n)
			ser = append(ser, d)
			d, ops, stats = traced(false, n)
			def = append(def, d)
			flo = append(flo, floor(n))
		}
		median := func(xs []float64) float64 {
			slices.Sort(xs)
			return xs[len(xs)/2]
		}
		usPerRT := func(ds []time.Duration) float64 {
			var xs []float64
			for _, d := range ds {
				xs = append(xs, float64(d.Nanoseconds())/1e3/float64(n))
			}
			return median(xs)
		}
		ratio := func(ds []time.Duration) float64 {
			var xs []float64
			for i, d := range ds {
				xs = append(xs, float64(d)/float64(nat[i]))
			}
			return median(xs)
		}
		per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(n) }
		b.ReportMetric(usPerRT(nat), "native-us/rt")
		b.ReportMetric(usPerRT(ser), "serialized-us/rt")
		b.ReportMetric(ratio(ser), "serialized-ratio")
		b.ReportMetric(usPerRT(def), "traced-us/rt")
		b.ReportMetric(ratio(def), "ratio")
		b.ReportMetric(usPerRT(flo), "stops-only-us/rt")
		b.ReportMetric(ratio(flo), "stops-only-ratio")
		// The breakdown of the last default-policy run.
		b.ReportMetric(float64(ops)/float64(n), "ops/rt")
		b.ReportMetric(per(stats.HandleTime), "handle-us/rt")
		b.ReportMetric(per(stats.SiteTime), "callsite-us/rt")
		b.ReportMetric(per(stats.SettleTime), "quiesce-us/rt")
		b.ReportMetric(per(stats.DecideTime), "decide-us/rt")
		b.ReportMetric(per(stats.ReleaseTime), "release-us/rt")
		b.ReportMetric(float64(stats.ArrivalPolls)/float64(max(stats.Deliveries, 1)), "arrival-polls/delivery")
	}
}

// BenchmarkClockRead: the cost of one clock read natively (the vDSO),
// under lockstep through the clock page, and under lockstep at a syscall
// stop (stop, fake the result, resume). Each is the difference between a
// run of n reads and a run of none, over n.
func BenchmarkClockRead(b *testing.B) {
	requireTracing(b)
	prog := bin(b, "c", "clock_loop")
	native := func(n int) time.Duration {
		t0 := time.Now()
		if out, err := exec.Command(prog, strconv.Itoa(n)).CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
		return time.Since(t0)
	}
	traced := func(n int, syscalls bool) (time.Duration, uint64) {
		tr := New(Options{Clock: vclock.New(vclock.DefaultEpoch, 0), ClockSyscalls: syscalls})
		defer tr.Close()
		f, _ := os.CreateTemp(b.TempDir(), "out")
		t0 := time.Now()
		if _, err := tr.Launch(LaunchConfig{Node: "n", Argv: []string{prog, strconv.Itoa(n)}, Stdout: f, Stderr: f}); err != nil {
			b.Fatal(err)
		}
		f.Close()
		err := tr.Drive(context.Background(), func(st *State, _ Released) (Action, error) {
			if st.Live == 0 {
				return Action{Stop: true}, nil
			}
			if len(st.Enabled) == 0 {
				return Action{}, fmt.Errorf("stuck: %v", st.Pending)
			}
			return Action{Release: st.Enabled[0].ID}, nil
		})
		if err != nil {
			b.Fatal(err)
		}
		return time.Since(t0), tr.Stats().ClockReads
	}
	// The page's reads are so cheap that only many of them outweigh the
	// noise of starting a traced process.
	const nNative, nPage, nStop = 5_000_000, 200_000_000, 100_000
	per := func(d, d0 time.Duration, n int) float64 { return float64((d - d0).Nanoseconds()) / float64(n) }
	for range b.N {
		nat := per(native(nNative), native(0), nNative)
		d0, _ := traced(0, false)
		d, stops := traced(nPage, false)
		if stops != 0 {
			b.Fatalf("%d clock reads stopped with the clock page", stops)
		}
		page := per(d, d0, nPage)
		s0, _ := traced(0, true)
		s, stops := traced(nStop, true)
		if stops < nStop {
			b.Fatalf("%d clock reads answered at stops, want >= %d", stops, nStop)
		}
		stop := per(s, s0, nStop)
		b.ReportMetric(nat, "native-ns/read")
		b.ReportMetric(page, "page-ns/read")
		b.ReportMetric(stop, "stop-ns/read")
		b.ReportMetric(page/nat, "page/native")
	}
}

// BenchmarkJVMStartup: a JVM that starts, sleeps 1 s and exits, natively
// and traced under virtual time (where the sleep costs no real time).
func BenchmarkJVMStartup(b *testing.B) {
	requireTracing(b)
	prog := bin(b, "java", "ClockSleep")
	for range b.N {
		t0 := time.Now()
		if out, err := exec.Command(prog, "1").CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
		native := time.Since(t0)
		vc := vclock.New(vclock.DefaultEpoch, 0)
		tr := New(Options{Clock: vc})
		f, _ := os.CreateTemp(b.TempDir(), "out")
		t0 = time.Now()
		if _, err := tr.Launch(LaunchConfig{Node: "jvm", Argv: []string{prog, "1"}, Stdout: f, Stderr: f}); err != nil {
			b.Fatal(err)
		}
		f.Close()
		err := tr.Drive(context.Background(), func(st *State, _ Released) (Action, error) {
			if st.Live == 0 {
				return Action{Stop: true}, nil
			}
			if len(st.Enabled) == 0 {
				if st.HasDeadline {
					return Action{}, vc.AdvanceTo(st.NextDeadline)
				}
				return Action{}, fmt.Errorf("stuck: %v", st.Pending)
			}
			return Action{Release: st.Enabled[0].ID}, nil
		})
		traced := time.Since(t0)
		st := tr.Stats()
		tr.Close()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(native.Milliseconds()), "native-ms")
		b.ReportMetric(float64(traced.Milliseconds()), "traced-ms")
		b.ReportMetric(float64(traced)/float64(native), "ratio")
		b.ReportMetric(float64(st.ClockReads), "clock-reads")
		b.ReportMetric(float64(st.TimedWaits), "timed-waits")
	}
}

// BenchmarkLaunch: starting a node (a C program that exits at once) in a
// network namespace with its own hosts file, natively (fork+exec from Go,
// as os/exec does) and traced (Launch until exec, then run to its exit).
func BenchmarkLaunch(b *testing.B) {
	requireTracing(b)
	testutil.RequireNetns(b)
	prog := "/bin/true"
	ctx := context.Background()
	cl, err := netns.New(ctx, netns.Config{Subnet: netip.MustParsePrefix("10.213.0.0/24"), Nodes: []string{"n"}})
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	n := cl.Node("n")
	var native, traced time.Duration
	for range b.N {
		t0 := time.Now()
		if err := exec.Command(prog).Run(); err != nil {
			b.Fatal(err)
		}
		native += time.Since(t0)
		tr := New(Options{})
		t0 = time.Now()
		if _, err := tr.Launch(LaunchConfig{Node: "n", Addr: n.Addr, Argv: []string{prog}, Netns: n.NetnsPath, HostsFile: n.HostsFile}); err != nil {
			b.Fatal(err)
		}
		err := tr.Drive(ctx, func(st *State, _ Released) (Action, error) {
			if st.Live == 0 {
				return Action{Stop: true}, nil
			}
			if len(st.Enabled) == 0 {
				return Action{}, fmt.Errorf("stuck: %v", st.Pending)
			}
			return Action{Release: st.Enabled[0].ID}, nil
		})
		traced += time.Since(t0)
		tr.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(native.Microseconds())/float64(b.N)/1000, "native-ms")
	b.ReportMetric(float64(traced.Microseconds())/float64(b.N)/1000, "traced-ms")
	b.ReportMetric(float64(traced)/float64(native), "ratio")
}

// stopsOnly runs server and client under the gated seccomp filter with a
// tracer that resumes every stop at once, and returns the client's run
// time. The server is killed when the client exits, and every process the
// run started is reaped before stopsOnly returns: a reaper still waiting
// afterwards took the next native run's client from os/exec ("waitid: no
// child processes").
func stopsOnly(server, client LaunchConfig) (time.Duration, error) {
	ch := make(chan stopsOnlyResult, 1)
	go func() {
		// Every ptrace call must come from the thread that seized.
		runtime.LockOSThread()
		// Never unlocked: the thread's affinity changes below, and it
		// traced processes; Go ends it when this goroutine returns.
		// Pinned like lockstep's tracer (Options.CPU): tracer and tracees on
		// one CPU, where a stop costs least on virtual machines.
		var one unix.CPUSet
		one.Set(benchCPU())
		unix.SchedSetaffinity(0, &one)
		ch <- stopsOnlyRun(server, client)
	}()
	r := <-ch
	return r.d, r.err
}

type stopsOnlyResult struct {
	d   time.Duration
	err error
}

// stopsOnlyRun is stopsOnly's run. It waits for this thread's children
// and tracees only (ptrace.Tracees has __WNOTHREAD), never for those of
// the rest of the test process.
//
// Precondition: the calling goroutine is locked to its OS thread.
func stopsOnlyRun(server, client LaunchConfig) (r stopsOnlyResult) {
	filter := launch.Filter(filteredSyscalls(newTracer(Options{}).gates))
	start := func(cfg LaunchConfig) (int, error) {
		sp, err := launch.Spawn(launch.Config{Path: cfg.Argv[0], Argv: cfg.Argv, Env: cfg.Env,
			Netns: cfg.Netns, HostsFile: cfg.HostsFile,
			Stdout: cfg.Stdout, Stderr: cfg.Stderr, Filter: filter, ClockFd: -1})
		if err != nil {
			return 0, err
		}
		defer sp.Close()
		if err := ptrace.Seize(sp.Pid); err != nil {
			return 0, err
		}
		return sp.Pid, sp.Release()
	}
	spid, err := start(server)
	if err != nil {
		r.err = err
		return r
	}
	defer func() {
		unix.Kill(spid, unix.SIGKILL)
		for {
			pid, st, err := ptrace.Wait(-1, ptrace.Tracees)
			if pid <= 0 || err != nil {
				return
			}
			if st.Stopped() { // a stop the kill overtook: let it die
				ptrace.Cont(pid, 0)
			}
		}
	}()
	t0 := time.Now()
	cpid, err := start(client)
	if err != nil {
		r.err = err
		return r
	}
	for {
		pid, st, err := ptrace.Wait(-1, ptrace.Tracees)
		if err != nil {
			r.err = err
			return r
		}
		switch {
		case st.Gone():
			if pid == cpid {
				if st.Kind() != ptrace.Exited || st.ExitCode() != 0 {
					r.err = fmt.Errorf("client exited %d (signal %v)", st.ExitCode(), st.Signal())
				}
				r.d = time.Since(t0)
				return r
			}
		case st.Stopped():
			sig := 0
			if s := st.Signal(); s != unix.SIGTRAP && s != unix.SIGSTOP {
				sig = int(s)
			}
			ptrace.Cont(pid, sig)
		}
	}
}

// benchCPU is the CPU a traced benchmark run is pinned to
// (LOCKSTEP_BENCH_CPU, default 0 as a campaign's first job): another one
// when something else keeps that one busy.
func benchCPU() int {
	if n, err := strconv.Atoi(os.Getenv("LOCKSTEP_BENCH_CPU")); err == nil && n >= 0 {
		return n
	}
	return 0
}

func benchBulkMB() int {
	if n, err := strconv.Atoi(os.Getenv("LOCKSTEP_BENCH_BULK_MB")); err == nil && n > 0 {
		return n
	}
	return 100
}

// BenchmarkBulkTransfer: one TCP connection carrying LOCKSTEP_BENCH_BULK_MB
// MiB (default 100) from bulk_send to bulk_recv in 64 KiB writes and
// reads, natively and traced, every send, delivery and recv released one
// at a time: in ID order (fifo), or picked at random among the enabled ops
// with a fixed seed (random, closer to what a strategy does).
func BenchmarkBulkTransfer(b *testing.B) {
	requireTracing(b)
	testutil.RequireNetns(b)
	testutil.RequireCgroup2(b, testutil.CgroupRoot)
	sendBin, recvBin := bin(b, "c", "bulk_send"), bin(b, "c", "bulk_recv")
	mb := benchBulkMB()
	bytes := int64(mb) << 20
	ctx := context.Background()
	cl, err := netns.New(ctx, netns.Config{Nodes: []string{"receiver", "sender"}})
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	rcv, snd := cl.Node("receiver"), cl.Node("sender")
	const port = 7501
	want := fmt.Sprintf("received %d", bytes)
	recvArgv := []string{recvBin, strconv.Itoa(port)}
	sendArgv := []string{sendBin, rcv.Addr.String(), strconv.Itoa(port), strconv.Itoa(mb)}
	mbps := func(d time.Duration) float64 { return float64(bytes) / (1 << 20) / d.Seconds() }

	for _, order := range []string{"fifo", "random"} {
		b.Run("order="+order, func(b *testing.B) {
			for range b.N {
				// Native: from the sender's start to the receiver's exit.
				r := nativeIn(rcv, recvArgv...)
				var rout bytesBuffer
				r.Stdout, r.Stderr = &rout, &rout
				if err := r.Start(); err != nil {
					b.Fatal(err)
				}
				// Listening first: a refused connect would sleep 10 ms.
				for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Microsecond) {
					if ok, err := netns.Listening(rcv.NetnsPath, port); err != nil || ok {
						break
					}
					if time.Now().After(deadline) {
						b.Fatalf("the native receiver does not listen: %s", rout.String())
					}
				}
				t0 := time.Now()
				if out, err := nativeIn(snd, sendArgv...).CombinedOutput(); err != nil {
					b.Fatalf("native sender: %v: %s", err, out)
				}
				if err := r.Wait(); err != nil || !strings.Contains(rout.String(), want) {
					b.Fatalf("native receiver: %v: %s", err, rout.String())
				}
				native := time.Since(t0)
				if err := cl.Reset(ctx); err != nil {
					b.Fatal(err)
				}

				// Traced, as a trial traces: capture, virtual time,
				// serialized threads on one CPU.
				clk := vclock.New(vclock.DefaultEpoch, 0)
				tr := New(Options{Capture: true, Clock: clk, Serialize: true, CPU: benchCPU(),
					Gated: func(a netip.Addr) bool { return cl.Subnet().Contains(a) }})
				dir := b.TempDir()
				rnd := rand.New(rand.NewPCG(1, 2))
				launchIn(b, tr, dir, rcv, recvArgv...)
				t0 = time.Now()
				launchIn(b, tr, dir, snd, sendArgv...)
				ops := 0
				exited := 0
				err = tr.Drive(ctx, func(st *State, _ Released) (Action, error) {
					for _, e := range st.Exits {
						if e.Root {
							if e.Code != 0 || e.Signal != 0 {
								return Action{}, fmt.Errorf("%s", e)
							}
							if exited++; exited == 2 {
								return Action{Stop: true}, nil
							}
						}
					}
					if len(st.Enabled) == 0 {
						if st.HasDeadline {
							return Action{}, clk.AdvanceTo(st.NextDeadline)
						}
						return Action{}, fmt.Errorf("nothing enabled: %v", st.Pending)
					}
					ops++
					i := 0
					if order == "random" {
						i = rnd.IntN(len(st.Enabled))
					}
					return Action{Release: st.Enabled[i].ID}, nil
				})
				traced := time.Since(t0)
				stats := tr.Stats()
				tr.Close()
				if err != nil {
					b.Fatalf("traced run: %v", err)
				}
				if out, _ := os.ReadFile(filepath.Join(dir, "receiver")); !strings.Contains(string(out), want) {
					b.Fatalf("traced receiver: %s", out)
				}
				if err := cl.Reset(ctx); err != nil {
					b.Fatal(err)
				}
				ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
				b.ReportMetric(mbps(native), "native-MB/s")
				b.ReportMetric(mbps(traced), "traced-MB/s")
				b.ReportMetric(mbps(traced)/mbps(native), "ratio")
				b.ReportMetric(float64(ops), "ops")
				b.ReportMetric(float64(stats.Deliveries), "deliveries")
				b.ReportMetric(ms(traced), "traced-ms")
				b.ReportMetric(ms(stats.HandleTime), "handle-ms")
				b.ReportMetric(ms(stats.SettleTime), "quiesce-ms")
				b.ReportMetric(ms(stats.ReleaseTime), "release-ms")
				b.ReportMetric(float64(stats.ArrivalPolls)/float64(max(stats.Deliveries, 1)), "arrival-polls/delivery")
				b.ReportMetric(float64(stats.WindowFull), "window-full")
			}
		})
	}
}

// bytesBuffer is a bytes.Buffer safe for a command's two output streams.
type bytesBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (w *bytesBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	return len(p), nil
}

func (w *bytesBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}

// TestStopsOnlyReaps: BenchmarkRoundTrips's stops-only run reaps what it
// started before it returns, and only that: a native child started right
// after it (the next repetition's native run) is still this test's to
// wait for.
func TestStopsOnlyReaps(t *testing.T) {
	requireTracing(t)
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	for i := range 20 {
		if _, err := stopsOnly(
			LaunchConfig{Node: "server", Argv: []string{"/bin/sleep", "1000"}, Stdout: devnull, Stderr: devnull},
			LaunchConfig{Node: "client", Argv: []string{"/bin/true"}, Stdout: devnull, Stderr: devnull}); err != nil {
			t.Fatalf("run %d: stops-only run: %v", i, err)
		}
		if out, err := exec.Command("/bin/sleep", "0.01").CombinedOutput(); err != nil {
			t.Fatalf("run %d: a native child after the stops-only run: %v: %s", i, err, out)
		}
	}
}
