package callsite

import (
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/internal/testutil"
	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
)

// BenchmarkSite: naming the call site of a write(2) stopped at its
// syscall entry, with the Cache and the Process warm, as at every stop of
// a process after its first: a C program's (libc's wrapper, a scan of the
// stack) and a Go program's (a frame-pointer walk through the standard
// library's write path).
func BenchmarkSite(b *testing.B) {
	for _, tc := range []struct {
		name string
		argv []string
	}{
		{"c", []string{"/bin/echo", "x"}},
		{"go", []string{testutil.RepoPath("testdata", "bin", "go", "random_bytes")}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			testutil.RequireBinary(b, tc.argv[0])
			pid, regs := stoppedAtWrite(b, tc.argv)
			c := NewCache()
			p := &Process{Pid: pid}
			want := c.Site(p, regs.SP(), regs.FP(), 1)
			if want == "?" {
				b.Fatalf("%s: no call site for its write", tc.name)
			}
			b.ReportMetric(0, "ns/op") // the time per site is what follows
			for b.Loop() {
				if got := c.Site(p, regs.SP(), regs.FP(), 1); got != want {
					b.Fatalf("site %s, then %s", want, got)
				}
			}
		})
	}
}

// stoppedAtWrite starts argv traced and returns it stopped at the entry of
// its first write(2), with its registers there. The calling goroutine's
// thread is locked: it is the tracer.
func stoppedAtWrite(tb testing.TB, argv []string) (int, *ptrace.Regs) {
	tb.Helper()
	testutil.RequirePtrace(tb)
	runtime.LockOSThread()
	tb.Cleanup(runtime.UnlockOSThread)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.SysProcAttr = os.Stderr, &syscall.SysProcAttr{Ptrace: true}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	pid := cmd.Process.Pid
	tb.Cleanup(func() {
		unix.Kill(pid, unix.SIGKILL)
		// Every traced thread is reaped before the leader can be.
		for {
			if _, _, err := ptrace.Wait(-1, unix.WALL); err != nil {
				return
			}
		}
	})
	if _, _, err := ptrace.Wait(pid, unix.WALL); err != nil { // the exec stop
		tb.Fatal(err)
	}
	// Every thread is followed: a Go program writes from whichever thread
	// runs its goroutine.
	if err := unix.PtraceSetOptions(pid, unix.PTRACE_O_TRACESYSGOOD|unix.PTRACE_O_TRACECLONE); err != nil {
		tb.Fatal(err)
	}
	var regs ptrace.Regs
	tid, sig := pid, 0
	for {
		if err := unix.PtraceSyscall(tid, sig); err != nil {
			tb.Fatal(err)
		}
		var st ptrace.Status
		var err error
		if tid, st, err = ptrace.Wait(-1, unix.WALL); err != nil || st.Gone() {
			tb.Fatalf("%s ended before writing (%v)", argv[0], err)
		}
		sig = 0
		switch st.Kind() {
		case ptrace.SignalStop:
			if st.Signal() != unix.SIGSTOP { // a new thread's first stop
				sig = int(st.Signal())
			}
		case ptrace.SyscallTrap:
			if err := ptrace.GetRegs(tid, &regs); err != nil {
				tb.Fatal(err)
			}
			// At a syscall's entry the kernel has put -ENOSYS in rax.
			if regs.Syscall() == unix.SYS_WRITE && regs.Result() == -int64(unix.ENOSYS) {
				return tid, &regs
			}
		}
	}
}

// BenchmarkSiteJava: a JVM thread stopped in a socket read under a
// BufferedReader, its site named alone (the JDK's native frame, as before
// Java frames were read) and with the program's Java method, alternately:
// "interpreted" with the program's frames interpreted, "compiled" with
// every method compiled (-Xcomp), the program's named from its nmethod's
// debug information. "warm": the Cache and the Process have seen the
// stop, as at every stop of a JVM after its first: the difference is what
// reading Java frames adds to a stop. "cold": a new Cache and Process
// each time, as at a trial's first stop of its first JVM: the JVM's
// tables, its code heaps, each method on the stack and each compiled
// frame's debug information are read once.
func BenchmarkSiteJava(b *testing.B) {
	java, err := exec.LookPath("java")
	if err != nil {
		b.Skip("java not found")
	}
	classes := testutil.RepoPath("testdata", "bin", "java", "classes")
	testutil.RequireBinary(b, classes+"/CallSiteWorker.class")
	for _, mode := range []struct {
		name string
		run  workerRun
	}{
		{"interpreted", workerRun{}},
		{"compiled", workerRun{flags: []string{"-Xcomp"}}},
	} {
		b.Run(mode.name, func(b *testing.B) {
			pid, tid := blockedJavaReader(b, java, classes, mode.run)
			regs := interruptThread(b, tid)
			benchJavaStop(b, pid, regs)
		})
	}
}

// benchJavaStop times naming the stop of pid's thread at regs, cold and
// warm.
func benchJavaStop(b *testing.B, pid int, regs *ptrace.Regs) {
	c := NewCache()
	p := &Process{Pid: pid}
	site, caller := c.SiteAndCaller(p, regs.SP(), regs.FP(), 1)
	if caller == "" {
		b.Fatalf("no caller at %s", site)
	}
	b.Logf("site %s caller %s", site, caller)
	// Each iteration names the stop both ways, alternately, and times
	// each: on a loaded machine, the two see the same load.
	for _, cold := range []bool{true, false} {
		name := "warm"
		if cold {
			name = "cold"
		}
		b.Run(name, func(b *testing.B) {
			var alone, named time.Duration
			for b.Loop() {
				for _, withCaller := range []bool{false, true} {
					if cold {
						c, p = NewCache(), &Process{Pid: pid}
					}
					t0 := time.Now()
					s, cl := c.Site(p, regs.SP(), regs.FP(), 1), caller
					if withCaller {
						s, cl = c.SiteAndCaller(p, regs.SP(), regs.FP(), 1)
						named += time.Since(t0)
					} else {
						alone += time.Since(t0)
					}
					if s != site || cl != caller {
						b.Fatalf("%s at %s, then %s at %s", caller, site, cl, s)
					}
				}
			}
			n := float64(b.N)
			b.ReportMetric(float64(alone.Nanoseconds())/n, "ns/site")
			b.ReportMetric(float64(named.Nanoseconds())/n, "ns/site+caller")
			b.ReportMetric(float64(named)/float64(alone), "ratio")
		})
	}
}
