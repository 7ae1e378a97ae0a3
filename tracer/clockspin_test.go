package tracer

import (
	"encoding/binary"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestClockWaiterLetsHeldCloneRun: a thread that loops reading the clock
// until another sets a flag, sleeping only once time has passed (HotSpot's
// handshakes), while the other is held at a clone until nothing else runs.
// The clock cannot move while lockstep waits, so each waits for the other:
// the grace period used to end it, twice 2 s. The waiter's clock reads,
// counted, let the clone run at once.
// A thread that computes without reading the clock is waited for, as
// before: the clone runs after it. Each mode runs three times and gives
// the same ops in the same order (main's and the waiter's sleeps after the
// flag), as the same schedule must. Each loop the clone ran beside is a
// point real time settled (State.Timed), named the same way in each run.
func TestClockWaiterLetsHeldCloneRun(t *testing.T) {
	requireTracing(t)
	for _, tc := range []struct {
		mode       string
		clockSpins bool
	}{
		{"clock", true},
		{"work", false},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			if tc.clockSpins && !clockReadsCountable() {
				t.Skip("this host refuses hardware breakpoint counters (perf_event_open): the grace period decides")
			}
			var first, firstTimed string
			for run := 0; run < 3; run++ {
				h := newHarness(t, Options{Clock: &testClock{}, CPU: benchCPU()})
				h.launch("n", bin(t, "c", "clock_wait"), tc.mode)
				res := h.run(nil, nil)
				if out := h.output("n"); out != "done\n" {
					t.Fatalf("run %d: output %q", run, out)
				}
				s := h.tr.Stats()
				if got := s.ClockSpins > 0; got != tc.clockSpins {
					t.Errorf("run %d: %d held threads let run beside a clock loop, want some: %v", run, s.ClockSpins, tc.clockSpins)
				}
				if s.Starved != 0 {
					t.Errorf("run %d: %d states with starved threads", run, s.Starved)
				}
				ops := kinds(res.ops)
				var loops int
				for _, n := range res.timed {
					if strings.HasPrefix(n, "clock loop: ") {
						loops++
						if !strings.Contains(n, "waited to run alone") || strings.Contains(n, "while none waited") {
							t.Errorf("run %d: %q does not name the held thread", run, n)
						}
					}
				}
				if uint64(loops) != s.ClockSpins {
					t.Errorf("run %d: %d clock loops noted (%q), %d counted", run, loops, res.timed, s.ClockSpins)
				}
				timed := strings.Join(res.timed, "\n")
				if run == 0 {
					t.Logf("real-time points: %q", res.timed)
					first, firstTimed = ops, timed
				} else if ops != first {
					t.Errorf("run %d released\n%s\nrun 0\n%s", run, ops, first)
				} else if timed != firstTimed {
					t.Errorf("run %d noted\n%s\nrun 0\n%s", run, timed, firstTimed)
				}
			}
		})
	}
}

// clockReadsCountable reports whether the kernel counts this thread's
// executions of an instruction (countClockReads): a host may refuse the
// counter, or, under a hypervisor without debug registers, open it and
// count nothing.
func clockReadsCountable() bool {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	fd, err := countClockReads(unix.Gettid(), -1, uint64(reflect.ValueOf(countedCall).Pointer()))
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	for i := 0; i < 10; i++ {
		countedCall(i)
	}
	var buf [8]byte
	n, err := unix.Read(fd, buf[:])
	return err == nil && n == len(buf) && binary.LittleEndian.Uint64(buf[:]) >= 10
}

//go:noinline
func countedCall(i int) int { return i + 1 }
