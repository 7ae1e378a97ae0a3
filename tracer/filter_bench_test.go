package tracer

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/tracer/internal/launch"
	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
)

// BenchmarkFilterCost: what the seccomp filter adds to a syscall, run
// without a tracer: a call it lets through that the kernel caches as
// allowed (getpid), one a rule lets through after reading an argument (a
// futex wake: the whole program runs) and a gated one (read of fd -1,
// stopping at a tracer that resumes it at once). Each repetition runs the program without the filter
// and with it back to back; a figure is the median of the repetitions'
// differences, in ns per call.
func BenchmarkFilterCost(b *testing.B) {
	prog := bin(b, "c", "syscall_cost")
	filter := launch.Filter(filteredSyscalls(newTracer(Options{}).gates))
	const calls, reps = 200_000, 15
	run := func(f []unix.SockFilter) map[string]float64 {
		out, err := os.CreateTemp(b.TempDir(), "cost")
		if err != nil {
			b.Fatal(err)
		}
		defer out.Close()
		if err := traceResuming(launch.Config{Path: prog, Argv: []string{prog, strconv.Itoa(calls)}, Stdout: out, Filter: f, ClockFd: -1}); err != nil {
			b.Fatal(err)
		}
		ns := map[string]float64{}
		out.Seek(0, 0)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			k, v, _ := strings.Cut(sc.Text(), " ")
			ns[k], _ = strconv.ParseFloat(v, 64)
		}
		return ns
	}
	for range b.N {
		diffs := map[string][]float64{}
		for range reps {
			none, with := run(nil), run(filter)
			for k, v := range with {
				diffs[k] = append(diffs[k], v-none[k])
			}
		}
		for k, xs := range diffs {
			slices.Sort(xs)
			b.ReportMetric(xs[len(xs)/2], k+"-ns/call")
		}
	}
}

// traceResuming runs cfg's program under a tracer that resumes every stop
// at once (the gated calls the C library makes at its start stop), and
// waits for its exit.
func traceResuming(cfg launch.Config) error {
	ch := make(chan error, 1)
	go func() {
		// Every ptrace call must come from the thread that seized; Go
		// ends the thread when this goroutine returns.
		runtime.LockOSThread()
		c, err := launch.Spawn(cfg)
		if err != nil {
			ch <- err
			return
		}
		defer c.Close()
		if err := ptrace.Seize(c.Pid); err != nil {
			ch <- err
			return
		}
		if err := c.Release(); err != nil {
			ch <- err
			return
		}
		for {
			_, st, err := ptrace.Wait(c.Pid, unix.WALL)
			switch {
			case err != nil:
				ch <- err
				return
			case st.Gone():
				if st.Kind() != ptrace.Exited || st.ExitCode() != 0 {
					err = fmt.Errorf("%s exited %d (signal %v)", cfg.Path, st.ExitCode(), st.Signal())
				}
				ch <- err
				return
			case st.Stopped():
				sig := 0
				if s := st.Signal(); s != unix.SIGTRAP && s != unix.SIGSTOP {
					sig = int(s)
				}
				ptrace.Cont(c.Pid, sig)
			}
		}
	}()
	return <-ch
}
