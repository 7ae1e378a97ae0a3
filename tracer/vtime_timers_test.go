package tracer

import (
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/sched"
)

// TestVirtualKernelTimers: each program arms kernel timers (timerfd, alarm
// and setitimer, POSIX timers) and prints the monotonic time at every
// expiry. Under virtual time each expiry happens at exactly the virtual
// instant the timer names, and the run takes far less real time than the
// timers' total.
func TestVirtualKernelTimers(t *testing.T) {
	for _, tc := range []struct {
		prog    string
		virtual time.Duration // the program's virtual run time
		want    []string      // its whole output
	}{
		{"timerfd_tick", 10 * time.Second, []string{
			"armed value_ns=2000000000",
			"oneshot n=1 mono_ns=2000000000", // epoll_wait(-1)
			"expired value_ns=0",
			"interval n=1 mono_ns=3500000000", // blocking reads
			"interval n=1 mono_ns=4500000000",
			"interval n=1 mono_ns=5500000000",
			"catchup n=3 mono_ns=9000000000", // 6.5, 7.5 and 8.5 s unread
			"old interval_ns=1000000000 value_ns=500000000",
			"abs n=1 mono_ns=10000000000", // poll(-1), TFD_TIMER_ABSTIME
			"disarmed read=-1",
		}},
		{"itimer_tick", 8 * time.Second, []string{
			"alarm old=0",
			"alarm fired=1 mono_ns=2000000000",
			"alarm old=5",
			"alarm fired=2 mono_ns=3000000000",
			"itimer fired=3 mono_ns=4000000000",
			"itimer fired=4 mono_ns=4500000000",
			"itimer fired=5 mono_ns=5000000000",
			"get interval_us=500000 value_us=500000",
			"stop old_value_us=500000",
			"waited fired=5 mono_ns=6000000000",
			// SIGALRM interrupts gated waits, which sit in their seccomp stops.
			"sleep r=-1 eintr=1 rem_ns=4000000000 fired=6 mono_ns=7000000000",
			"poll r=-1 eintr=1 fired=7 mono_ns=8000000000",
		}},
		{"posix_timer_tick", 12 * time.Second, []string{
			"signal si_timer=1 value=7 mono_ns=2000000000",
			"thread_id si_timer=1 value=8 mono_ns=3000000000",
			"thread_id si_timer=1 value=8 mono_ns=4000000000",
			"thread_id si_timer=1 value=8 mono_ns=5000000000",
			"gettime interval_ns=1000000000 value_ns=1000000000",
			"late si_timer=1 value=8 mono_ns=7500000000",
			"overrun=1",
			"none before_ns=1000000000 after_ns=0 mono_ns=9000000000",
			"thread_cb value=9 mono_ns=11000000000", // glibc's SIGEV_THREAD
			"thread_done mono_ns=11000000000",
			"absolute si_timer=1 value=10 mono_ns=12000000000",
		}},
	} {
		t.Run(tc.prog, func(t *testing.T) {
			h := newHarness(t, Options{Clock: &testClock{}})
			h.launch("n", bin(t, "c", tc.prog))
			start := time.Now()
			res := h.run(nil, nil)
			elapsed := time.Since(start)
			out := h.output("n")
			if c := exitCode(t, res.exits, "n"); c != 0 {
				t.Fatalf("exit %d:\n%s", c, out)
			}
			if got, want := strings.TrimSpace(out), strings.Join(tc.want, "\n"); got != want {
				t.Fatalf("output:\n%s\nwant:\n%s", got, want)
			}
			if now := h.clock.Now(); now != tc.virtual {
				t.Errorf("virtual clock at the end %v, want %v", now, tc.virtual)
			}
			if elapsed > tc.virtual/2 {
				t.Errorf("took %v real for %v of virtual timers", elapsed, tc.virtual)
			}
			t.Logf("%v virtual in %v real", tc.virtual, elapsed)
		})
	}
}

