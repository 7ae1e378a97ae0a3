package vclock

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

func TestRead(t *testing.T) {
	epoch := time.Date(2030, 5, 1, 0, 0, 0, 0, time.UTC)
	c := New(epoch, time.Minute)
	c.AdvanceTo(1500 * time.Millisecond)
	for _, tc := range []struct {
		id   int32
		want int64
		ok   bool
	}{
		{clockRealtime, epoch.UnixNano() + 1.5e9, true},
		{clockRealtimeCoarse, epoch.UnixNano() + 1.5e9, true},
		{clockTAI, epoch.UnixNano() + 1.5e9, true},
		{clockMonotonic, int64(BootOffset) + 1.5e9, true},
		{clockMonotonicRaw, int64(BootOffset) + 1.5e9, true},
		{clockBoottime, int64(BootOffset) + 1.5e9, true},
		{clockProcessCPU, 0, false},
		{clockThreadCPU, 0, false},
		{-6, 0, false}, // a dynamic per-thread CPU clock
	} {
		got, ok := c.Read(tc.id)
		if got != tc.want || ok != tc.ok || Virtualized(tc.id) != tc.ok {
			t.Errorf("clock %d: got %d,%v want %d,%v", tc.id, got, ok, tc.want, tc.ok)
		}
	}
	if !c.Realtime().Equal(epoch.Add(1500 * time.Millisecond)) {
		t.Errorf("realtime %v", c.Realtime())
	}
}

func TestAdvanceOrderAndTies(t *testing.T) {
	c := New(time.Time{}, 0)
	c.Add(3*time.Second, 9)
	c.Add(time.Second, 5)
	c.Add(time.Second, 2)
	c.Add(time.Second, 2)
	never := c.Add(Never, 1)
	due, err := c.Advance()
	if err != nil {
		t.Fatal(err)
	}
	if len(due) != 3 || due[0].Owner != 2 || due[1].Owner != 2 || due[2].Owner != 5 || due[0].ID > due[1].ID {
		t.Fatalf("due %+v", due)
	}
	if c.Now() != time.Second {
		t.Fatalf("now %v", c.Now())
	}
	due, _ = c.Advance()
	if len(due) != 1 || due[0].Owner != 9 || c.Now() != 3*time.Second {
		t.Fatalf("second advance: %+v at %v", due, c.Now())
	}
	// Only a Never deadline is left: nothing to jump to.
	if due, err := c.Advance(); len(due) != 0 || err != nil || c.Now() != 3*time.Second {
		t.Fatalf("advance with only Never: %v %v", due, err)
	}
	if !c.Cancel(never) || c.Cancel(never) || c.Pending() != 0 {
		t.Fatal("cancel")
	}
}

func TestLimit(t *testing.T) {
	c := New(time.Time{}, 10*time.Second)
	c.After(11*time.Second, 1)
	_, err := c.Advance()
	if !errors.Is(err, ErrLimit) || c.Now() != 10*time.Second {
		t.Fatalf("err %v now %v", err, c.Now())
	}
	if err := New(time.Time{}, time.Second).AdvanceTo(2 * time.Second); !errors.Is(err, ErrLimit) {
		t.Fatalf("AdvanceTo past limit: %v", err)
	}
}

func TestDueAndAfter(t *testing.T) {
	c := New(time.Time{}, 0)
	id := c.After(-time.Second, 1)
	if !c.Due(id) {
		t.Fatal("negative After not due at once")
	}
	id2 := c.After(time.Second, 1)
	if c.Due(id2) {
		t.Fatal("due early")
	}
	c.AdvanceTo(time.Second)
	if !c.Due(id2) {
		t.Fatal("not due at its time")
	}
	c.AdvanceTo(0) // never backwards
	if c.Now() != time.Second {
		t.Fatal("went backwards")
	}
}

func TestRandomStreams(t *testing.T) {
	read := func(seed int64, node string) []byte {
		b := make([]byte, 64)
		NewRandom(seed, node).Read(b)
		return b
	}
	if !bytes.Equal(read(7, "db1"), read(7, "db1")) {
		t.Fatal("same seed and node differ")
	}
	if bytes.Equal(read(7, "db1"), read(8, "db1")) || bytes.Equal(read(7, "db1"), read(7, "db2")) {
		t.Fatal("different seed or node gave the same bytes")
	}
}

func BenchmarkAddAdvance(b *testing.B) {
	c := New(time.Time{}, 0)
	for i := 0; i < b.N; i++ {
		c.After(time.Duration(i%7)*time.Millisecond, uint64(i))
		if c.Pending() > 64 {
			c.Advance()
		}
	}
}
