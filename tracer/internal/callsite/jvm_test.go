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
	m := &javaMethod{lines: [][2]int{{0, 10}, {5, 11}, {12, 14}, {3, 20}}}
	for _, tc := range []struct {
		bci, want int
	}{
		{0, 10}, {4, 20}, {5, 11}, {16, 14}, {-1, 0}, {1 << 20, 0},
	} {
		if got := m.lineAt(tc.bci); got != tc.want {
			t.Errorf("lineAt(%d) = %d, want %d", tc.bci, got, tc.want)
		}
	}
	if got := (&javaMethod{}).lineAt(3); got != 0 {
		t.Errorf("lineAt without a table = %d, want 0", got)
	}
}

// TestJavaCaller: a JVM thread blocked in a socket read, through a
// BufferedReader, is named by the program's method that reads, with its
// line: from the interpreted frame's bytecode pointer, or, compiled
// (-Xcomp; C1 as the test programs run, or C2), from the debug
// information of the nmethod at the frame's return address, which names
// the method even where the JIT inlined it into another (compiledIn: the
// method whose nmethod holds the program's frame). The walk passes
// through compiled frames by their sizes, whether or not the JVM keeps
// frame pointers.
func TestJavaCaller(t *testing.T) {
	classes := testutil.RepoPath("testdata", "bin", "java", "classes")
	java, err := exec.LookPath("java")
	if err != nil {
		t.Skip("java not found")
	}
	testutil.RequireBinary(t, filepath.Join(classes, "CallSiteWorker.class"))
	testutil.RequirePtrace(t)
	const (
		serve  = "CallSiteWorker.serve(CallSiteWorker.java:28)"
		helper = "CallSiteWorker.nextLine(CallSiteWorker.java:55)"
	)
	// C2 alone, compiling the program's loop once warm, as a server's
	// hot loop is (-Xcomp would compile it before its first run, with
	// traps where it had not run yet, and the first would send the
	// frame back to the interpreter), in the foreground, so compiled by
	// the time the lines are printed: on JDK 17, with this threshold,
	// after some 2,400 turns of the loop (-XX:+PrintCompilation), an
	// on-stack replacement of the interpreted frame.
	c2 := []string{"-XX:-TieredCompilation", "-XX:-BackgroundCompilation", "-XX:CompileThreshold=100"}
	const warm = 5000
	for _, tc := range []struct {
		name       string
		run        workerRun
		want       string
		compiledIn string // the program's frame is in this method's nmethod; "": interpreted
		// deopt: the program's frame was deoptimized while it waited,
		// and returns to its nmethod's deoptimization handler.
		deopt bool
	}{
		{name: "interpreted", want: serve},
		{name: "interpreted, frame pointers", run: workerRun{flags: []string{"-XX:+PreserveFramePointer"}}, want: serve},
		{name: "compiled", run: workerRun{flags: []string{"-Xcomp"}}, want: serve, compiledIn: "serve"},
		{name: "compiled, frame pointers", run: workerRun{flags: []string{"-Xcomp", "-XX:+PreserveFramePointer"}}, want: serve, compiledIn: "serve"},
		// The program's frame interpreted above compiled JDK frames,
		// which keep no rbp: a walk along rbp alone skips them and
		// names serve's caller.
		{name: "interpreted over compiled", run: workerRun{flags: []string{"-Xcomp", "-XX:CompileCommand=quiet", "-XX:CompileCommand=exclude,CallSiteWorker::serve"}},
			want: serve},
		// A compiled JDK frame (BufferedReader.fill) calling an
		// interpreted one, through an adapter that lays the arguments
		// out between the two, below the program's compiled frame.
		{name: "compiled over interpreted", run: workerRun{flags: []string{"-Xcomp", "-XX:CompileCommand=quiet", "-XX:CompileCommand=exclude,java.io.InputStreamReader::read"}},
			want: serve, compiledIn: "serve"},
		// nextLine inlined into serveByHelper: the nmethod is
		// serveByHelper's, the frame that reads nextLine's.
		{name: "inlined", run: workerRun{flags: []string{"-Xcomp", "-XX:CompileCommand=quiet", "-XX:CompileCommand=inline,CallSiteWorker::nextLine"}, helper: true},
			want: helper, compiledIn: "serveByHelper"},
		{name: "C2, warm", run: workerRun{flags: c2, lines: warm}, want: serve, compiledIn: "serve"},
		{name: "C2, warm, inlined", run: workerRun{flags: c2, helper: true, lines: warm}, want: helper, compiledIn: "serveByHelper"},
		// serve's compiled code inlined BufferedReader.readLine, the
		// only one loaded (class hierarchy analysis): a subclass that
		// overrides it, loaded while serve waits, has its frame
		// deoptimized.
		{name: "C2, warm, deoptimized", run: workerRun{flags: c2, lines: warm, reload: true}, want: serve, compiledIn: "serve", deopt: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				c            *Cache
				p            *Process
				regs         *ptrace.Regs
				site, caller string
			)
			for attempt := 1; ; attempt++ {
				pid, tid := blockedJavaReader(t, java, classes, tc.run)
				regs = interruptThread(t, tid)
				c, p = NewCache(), &Process{Pid: pid}
				site, caller = c.SiteAndCaller(p, regs.SP(), regs.FP(), 1)
				t.Logf("site %s caller %q", site, caller)
				// Whether the JIT inlined readLine into the loop it
				// compiled, which the class loaded then undoes, varies
				// with the machine's load (1 run in about 10 here):
				// another run, before calling it a failure.
				if !tc.deopt || deoptimizedFrame(p) || attempt == 3 {
					break
				}
				t.Logf("attempt %d: no frame met was deoptimized; again", attempt)
			}
			if e := c.jvmLibs[jvmPath(p)].err; e != nil {
				t.Fatalf("reading the JVM's layout: %v", e)
			}
			if !strings.HasPrefix(site, "libnio.so+0x") {
				t.Errorf("site %s, want libnio's", site)
			}
			if caller != tc.want {
				t.Errorf("caller %q, want %q", caller, tc.want)
			}
			if in := compiledIn(t, p, caller); in != tc.compiledIn {
				t.Errorf("the caller's frame is in %q's nmethod, want %q", in, tc.compiledIn)
			}
			if tc.deopt && !deoptimizedFrame(p) {
				t.Error("no frame met was deoptimized")
			}
			// Again, from what the process remembers: the same answer.
			if _, again := c.SiteAndCaller(p, regs.SP(), regs.FP(), 1); again != caller {
				t.Errorf("caller %q, then %q", caller, again)
			}
		})
	}
}

