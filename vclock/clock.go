package vclock

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// DefaultEpoch is the realtime clock's reading when a trial starts, unless
// the spec sets another.
var DefaultEpoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// BootOffset is what the monotonic clocks read at the start of a trial: as if
// the machine had booted an hour earlier.
const BootOffset = time.Hour

// Never is a deadline that is never reached (an infinite timeout).
const Never = time.Duration(math.MaxInt64)

// ErrLimit reports that the virtual-time limit was reached.
var ErrLimit = errors.New("virtual time limit reached")

// Linux clock ids (time.h).
const (
	clockRealtime       = 0
	clockMonotonic      = 1
	clockProcessCPU     = 2
	clockThreadCPU      = 3
	clockMonotonicRaw   = 4
	clockRealtimeCoarse = 5
	clockMonotonicCoars = 6
	clockBoottime       = 7
	clockRealtimeAlarm  = 8
	clockBoottimeAlarm  = 9
	clockTAI            = 11
)

// Clock is one trial's virtual time. It is driven from one goroutine.
type Clock struct {
	now   time.Duration
	epoch time.Time
	limit time.Duration
}

// New returns a clock at virtual time 0 whose realtime clock starts at epoch.
// limit <= 0 means no limit.
func New(epoch time.Time, limit time.Duration) *Clock {
	if epoch.IsZero() {
		epoch = DefaultEpoch
	}
	if limit <= 0 {
		limit = Never
	}
	return &Clock{epoch: epoch, limit: limit}
}

// Now is the virtual time elapsed since the trial began.
func (c *Clock) Now() time.Duration { return c.now }

// Limit is the virtual-time limit.
func (c *Clock) Limit() time.Duration { return c.limit }

// Realtime is the virtual wall clock.
func (c *Clock) Realtime() time.Time { return c.epoch.Add(c.now) }

// Virtualized reports whether lockstep answers reads of this clock id; CPU
// time clocks (and the dynamic per-process ones, negative ids) are left to
// the kernel.
func Virtualized(clockid int32) bool {
	switch clockid {
	case clockRealtime, clockMonotonic, clockMonotonicRaw, clockRealtimeCoarse,
		clockMonotonicCoars, clockBoottime, clockRealtimeAlarm, clockBoottimeAlarm, clockTAI:
		return true
	}
	return false
}

// Read returns the value in ns of a clock id, and false when the clock is
// not virtualized. TAI reads the same as realtime: the offset between them
// is not something programs under test rely on.
func (c *Clock) Read(clockid int32) (int64, bool) {
	switch clockid {
	case clockRealtime, clockRealtimeCoarse, clockRealtimeAlarm, clockTAI:
		return c.epoch.UnixNano() + int64(c.now), true
	case clockMonotonic, clockMonotonicRaw, clockMonotonicCoars, clockBoottime, clockBoottimeAlarm:
		return int64(BootOffset + c.now), true
	}
	return 0, false
}

// AdvanceTo moves the clock forward to t (never backwards). Past the limit
// it stops at the limit and returns an error wrapping ErrLimit.
func (c *Clock) AdvanceTo(t time.Duration) error {
	if t > c.limit {
		c.now = c.limit
		return fmt.Errorf("%w: %v", ErrLimit, c.limit)
	}
	if t > c.now {
		c.now = t
	}
	return nil
}