// TestTimerDeadlinesInState: an armed timer is a deadline of the state,
// named after its kind, at its virtual expiry; the clock jumps to it when
// nothing else is enabled.
func TestTimerDeadlinesInState(t *testing.T) {
	h := newHarness(t, Options{Clock: &testClock{}})
	h.launch("n", bin(t, "c", "timerfd_tick"))
	seen := false
	res := h.run(nil, func(st *State) bool {
		for _, d := range st.Deadlines {
			if d.What == "timerfd" && d.At == 2*time.Second && d.Node == "n" && strings.HasPrefix(d.LPID, "n/0/") {
				seen = true
			}
		}
		return seen
	})
	if !seen {
		t.Fatalf("no timerfd deadline at 2s; last deadlines %+v", res.state.Deadlines)
	}
}

// TestErlangReceiveAfter: Erlang/OTP's idle schedulers arm a timerfd and
// wait in epoll_wait(-1); `receive after 200` must end at 200 virtual ms.
func TestErlangReceiveAfter(t *testing.T) {
	erl, err := exec.LookPath("erl")
	if err != nil {
		t.Skip("erl not installed (apt-get install erlang-base)")
	}
	h := newHarness(t, Options{Clock: &testClock{}})
	h.launch("erl", erl, "-noshell", "-eval",
		`T0 = erlang:monotonic_time(millisecond), receive after 200 -> ok end, `+
			`io:format("after ~b~n", [erlang:monotonic_time(millisecond) - T0]), halt().`)
	start := time.Now()
	res := h.run(nil, nil)
	out := h.output("erl")
	if c := exitCode(t, res.exits, "erl"); c != 0 {
		t.Fatalf("exit %d:\n%s", c, out)
	}
	if !strings.Contains(out, "after 200\n") {
		t.Fatalf("receive after 200 did not end at 200 virtual ms: %q", out)
	}
	t.Logf("erl: %v virtual in %v real", h.clock.Now(), time.Since(start))
}

func TestTimerHelpers(t *testing.T) {
	for _, tc := range []struct {
		left int64
		want int64
	}{
		{0, 0}, {1, 1}, {499_999_999, 1}, {1_000_000_000, 1}, {1_499_999_999, 1},
		{1_500_000_000, 2}, {4_999_999_999, 5},
	} {
		if got := alarmSeconds(tc.left); got != tc.want {
			t.Errorf("alarmSeconds(%d) = %d, want %d", tc.left, got, tc.want)
		}
	}
	for _, tc := range []struct{ value, want int64 }{
		{0, 0}, {1, 1000}, {1000, 1000}, {500_000_001, 500_001_000},
	} {
		if got := roundUsec(spec{value: tc.value}).value; got != tc.want {
			t.Errorf("roundUsec(%d) = %d, want %d", tc.value, got, tc.want)
		}
	}
	status := "Name:\tx\nSigQ:\t1/100\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000002000\nSigBlk:\t0000000180000000\n"
	for _, tc := range []struct {
		field string
		want  uint64
	}{
		{"SigPnd:", 0}, {"ShdPnd:", 1 << (14 - 1)}, {"SigBlk:", 1<<31 | 1<<32}, {"SigIgn:", 0},
	} {
		if got := statusMask(status, tc.field); got != tc.want {
			t.Errorf("statusMask(%s) = %#x, want %#x", tc.field, got, tc.want)
		}
	}
	for _, tc := range []struct {
		clk, want int32
		ok        bool
	}{
		{0, 0, true}, {1, 1, true}, {7, 7, true}, {8, 0, true}, {9, 7, true},
		{2, 0, false}, {3, 0, false}, {-6, 0, false},
	} {
		if got, ok := virtualClock(tc.clk); got != tc.want || ok != tc.ok {
			t.Errorf("virtualClock(%d) = %d, %v; want %d, %v", tc.clk, got, ok, tc.want, tc.ok)
		}
	}
}