// compiledIn is the name of the method whose nmethod holds the frame the
// walk named caller, as its debug information lists it (the chain is
// logged); "" when no compiled frame met names it: it was interpreted.
func compiledIn(t *testing.T, p *Process, caller string) string {
	j := p.jvm
	in := ""
	for _, code := range j.code {
		if code.kind != codeCompiled {
			continue
		}
		var chain []string
		found := false
		for _, s := range code.scopes {
			m := j.method(p.Pid, s.method)
			if m == nil {
				chain = append(chain, "?")
				continue
			}
			chain = append(chain, fmt.Sprintf("%s.%s@%d", m.class.name, m.name, s.bci))
			found = found || m.frame(s.bci) == caller
		}
		if outer := j.method(p.Pid, code.method); found && outer != nil {
			in = outer.name
			t.Logf("compiled frame: %s", strings.Join(chain, " < "))
		}
	}
	return in
}

// deoptimizedFrame says whether a frame the walk met returns to its
// nmethod's deoptimization handler.
func deoptimizedFrame(p *Process) bool {
	for _, code := range p.jvm.code {
		if code.origPC != 0 {
			return true
		}
	}
	return false
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

// workerRun is how a test runs CallSiteWorker.
type workerRun struct {
	flags  []string // the JVM's, after the tests' own
	helper bool     // read through nextLine
	// lines is how many lines it is sent, and has printed, before its
	// thread is taken stopped: enough, with a low compile threshold, to
	// warm its loop up to compiled code. 0: one.
	lines int
	// reload has it load a second BufferedReader once it has printed
	// them: code that inlined the first's readLine is deoptimized.
	reload bool
}

// blockedJavaReader starts CallSiteWorker as run says, sends it its
// lines, and returns once it has printed them: its "lock-worker" thread
// is then blocked reading the next. It returns the JVM's pid and that
// thread's id.
func blockedJavaReader(t testing.TB, java, classes string, run workerRun) (pid, tid int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	argv := append([]string{"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"}, run.flags...)
	argv = append(argv, "-cp", classes, "CallSiteWorker", fmt.Sprint(port))
	if run.reload {
		argv = append([]string{"-Dcallsite.reload=true"}, argv...)
	}
	if run.helper {
		argv = append(argv, "helper")
	}
	cmd := exec.Command(java, argv...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
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
	lines := max(run.lines, 1)
	// Written while its output is read: neither side waits on the other.
	wrote := make(chan error, 1)
	go func() {
		_, err := conn.Write([]byte(strings.Repeat("one\n", lines)))
		wrote <- err
	}()
	t.Cleanup(func() {
		if err := <-wrote; err != nil {
			t.Errorf("writing to CallSiteWorker: %v", err)
		}
	})
	printed := bufio.NewReader(out)
	for range lines {
		if line, err := printed.ReadString('\n'); err != nil || line != "got one\n" {
			t.Fatalf("CallSiteWorker printed %q (%v)", line, err)
		}
	}
	if run.reload {
		if _, err := stdin.Write([]byte("load\n")); err != nil {
			t.Fatal(err)
		}
		if line, err := printed.ReadString('\n'); err != nil || line != "loaded\n" {
			t.Fatalf("CallSiteWorker printed %q (%v), want loaded", line, err)
		}
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
