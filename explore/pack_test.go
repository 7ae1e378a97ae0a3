package explore

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/lockstep-dev/lockstep/sched"
)

// bigRecords are n records with every kind of field a trial's records
// carry set, so that a field gob drops or changes shows as a difference.
func bigRecords(trial, n int) []sched.Record {
	fork := int64(-7820901441767682753)
	var rs []sched.Record
	for i := range n {
		o := sched.Op{ID: uint64(i + 1), Node: "n2", LPID: "n2/0/t0", Kind: sched.Deliver, Thread: "raftex",
			Object: "inbox:n1", Site: "raftex+0x30bb26", Caller: "main.run", Peer: "10.77.0.1:32773",
			Conn: "10.77.0.2:7000>10.77.0.1:32773", Bytes: 67, Syscall: "deliver", NonBlocking: true,
			Msg: fmt.Sprintf("\xa0\x86Granted\xc3%d", trial)}
		r := sched.Record{Step: i + 1, VTime: int64(i) * 1000, Op: o, Result: 67, Causes: []uint64{uint64(i)},
			Data: []byte{0xa0, 0x86, byte(i)}, Trigger: "time"}
		switch i % 7 {
		case 3:
			r.Op = sched.Op{ID: 1<<56 + uint64(i), Node: "n2", LPID: "fault", Kind: "hold", Object: "link:n2>n1",
				Shape: "\xa0{Addr:s Granted:b …", Delay: 975e6, Aim: "n2", Aimed: true, Disk: "prefix", Pick: 9, Hit: "kept 2"}
			r.Fork = &fork
		case 5:
			r.Auto = true
			r.Lost = []sched.LostWrite{{File: "wal", Off: 4, Len: 2, Data: []byte{1, 2}}}
		}
		rs = append(rs, r)
	}
	return rs
}

// TestPackedBranch: past MaxRecords the entries used least recently are
// packed, and a branch of a packed entry forces the very records it would
// have forced unpacked. A fork at seed 0, which gob would lose, keeps its
// entry unpacked.
func TestPackedBranch(t *testing.T) {
	count := func(int) int { return 1 }
	c := New()
	c.MaxRecords = 250
	want := map[int][]sched.Record{}
	for i := range 4 {
		recs := bigRecords(i, 100)
		want[i] = recs
		c.Add(&Entry{Trial: i, Records: recs, Features: []int{i}, Novel: 1, NovelAt: 10}, Plan{}, count)
		if n := c.unpacked(); n > c.MaxRecords {
			t.Fatalf("after trial %d: %d records unpacked, bound %d", i, n, c.MaxRecords)
		}
	}
	packed := 0
	for _, e := range c.entries {
		if e.Records == nil {
			packed++
			if len(e.packed) == 0 || len(e.packed) > 100*50 {
				t.Errorf("trial %d packed into %d bytes", e.Trial, len(e.packed))
			}
		}
	}
	if packed != 2 || c.byTrial[0].Records != nil || c.byTrial[3].Records == nil {
		t.Fatalf("%d entries packed, want the two oldest", packed)
	}
	for i := range 4 {
		e := c.byTrial[i]
		for _, prefix := range []int{0, 40, len(e.decisions)} {
			b, err := Plan{Parent: e, Prefix: prefix, Change: sched.Extend}.Branch(sched.Oldest{}, 1, nil)
			if err != nil {
				t.Fatal(err)
			}
			end := 100
			if prefix < len(e.decisions) {
				end = e.decisions[prefix]
			}
			if !reflect.DeepEqual(b.Prefix, want[i][:end]) {
				t.Errorf("trial %d, prefix %d: the branch forces other records than its parent's", i, prefix)
			}
		}
	}
	// Unpacked to branch, trial 0 was used last: the next add packs others.
	if _, err := (Plan{Parent: c.byTrial[0], Change: sched.Extend}).Branch(sched.Oldest{}, 1, nil); err != nil {
		t.Fatal(err)
	}
	c.Add(&Entry{Trial: 4, Records: bigRecords(4, 100), Features: []int{4}, Novel: 1, NovelAt: 10}, Plan{}, count)
	if c.byTrial[0].Records == nil || c.unpacked() > c.MaxRecords {
		t.Errorf("trial 0 packed again after its branch (unpacked %d)", c.unpacked())
	}

	zero := int64(0)
	recs := bigRecords(9, 100)
	recs[3].Fork = &zero
	c = New()
	c.MaxRecords = 10
	c.Add(&Entry{Trial: 9, Records: recs, Features: []int{1}, Novel: 1, NovelAt: 1}, Plan{}, count)
	if c.byTrial[9].Records == nil {
		t.Errorf("an entry with a fork at seed 0 was packed")
	}
}
