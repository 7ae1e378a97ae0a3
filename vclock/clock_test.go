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

func TestLimit(t *testing.T) {
	c := New(time.Time{}, 10*time.Second)
	if err := c.AdvanceTo(11 * time.Second); !errors.Is(err, ErrLimit) || c.Now() != 10*time.Second {
		t.Fatalf("AdvanceTo past limit: err %v now %v", err, c.Now())
	}
}

func TestAdvanceTo(t *testing.T) {
	c := New(time.Time{}, 0)
	if c.Limit() != Never {
		t.Fatalf("no limit: %v", c.Limit())
	}
	if err := c.AdvanceTo(time.Second); err != nil || c.Now() != time.Second {
		t.Fatalf("AdvanceTo: err %v now %v", err, c.Now())
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
