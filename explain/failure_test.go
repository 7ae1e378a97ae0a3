package explain

import (
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/sched"
)

// goPanic is a Go panic's output as a run prints it; %s is what changes
// from run to run of one failure in Go: goroutine ids, argument words.
const goPanicA = `starting store
panic: runtime error: index out of range [5] with length 3

goroutine 19 [running]:
main.(*Store).load(0xc000012345, {0xc0000a2000, 0x5})
	/src/store/store.go:88 +0x1d4
main.main()
	/src/store/main.go:21 +0x85
exit status 2
`

const goPanicB = `starting store
panic: runtime error: index out of range [7] with length 2

goroutine 7 [running]:
main.(*Store).load(0xc0000aa000, {0xc0000b4000, 0x7})
	/src/store/store.go:88 +0x1d4
main.main()
	/src/store/main.go:21 +0x85
exit status 2
`

// goPanicElsewhere is the same message from another function: another
// failure.
const goPanicElsewhere = `panic: runtime error: index out of range [5] with length 3

goroutine 19 [running]:
main.(*Store).replay(0xc000012345)
	/src/store/store.go:120 +0x1d4
`

const goPanicViaRuntime = `panic: boom 17

goroutine 1 [running]:
panic({0x4b5e60?, 0xc000012345?})
	/usr/local/go/src/runtime/panic.go:770 +0x132
runtime.throw({0x4c0000, 0x3})
	/usr/local/go/src/runtime/panic.go:1023 +0x5c
main.check(...)
	/src/x/main.go:9
`

const rustPanicA = `serving 10.77.0.2:41000
thread '<unnamed>' panicked at src/main.rs:42:9:
lost write 17 of 20
note: run with ` + "`RUST_BACKTRACE=1`" + ` environment variable to display a backtrace
`

const rustPanicB = `serving 10.77.0.2:41822
thread 'conn-3' panicked at src/main.rs:42:9:
lost write 18 of 20
note: run with ` + "`RUST_BACKTRACE=1`" + ` environment variable to display a backtrace
`

// rustPanicID is rustPanicA as Rust 1.88 prints it: the thread's id too.
const rustPanicID = `thread '<unnamed>' (3) panicked at src/main.rs:42:9:
lost write 19 of 20
note: run with ` + "`RUST_BACKTRACE=1`" + ` environment variable to display a backtrace
`

const rustPanicOtherLine = `thread '<unnamed>' panicked at src/main.rs:57:9:
lost write 17 of 20
`

const javaA = `Exception in thread "pool-1-thread-3" java.lang.IllegalStateException: wrote 2.4 after 2.3
	at java.base/java.util.Objects.requireNonNull(Objects.java:233)
	at Store.apply(Store.java:51)
	at Store.lambda$run$0(Store.java:30)
`

const javaB = `Exception in thread "pool-1-thread-1" java.lang.IllegalStateException: wrote 2.3 after 2.2
	at java.base/java.util.Objects.requireNonNull(Objects.java:233)
	at Store.apply(Store.java:51)
`

// TestOutputIdentity checks which outputs name one failure: the same
// panic with other numbers, ids and addresses is the same, the same
// message from another frame is not, and a plain last line is compared
// masked.
func TestOutputIdentity(t *testing.T) {
	cases := []struct {
		name string
		a, b string
		same bool
	}{
		{"go panic, other goroutine and args", goPanicA, goPanicB, true},
		{"go panic, other function", goPanicA, goPanicElsewhere, false},
		{"rust panic, other thread and numbers", rustPanicA, rustPanicB, true},
		{"rust panic, other line", rustPanicA, rustPanicOtherLine, false},
		{"rust panic with a thread id", rustPanicA, rustPanicID, true},
		{"java exception, other thread and values", javaA, javaB, true},
		{"last line, other numbers", "x\nwrote 2.3\n", "y\nwrote 2.4\n\n", true},
		{"last line, other address and hex", "lost 0xc000012345 at 10.77.0.1:7000", "lost 0xc0000aa000 at 10.77.0.3:7001", true},
		{"last line, other words", "wrote 2.3", "read 2.3", false},
		{"panic against a line", goPanicA, "exit status 2", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ida, _ := outputIdentity([]byte(c.a))
			idb, _ := outputIdentity([]byte(c.b))
			if ida == "" || idb == "" {
				t.Fatalf("no identity: %q, %q", ida, idb)
			}
			if (ida == idb) != c.same {
				t.Errorf("same = %v, want %v:\n%q\n%q", ida == idb, c.same, ida, idb)
			}
		})
	}
}

