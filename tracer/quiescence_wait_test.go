package tracer

import "testing"

// What a thread lockstep let run counts as when the grace period runs
// out: only sleepers and spinners let a state be taken; an exit or stop
// the kernel has yet to report, and a runnable thread the CPU never
// reached, are waited for (a state taken before they moved would depend on
// the machine's load).
func TestPastGrace(t *testing.T) {
	for _, tc := range []struct {
		name        string
		s           byte
		ok          bool
		leaderWaits bool
		noCPU       bool
		want        graceVerdict
	}{
		{"asleep", 'S', true, false, false, graceAsleep},
		{"idle kernel thread state", 'I', true, false, false, graceAsleep},
		{"running, first look", 'R', true, false, false, graceBusy},
		{"runnable, given no CPU since", 'R', true, false, true, graceStarved},
		{"zombie not yet reported", 'Z', true, false, false, graceDue},
		{"zombie leader waiting for its threads", 'Z', true, true, false, graceAsleep},
		{"dead, not yet reported", 'X', true, false, false, graceDue},
		{"in a ptrace stop not yet collected", 't', true, false, false, graceDue},
		{"gone from /proc", 0, false, false, false, graceDue},
	} {
		if got := pastGrace(tc.s, tc.ok, tc.leaderWaits, tc.noCPU); got != tc.want {
			t.Errorf("%s: got %d, want %d", tc.name, got, tc.want)
		}
	}
}
