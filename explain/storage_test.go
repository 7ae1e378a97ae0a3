package explain

import (
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/sched"
)

// TestLostWrites: a power cut names the requests its node had answered
// whose bytes a write it took back held, and no other: not one it had not
// answered yet, not one whose write it kept, not one from before the
// node's last restart, and not one that shares only the protocol's
// framing and a key with a lost write.
func TestLostWrites(t *testing.T) {
	const (
		set1 = "*3\r\n$3\r\nSET\r\n$2\r\nk1\r\n$6\r\nc1-0-1\r\n"
		set2 = "*3\r\n$3\r\nSET\r\n$2\r\nk0\r\n$6\r\nc1-0-2\r\n"
		set3 = "*3\r\n$3\r\nSET\r\n$2\r\nk1\r\n$6\r\nc1-0-3\r\n"
		get1 = "*2\r\n$3\r\nGET\r\n$2\r\nk1\r\n"
		ok   = "+OK\r\n"
	)
	in := func(data string) sched.Record {
		return sched.Record{Op: sched.Op{Kind: sched.Deliver, Node: "c1", LPID: "c1/0/t0", Object: "inbox:r1"}, Data: []byte(data)}
	}
	out := func(data string) sched.Record {
		return sched.Record{Op: sched.Op{Kind: sched.Deliver, Node: "r1", LPID: "r1/0/t0", Object: "inbox:c1"}, Data: []byte(data)}
	}
	fault := func(k sched.Kind) sched.Record { return sched.Record{Op: sched.Op{Kind: k, Node: "r1", LPID: "fault"}} }
	aof := func(off int64, data string) sched.LostWrite {
		return sched.LostWrite{File: "r1/appendonlydir/appendonly.aof.1.incr.aof", Off: off, Len: int64(len(data)), Data: []byte(data)}
	}
	// The AOF's first entry after a start is preceded by a SELECT.
	const sel = "*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n"
	for _, tc := range []struct {
		name string
		recs []sched.Record
		lost []sched.LostWrite
		want []string // the requests named, by their bytes
	}{
		{"answered and lost", []sched.Record{in(set1), out(ok), in(get1), out("$6\r\nc1-0-1\r\n"), in(set2), out(ok)},
			[]sched.LostWrite{aof(100, sel+set1), aof(160, set2)}, []string{set1, set2}},
		{"one kept", []sched.Record{in(set1), out(ok), in(set2), out(ok)},
			[]sched.LostWrite{aof(160, set2)}, []string{set2}},
		{"not answered before the cut", []sched.Record{in(set1), out(ok), in(set2)},
			[]sched.LostWrite{aof(100, set1), aof(137, set2)}, []string{set1}},
		{"before the last restart", []sched.Record{in(set3), out(ok), fault(faults.Restart), in(set1), out(ok)},
			[]sched.LostWrite{aof(0, sel+set3), aof(100, set1)}, []string{set1}},
		{"framing and key only", []sched.Record{in(get1), out("$-1\r\n")},
			[]sched.LostWrite{aof(0, set1)}, nil},
		{"nothing lost", []sched.Record{in(set1), out(ok)}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cut := fault(faults.Power)
			cut.Lost = tc.lost
			recs := append(append([]sched.Record(nil), tc.recs...), cut)
			for i := range recs {
				recs[i].Step = i + 1
			}
			got := lostWrites(recs, len(recs)-1, nil)
			if len(got) != len(tc.want) {
				t.Fatalf("named %v, want %d requests", got, len(tc.want))
			}
			for i, l := range got {
				if want := sched.FormatData([]byte(tc.want[i]), len(tc.want[i])); l.Request.Data != want {
					t.Errorf("lost[%d] names %s, want %s", i, l.Request.Data, want)
				}
				if l.Answer.Node != "r1" || l.Answer.Step <= l.Request.Step || l.Answer.Data == "" {
					t.Errorf("lost[%d] answered by %+v: want r1's answer after the request", i, l.Answer)
				}
				if !strings.Contains(l.String(), "appendonly.aof.1.incr.aof") {
					t.Errorf("lost[%d] %s does not name the file", i, l)
				}
			}
		})
	}
}
