package explain

import (
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/coverage"
	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/sched"
)

// TestEventKinds: an explanation's events carry their messages' kinds,
// numbered as the explained trace's, and its sentences name a message by
// its kind where its bytes are not text (an Erlang VM's LINK), by its
// bytes where they are.
func TestEventKinds(t *testing.T) {
	// The first 32 bytes of a LINK between two Erlang VMs (examples/mnesia).
	const link = "\x00\x00\x00)\x83D\x02G\x00?\xd6h\x03a\x01XR\x00\x00\x00\x00]\x00\x00\x00\x00e\x92\x00\x81XR"
	recs := []sched.Record{
		{Step: 1, Op: sched.Op{ID: 1, Node: "a", LPID: "a/0/t0", Kind: sched.Deliver, Object: "inbox:b", Conn: "10.77.0.1:4100>10.77.0.2:7000"}, Result: 45, Data: []byte(link)},
		{Step: 2, Op: sched.Op{ID: 2, Node: "c", LPID: "c/0/t0", Kind: sched.Deliver, Object: "inbox:b", Conn: "10.77.0.3:4100>10.77.0.2:7001"}, Result: 7, Data: []byte("LOCK 1\n")},
		{Step: 3, Op: sched.Op{ID: 3, Node: "c", LPID: "c/0/t0", Kind: sched.Send, Syscall: "write", Conn: "10.77.0.3:4100>10.77.0.2:7001"}, Result: 7, Data: []byte("LOCK 2\n")},
	}
	syms := newSymbolizer(nil)
	syms.kinds = coverage.NewNamer(&sched.Trace{Records: recs})
	for _, tc := range []struct {
		i              int
		kind, who, str string
	}{
		{0, `k1 "⟨len⟩dist LINK"`, `a's k1 "⟨len⟩dist LINK"`, `deliver to b "\x00\x00\x00)\x83D\x02G\x00?\xd6h\x03a\x01XR\x00\x00\x00\x00]\x00\x00\x00\x00e\x92\x00\x81XR"… (k1 "⟨len⟩dist LINK")`},
		{1, `k2 "LOCK"`, `c's "LOCK 1\n"`, `deliver to b "LOCK 1\n"`},
		{2, `k2 "LOCK"`, `c's "LOCK 2\n"`, `send(write) "LOCK 2\n"`},
	} {
		ev := event(&recs[tc.i], syms)
		if ev.Kind != tc.kind {
			t.Errorf("step %d: kind %q, want %q", recs[tc.i].Step, ev.Kind, tc.kind)
		}
		if got := who(ev); got != tc.who {
			t.Errorf("step %d: named %q in a sentence, want %q", recs[tc.i].Step, got, tc.who)
		}
		if got := ev.String(); !strings.HasSuffix(got, tc.str) {
			t.Errorf("step %d: %q, want it to end %q", recs[tc.i].Step, got, tc.str)
		}
	}
	if got := runs(event(&recs[2], syms)); got != `c sends "LOCK 2\n"` {
		t.Errorf("runs: %q", got)
	}
	// Without a namer (an explanation's events read back from JSON that
	// has no kinds), the bytes.
	if got := who(event(&recs[0], newSymbolizer(nil))); !strings.HasPrefix(got, `a's "\x00\x00\x00)`) {
		t.Errorf("no namer: %q, want the bytes", got)
	}
}

// TestEffectsNewByKind: what the others send while a fault lasts is new
// when the run without it never sends its kind between the same two
// nodes. A binary message is compared by its kind, not its bytes: an
// Erlang VM's MONITOR_P with other pids is no new message, a SPAWN_REPLY
// the run without the fault never sent is. A text message is compared by
// its bytes with digits ignored, as before.
func TestEffectsNewByKind(t *testing.T) {
	const (
		monitor  = "\x00\x00\x00\x31\x83\x44\x02\x37\x00\x3f\xef\x68\x04\x61\x13\x58\x52\x00\x00\x00\x00\x6c\x00\x00\x00\x00\x65\x92\x00\x82\x52\x01"
		monitor2 = "\x00\x00\x00\x31\x83\x44\x02\x37\x00\x3f\xef\x68\x04\x61\x13\x58\x52\x00\x00\x00\x00\x7e\x00\x00\x00\x01\x65\x92\x00\x82\x52\x01"
		reply    = "\x00\x00\x00\x40\x83\x44\x02\x74\x00\xb2\x3f\x68\x05\x61\x1f\x5a\x00\x03\x52\x00\x65\x92\x00\x82\x00\x03\x0d\x9c\xd4\x20\x00\x01"
	)
	deliver := func(step int, data string, n int) sched.Record {
		return sched.Record{Step: step, Op: sched.Op{ID: uint64(step), Node: "b", LPID: "b/0/t0", Kind: sched.Deliver, Object: "inbox:c", Conn: "10.77.0.2:4100>10.77.0.3:7000"}, Result: int64(n), Data: []byte(data)}
	}
	recs := []sched.Record{
		{Step: 1, Op: sched.Op{ID: 1, Node: "a", LPID: "fault", Kind: faults.Partition}},
		deliver(2, monitor2, 53),
		deliver(3, reply, 68),
		deliver(4, "VOTE 3\n", 7),
		{Step: 5, Op: sched.Op{ID: 5, Node: "a", LPID: "fault", Kind: faults.Heal}},
	}
	without := []sched.Record{deliver(2, monitor, 53), deliver(3, "VOTE 2\n", 7)}
	syms := newSymbolizer(nil)
	syms.kinds = coverage.NewNamer(&sched.Trace{Records: recs})
	ex := effects(recs, 0, without, nil, syms)
	if ex == nil || len(ex.New) != 1 || ex.New[0].Step != 3 {
		t.Fatalf("effects: %+v; want one new message, step 3's SPAWN_REPLY", ex)
	}
	if ex.New[0].Kind != `k2 "⟨len⟩dist SPAWN_REPLY"` {
		t.Errorf("the new message's kind: %q", ex.New[0].Kind)
	}
}