// TestErlangMnesiaTwoNodes runs testdata/erlang/mnesia's two nodes on
// loopback (one epmd serves both): the client joins the server's Mnesia
// cluster, writes and reads three records, and exits 0. Distributed Erlang
// and Mnesia time out, retry and tick on timers: without virtual kernel
// timers this never finishes.
func TestErlangMnesiaTwoNodes(t *testing.T) {
	erl, err := exec.LookPath("erl")
	if err != nil {
		t.Skip("erl not installed (apt-get install erlang-base erlang-mnesia)")
	}
	if real, err := filepath.EvalSymlinks(erl); err == nil {
		if m, _ := filepath.Glob(filepath.Join(filepath.Dir(real), "..", "lib", "mnesia-*")); len(m) == 0 {
			t.Skip("Mnesia not installed (apt-get install erlang-mnesia)")
		}
	}
	_, file, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(file), "..", "testdata", "erlang", "mnesia", "mnesia_kv.erl")
	boot := func(args string) string {
		return fmt.Sprintf(`{ok, M, B} = compile:file(%q, [binary]), {module, M} = code:load_binary(M, "mnesia_kv.erl", B), M:main([%s]).`, src, args)
	}
	h := newHarness(t, Options{Clock: &testClock{}, Capture: true})
	h.launch("s", erl, "-name", "s@127.0.0.1", "-setcookie", "lockstep", "-noshell", "-eval", boot(`"server"`))
	h.launch("c", erl, "-name", "c@127.0.0.1", "-setcookie", "lockstep", "-noshell", "-eval", boot(`"client", "s@127.0.0.1", "3"`))
	start := time.Now()
	res := h.run(nil, func(st *State) bool {
		for _, e := range st.Exits {
			if e.Node == "c" && e.Root {
				return true
			}
		}
		return false
	})
	if c := exitCode(t, res.exits, "c"); c != 0 || !strings.Contains(h.output("c"), "ok 3\n") {
		t.Fatalf("client exit %d:\n%s\nserver:\n%s", c, h.output("c"), h.output("s"))
	}
	t.Logf("mnesia: %v virtual in %v real, %d ops", h.clock.Now(), time.Since(start), len(res.ops))
}

// TestTimerfdRacesReply: a timerfd timeout races the server's reply in one
// epoll_wait(-1). Released at once, the reply wins at virtual time 0; held
// in flight, the timer fires at exactly its virtual expiry.
func TestTimerfdRacesReply(t *testing.T) {
	for _, tc := range []struct {
		name string
		hold bool
		code int
		want string
	}{
		{"reply first", false, 0, "reply bytes=4 elapsed_ms=0\n"},
		{"reply held", true, 3, "timeout elapsed_ms=750\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Options{Clock: &testClock{}, Capture: true})
			h.launch("server", bin(t, "c", "pingpong_server"), "7351")
			h.launch("client", bin(t, "c", "timerfd_client"), "127.0.0.1", "7351", "750")
			res := h.run(func(st *State) *sched.Op {
				for _, o := range st.Enabled {
					if tc.hold && o.Kind == sched.Deliver && o.Node == "server" {
						continue
					}
					return o
				}
				return nil
			}, rootExited("client"))
			if c := exitCode(t, res.exits, "client"); c != tc.code || h.output("client") != tc.want {
				t.Fatalf("client exit %d, output %q; want %d, %q", c, h.output("client"), tc.code, tc.want)
			}
		})
	}
}

// TestTimerfdFallbackExpiry: without TFD_IOC_SET_TICKS, a due timerfd is
// armed for 1ns and is readable, with one expiration, when expireNow returns.
func TestTimerfdFallbackExpiry(t *testing.T) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_CLOEXEC|unix.TFD_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	tr := &vtime{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	tr.expireNow(&vtimer{kind: kindTimerfd, fd: fd, dup: fd}, unix.ENOTTY)
	if !readyFd(fd, unix.POLLIN) {
		t.Fatal("timerfd not readable after expireNow")
	}
	var b [8]byte
	if n, err := unix.Read(fd, b[:]); n != 8 || err != nil || binary.LittleEndian.Uint64(b[:]) != 1 {
		t.Fatalf("read %d bytes (%v), count %d; want one expiration", n, err, binary.LittleEndian.Uint64(b[:]))
	}
}
