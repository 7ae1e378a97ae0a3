package engine

import (
	"slices"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/sched"
)

// A replay and its trace are compared op for op with the runtime's back-off
// sleeps left out of both (sched.Op.RuntimeBackoff): the machine's timing
// decides them. Any other op in one and not the other still differs, and an
// op from another call site is the same only on the recorded thread.
func TestCompareReplayBackoffs(t *testing.T) {
	send := sched.Op{ID: 5, LPID: "zk/0/t0.1.18", Kind: sched.Send, Site: "libnio.so+0x72eb", Peer: "10.77.0.2:2888", Bytes: 20, Syscall: "write"}
	backoff := sched.Op{ID: 4, LPID: "zk/0/t0.1.1", Kind: sched.Sleep, Thread: "VM Thread", Site: "libc.so.6+0xd3e53", Syscall: "clock_nanosleep"}
	other := backoff
	other.Thread = "WorkerSender"
	resited := send
	resited.Site = "libnio.so+0x7310"
	moved := resited
	moved.LPID = "zk/0/t0.1.19"
	longer := send
	longer.Bytes = 23
	elsewhere := longer
	elsewhere.Peer = "10.77.0.3:2888"
	recs := func(ops ...sched.Op) []sched.Record {
		var out []sched.Record
		for i, o := range ops {
			out = append(out, sched.Record{Step: i + 1, Op: o})
		}
		return out
	}
	// Records of a connection between two Erlang VMs: each message's
	// first bytes are a length and a distribution header (sched.Resized).
	dist := func(recs []sched.Record) []sched.Record {
		for i := range recs {
			recs[i].Data = []byte("\x00\x00\x00\x10\x83D\x01")
		}
		return recs
	}
	for _, tt := range []struct {
		name         string
		trace, rerun []sched.Record
		tail         int // ops the replay's tail released
		same         bool
		resited      int
		short        int
		resized      int
	}{
		{"a back-off only in the trace", recs(send, backoff, send), recs(send, send), 0, true, 0, 0, 0},
		{"a back-off only in the replay", recs(send, send), recs(backoff, send, send), 0, true, 0, 0, 0},
		{"another sleep only in the replay", recs(send, send), recs(other, send, send), 0, false, 0, 0, 0},
		// Past the trace's last op, as a JVM exits: two tail ops, one of
		// them a back-off.
		{"a back-off in the tail", recs(send), recs(send, backoff, send), 2, true, 0, 0, 0},
		// The same thread's send from another call site (sched.Resited).
		{"a send from another site", recs(send, send), recs(send, resited), 0, true, 1, 0, 0},
		{"from another site and thread", recs(send, send), recs(send, moved), 0, false, 0, 0, 0},
		// A passing trace's last op, which the replay's clients were done
		// before (Trial.owed), within replayShortMax.
		{"the trace's last op not made", recs(send, send, other), recs(send, send), 0, true, 0, 1, 0},
		{"the trace's first op not made", recs(other, send, send), recs(send, send), 0, false, 0, 0, 0},
		{"more than a few at the trace's end", recs(append([]sched.Op{send}, slices.Repeat([]sched.Op{other}, replayShortMax+1)...)...), recs(send), 0, false, 0, 0, 0},
		// The same message between Erlang VMs, 3 bytes longer
		// (sched.Resized): counted, not a difference; to another peer, or
		// on a connection of another protocol, it is one.
		{"another byte count", dist(recs(send, send)), recs(longer, send), 0, true, 0, 0, 1},
		{"another byte count, not the VM's message", recs(send, send), recs(longer, send), 0, false, 0, 0, 0},
		{"another byte count and peer", dist(recs(send, send)), recs(send, elsewhere), 0, false, 0, 0, 0},
		{"parted after another count", dist(recs(send, send, send)), recs(longer, send, other), 0, false, 0, 0, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr := &sched.Trace{Records: tt.trace, Outcome: &sched.Outcome{Kind: Pass}}
			res := &TrialResult{Records: tt.rerun, Outcome: Outcome{Kind: Pass}}
			tail := sched.NewReplayTail(10)
			for range tt.tail {
				tail.Next([]*sched.Op{&send})
			}
			rr := compareReplay(tr, res, tail)
			if rr.Same != tt.same || rr.Resited != tt.resited || rr.Same && rr.Short != tt.short || rr.Resized != tt.resized {
				t.Errorf("same %v (%s), %d resited, %d short, %d resized, want %v, %d, %d, %d", rr.Same, rr.Diff, rr.Resited, rr.Short, rr.Resized, tt.same, tt.resited, tt.short, tt.resized)
			}
			if rr.Resized > 0 && (!strings.Contains(rr.Sizes, "the trace has 20 bytes") || !rr.Same && !strings.Contains(rr.Diff, "before it, another byte count at step 1")) {
				t.Errorf("the first op of another count not named: %q, %q", rr.Sizes, rr.Diff)
			}
		})
	}
}

// A replay that parts from its trace says where real time, not a decision,
// settled what ran before the parting (sched.Record.Timed): the first
// point where the run and the replay differ, or that they met the same
// ones, or none. Points after the parting do not count.
func TestRealTimeBefore(t *testing.T) {
	loop := "clock loop: zk2/0/t0.1.1 read the stopped clock while zk2/0/t0.1.17 waited to run alone"
	late := "delivered bytes late: 10.77.0.2:32771>10.77.0.3:2888"
	recs := func(timed map[int][]string) []sched.Record {
		out := make([]sched.Record, 10)
		for i := range out {
			out[i] = sched.Record{Step: i + 1, Timed: timed[i+1]}
		}
		return out
	}
	for _, tc := range []struct {
		name        string
		trace, got  map[int][]string
		parted      int
		want, never string
	}{
		{"none", nil, nil, 5, "real time settled nothing in either run", ""},
		{"same", map[int][]string{3: {loop}}, map[int][]string{3: {loop}}, 5, "at the same points in both (1), the last at step 3 (" + loop + "), 2 steps before", ""},
		{"the run only", map[int][]string{4: {loop}}, nil, 5, "differently: the run at step 4 (" + loop + "), the replay none", ""},
		{"another step", map[int][]string{4: {loop}}, map[int][]string{3: {loop}}, 5, "the run at step 4 (" + loop + "), the replay at step 3", ""},
		{"another point", map[int][]string{2: {loop}, 4: {late}}, map[int][]string{2: {loop}, 4: {loop}}, 5, "the run at step 4 (" + late + "), the replay at step 4 (" + loop + ")", ""},
		{"after the parting", map[int][]string{7: {late}}, nil, 5, "settled nothing in either run", late},
		{"at the end", map[int][]string{9: {late}}, nil, 0, "the run at step 9 (" + late + ")", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := realTimeBefore(recs(tc.trace), recs(tc.got), tc.parted)
			if !strings.Contains(got, tc.want) || tc.never != "" && strings.Contains(got, tc.never) {
				t.Errorf("got %q, want it to say %q", got, tc.want)
			}
		})
	}
}