// TestPanicFrame checks the top frame each runtime's panic is named by:
// the program's own, past the runtime's and the JDK's.
func TestPanicFrame(t *testing.T) {
	cases := []struct {
		name, out, msg, frame string
	}{
		{"go", goPanicA, "panic: runtime error: index out of range [5] with length 3", "main.(*Store).load"},
		{"go past the runtime", goPanicViaRuntime, "panic: boom 17", "main.check"},
		{"rust", rustPanicA, "lost write 17 of 20", "src/main.rs:42:9"},
		{"rust with a thread id", rustPanicID, "lost write 19 of 20", "src/main.rs:42:9"},
		{"rust before 1.73", "thread 'main' panicked at 'lost write 3', src/main.rs:42:9\n", "lost write 3", "src/main.rs:42:9"},
		{"java past the JDK", javaA, "java.lang.IllegalStateException: wrote 2.4 after 2.3", "Store.apply"},
		{"go fatal error", "fatal error: concurrent map writes\n\ngoroutine 9 [running]:\nmain.worker(0x3)\n\t/x.go:3\n", "fatal error: concurrent map writes", "main.worker"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msg, frame, ok := lastPanic(splitLines(c.out))
			if !ok || msg != c.msg || frame != c.frame {
				t.Errorf("lastPanic = %q, %q, %v; want %q, %q", msg, frame, ok, c.msg, c.frame)
			}
		})
	}
	for _, out := range []string{
		"all good\nexit status 1\n",
		// A JVM worker's uncaught exception, then the client's own end.
		"Exception in thread \"w-1\" java.lang.RuntimeException: x\n\tat W.run(W.java:3)\nwrote 2.3\n",
		"panic: recovered 7\n\ngoroutine 4 [running]:\nmain.h()\n\t/x.go:9 +0x1\nserving again\nlost write 3\n",
	} {
		if msg, _, ok := lastPanic(splitLines(out)); ok {
			t.Errorf("a panic (%q) taken for the end of output that went on:\n%s", msg, out)
		}
	}
}

func splitLines(s string) []string { return strings.Split(s, "\n") }

// TestFailureIs checks the failure's identity beyond the output: the
// kind and the node, and the detail without the thread that exited; a
// violated property's by the property alone.
func TestFailureIs(t *testing.T) {
	base := failure{kind: sched.NodeCrashed, node: "s1", detail: threadless("node s1/0/t3 was killed by SIGSEGV"), msg: "m"}
	cases := []struct {
		name string
		f    failure
		same bool
	}{
		{"another thread", failure{kind: sched.NodeCrashed, node: "s1", detail: threadless("node s1/0/t7 was killed by SIGSEGV"), msg: "m"}, true},
		{"another node", failure{kind: sched.NodeCrashed, node: "s2", detail: threadless("node s2/0/t3 was killed by SIGSEGV"), msg: "m"}, false},
		{"another signal", failure{kind: sched.NodeCrashed, node: "s1", detail: threadless("node s1/0/t3 was killed by SIGABRT"), msg: "m"}, false},
		{"another kind", failure{kind: sched.ClientFailed, node: "s1", detail: base.detail, msg: "m"}, false},
		{"another output", failure{kind: sched.NodeCrashed, node: "s1", detail: base.detail, msg: "n"}, false},
		{"shown differs only", failure{kind: sched.NodeCrashed, node: "s1", detail: base.detail, msg: "m", shown: "other"}, true},
	}
	prop := failure{kind: sched.PropertyViolated, node: "a", detail: "Mnesia inconsistent database"}
	for _, c := range []struct {
		name string
		f    failure
		same bool
	}{
		{"a property printed by another node", failure{kind: sched.PropertyViolated, node: "b", detail: prop.detail}, true},
		{"another property", failure{kind: sched.PropertyViolated, node: "a", detail: "go panic"}, false},
		{"a crash of the node", failure{kind: sched.NodeCrashed, node: "a", detail: prop.detail}, false},
	} {
		if got := c.f.is(prop); got != c.same {
			t.Errorf("%s: is = %v, want %v", c.name, got, c.same)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.f.is(base); got != c.same {
				t.Errorf("is = %v, want %v (%q against %q)", got, c.same, c.f.detail, base.detail)
			}
			if c.f.undoes(base) == c.same {
				t.Errorf("undoes = %v for same = %v", c.f.undoes(base), c.same)
			}
		})
	}
	if got, want := threadless("client w1/0.1/t12 exited with code 1"), "client w1/0.1 exited with code 1"; got != want {
		t.Errorf("threadless = %q, want %q", got, want)
	}
}

// TestMinimizedLine: explain says that replay runs the minimized trace
// only when its own replay of it gave the failure again, and says what
// happened otherwise.
func TestMinimizedLine(t *testing.T) {
	cases := []struct {
		name string
		ex   Explanation
		want string
	}{
		{"replays", Explanation{MinimizedTrace: "m.jsonl", MinimizedOps: 9, MinimizedReplays: true}, "(9 ops; lockstep replay runs it)"},
		{"diverged", Explanation{MinimizedTrace: "m.jsonl", MinimizedOps: 9, MinimizedDiverged: "step 45: kind: expected sleep, got crash"},
			"(9 ops; its replay did not give the failure again: step 45: kind: expected sleep, got crash)"},
		{"not replayed", Explanation{MinimizedTrace: "m.jsonl", MinimizedOps: 9}, "(9 ops; not replayed)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b strings.Builder
			WriteText(&b, &c.ex)
			if !strings.Contains(b.String(), "Minimized trace: m.jsonl "+c.want+"\n") {
				t.Errorf("text:\n%s\nwant the line ending %q", b.String(), c.want)
			}
			if !c.ex.MinimizedReplays && strings.Contains(b.String(), "replay runs it") {
				t.Error("says replay runs a trace it did not replay")
			}
		})
	}
}
