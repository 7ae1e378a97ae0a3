package callsite

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/internal/testutil"
	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
)

func TestDecodeLineTable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		table []byte
		want  [][2]int
		done  bool
	}{
		{"short pairs", []byte{1<<3 | 2, 3<<3 | 1, 0}, [][2]int{{1, 2}, {4, 3}}, true},
		// 0xff, then bci +40 (folded: 80) and line -1 (folded: 1).
		{"long pair", []byte{0xff, 80, 1, 0}, [][2]int{{40, -1}}, true},
		// Two UNSIGNED5 bytes: 200 (not below 192: more follows) + 3<<6
		// = 392, folded +196; then line +1 (folded: 2).
		{"multi-byte number", []byte{0xff, 0xc8, 0x03, 2, 0}, [][2]int{{196, 1}}, true},
		{"unterminated", []byte{1<<3 | 2}, nil, false},
		{"cut inside a number", []byte{0xff, 0xc8}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, done := decodeLineTable(tc.table)
			if done != tc.done || fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("decodeLineTable = %v, %v; want %v, %v", got, done, tc.want, tc.done)
			}
		})
	}
}

func TestLineAt(t *testing.T) {
	m := &javaMethod{codeBase: 0x1000, lines: [][2]int{{0, 10}, {5, 11}, {12, 14}, {3, 20}}}
	for _, tc := range []struct {
		bcp  uint64
		want int
	}{
		{0x1000, 10}, {0x1004, 20}, {0x1005, 11}, {0x1010, 14}, {0x0fff, 0}, {0x1000 + 1<<20, 0},
	} {
		if got := m.lineAt(tc.bcp); got != tc.want {
			t.Errorf("lineAt(%#x) = %d, want %d", tc.bcp, got, tc.want)
		}
	}
}

// TestJavaCaller: a JVM thread blocked in a socket read, through a
// BufferedReader, is named by the program's method that reads, with its
// line while the frames are interpreted; with every method compiled
// (-Xcomp), the walk passes through compiled frames by their sizes,
// whether or not the JVM keeps frame pointers, and names the method
// without its line.
func TestJavaCaller(t *testing.T) {
	classes := testutil.RepoPath("testdata", "bin", "java", "classes")
	java, err := exec.LookPath("java")
	if err != nil {
		t.Skip("java not found")
	}
	testutil.RequireBinary(t, filepath.Join(classes, "CallSiteWorker.class"))
	testutil.RequirePtrace(t)
	for _, tc := range []struct {
		name  string
		flags []string
		want  string
	}{
		{"interpreted", nil, "CallSiteWorker.serve(CallSiteWorker.java:28)"},
		{"interpreted, frame pointers", []string{"-XX:+PreserveFramePointer"}, "CallSiteWorker.serve(CallSiteWorker.java:28)"},
		{"compiled", []string{"-Xcomp"}, "CallSiteWorker.serve(CallSiteWorker.java)"},
		{"compiled, frame pointers", []string{"-Xcomp", "-XX:+PreserveFramePointer"}, "CallSiteWorker.serve(CallSiteWorker.java)"},
		// The program's frame interpreted above compiled JDK frames,
		// which keep no rbp: a walk along rbp alone skips them and
		// names serve's caller.
		{"interpreted over compiled", []string{"-Xcomp", "-XX:CompileCommand=quiet", "-XX:CompileCommand=exclude,CallSiteWorker::serve"},
			"CallSiteWorker.serve(CallSiteWorker.java:28)"},
		// A compiled JDK frame (BufferedReader.fill) calling an
		// interpreted one, through an adapter that lays the arguments
		// out between the two, below the program's compiled frame.
		{"compiled over interpreted", []string{"-Xcomp", "-XX:CompileCommand=quiet", "-XX:CompileCommand=exclude,java.io.InputStreamReader::read"},
			"CallSiteWorker.serve(CallSiteWorker.java)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pid, tid := blockedJavaReader(t, java, classes, tc.flags)
			regs := interruptThread(t, tid)
			c := NewCache()
			p := &Process{Pid: pid}
			site, caller := c.SiteAndCaller(p, regs.SP(), regs.FP(), 1)
			t.Logf("site %s caller %q", site, caller)
			if e := c.jvmLibs[jvmPath(p)].err; e != nil {
				t.Fatalf("reading the JVM's layout: %v", e)
			}
			if !strings.HasPrefix(site, "libnio.so+0x") {
				t.Errorf("site %s, want libnio's", site)
			}
			if caller != tc.want {
				t.Errorf("caller %q, want %q", caller, tc.want)
			}
			// Again, from what the process remembers: the same answer.
			if _, again := c.SiteAndCaller(p, regs.SP(), regs.FP(), 1); again != caller {
				t.Errorf("caller %q, then %q", caller, again)
			}
		})
	}
}

// jvmPath is the path of the libjvm.so p maps.
func jvmPath(p *Process) string {
	for _, m := range p.maps.exec {
		if filepath.Base(m.path) == "libjvm.so" {
			return m.path
		}
	}
	return ""
}

// blockedJavaReader starts CallSiteWorker with the JVM flags, sends it a
// line, and returns once it has printed it: its "lock-worker" thread is
// then blocked reading the next. It returns the JVM's pid and that
// thread's id.
func blockedJavaReader(t testing.TB, java, classes string, flags []string) (pid, tid int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	args := append([]string{"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"}, flags...)
	cmd := exec.Command(java, append(args, "-cp", classes, "CallSiteWorker", fmt.Sprint(port))...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var conn net.Conn
	for deadline := time.Now().Add(60 * time.Second); conn == nil; {
		if conn, err = net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err != nil {
			if time.Now().After(deadline) {
				t.Fatalf("CallSiteWorker does not listen: %v", err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.Write([]byte("one\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "got one\n" {
		t.Fatalf("CallSiteWorker printed %q (%v)", line, err)
	}
	pid = cmd.Process.Pid
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		for _, task := range tasks {
			comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/comm", pid, task.Name()))
			sc, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/syscall", pid, task.Name()))
			// Blocked in read(2) (syscall 0), not on its way to it.
			if strings.TrimSpace(string(comm)) == "lock-worker" && strings.HasPrefix(string(sc), "0 ") {
				fmt.Sscan(task.Name(), &tid)
				return pid, tid
			}
		}
	}
	t.Fatal("no lock-worker thread blocked in a read")
	return 0, 0
}

// interruptThread stops a running thread with ptrace and returns its
// registers; the thread is let go at the test's end. The calling
// goroutine's thread is locked: it is the tracer.
func interruptThread(t testing.TB, tid int) *ptrace.Regs {
	t.Helper()
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	if err := ptrace.Seize(tid); err != nil {
		t.Fatalf("seizing %d: %v", tid, err)
	}
	if err := ptrace.Interrupt(tid); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ptrace.Wait(tid, unix.WALL); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.PtraceDetach(tid) })
	var regs ptrace.Regs
	if err := ptrace.GetRegs(tid, &regs); err != nil {
		t.Fatal(err)
	}
	return &regs
}
