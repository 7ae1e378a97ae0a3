package tracer

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A drifting wall clock gains rate × elapsed, exactly to the nanosecond
// (no overflow over long trials), and an absolute realtime deadline comes
// that much sooner or later in virtual time; other clocks are unaffected.
func TestDrift(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		ppm  int64
		want time.Duration
	}{
		{time.Second, 100_000, 100 * time.Millisecond},
		{time.Second, -496_000, -496 * time.Millisecond},
		{1500 * time.Millisecond, 1, 1500 * time.Nanosecond},
		{300 * time.Hour, 999_999, 300*time.Hour - 300*time.Hour/1_000_000},
		{7, 500_000, 3},
	} {
		if got := Drifted(tt.d, tt.ppm); got != tt.want {
			t.Errorf("Drifted(%v, %d) = %v, want %v", tt.d, tt.ppm, got, tt.want)
		}
	}
	tr := &vtime{}
	fast := &nodeInfo{drift: 250_000} // 25 % fast
	for _, tt := range []struct {
		ni   *nodeInfo
		id   int32
		want int64
	}{
		{fast, unix.CLOCK_REALTIME, int64(800 * time.Millisecond)},
		{fast, unix.CLOCK_MONOTONIC, int64(time.Second)},
		{&nodeInfo{drift: -500_000}, unix.CLOCK_REALTIME, int64(2 * time.Second)},
		{&nodeInfo{}, unix.CLOCK_REALTIME, int64(time.Second)},
	} {
		if got := tr.untilWall(tt.ni, tt.id, 11*int64(time.Second), 10*int64(time.Second)); got != tt.want {
			t.Errorf("drift %d ppm, clock %d: a deadline 1s of its readings away is %v of virtual time, want %v", tt.ni.drift, tt.id, time.Duration(got), time.Duration(tt.want))
		}
	}
}
