package vclock

import (
	"container/heap"
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

// Deadline is one pending wake-up.
type Deadline struct {
	ID    DeadlineID
	At    time.Duration // virtual time since the trial began
	Owner uint64        // caller's key; ties at the same instant wake in Owner order
	seq   uint64
	index int
}

// DeadlineID names a deadline for Cancel.
type DeadlineID uint64

// Clock is one trial's virtual time. It is driven from one goroutine.
type Clock struct {
	now   time.Duration
	epoch time.Time
	limit time.Duration
	q     deadlineHeap
	byID  map[DeadlineID]*Deadline
	next  DeadlineID
	seq   uint64
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
	return &Clock{epoch: epoch, limit: limit, byID: map[DeadlineID]*Deadline{}}
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

// Add registers a deadline at absolute virtual time at.
func (c *Clock) Add(at time.Duration, owner uint64) DeadlineID {
	c.next++
	c.seq++
	d := &Deadline{ID: c.next, At: at, Owner: owner, seq: c.seq}
	heap.Push(&c.q, d)
	c.byID[d.ID] = d
	return d.ID
}

// After registers a deadline d from now; d <= 0 is due at once.
func (c *Clock) After(d time.Duration, owner uint64) DeadlineID {
	if d < 0 {
		d = 0
	}
	at := c.now + d
	if at < c.now { // overflow
		at = Never
	}
	return c.Add(at, owner)
}

// Cancel removes a pending deadline; it reports whether one was removed.
func (c *Clock) Cancel(id DeadlineID) bool {
	d, ok := c.byID[id]
	if !ok {
		return false
	}
	heap.Remove(&c.q, d.index)
	delete(c.byID, id)
	return true
}

// Due reports whether a deadline has passed (or was fired and removed).
func (c *Clock) Due(id DeadlineID) bool {
	d, ok := c.byID[id]
	return !ok || d.At <= c.now
}

// Pending is the number of registered deadlines.
func (c *Clock) Pending() int { return len(c.q) }

// Next returns the earliest pending deadline.
func (c *Clock) Next() (Deadline, bool) {
	if len(c.q) == 0 {
		return Deadline{}, false
	}
	return *c.q[0], true
}

// Advance jumps to the earliest pending deadline and removes and returns
// every deadline due at that instant, in (Owner, insertion) order. With no
// deadline, or only Never ones, it returns nothing. Past the limit, Now
// becomes the limit and the error wraps ErrLimit.
func (c *Clock) Advance() ([]Deadline, error) {
	if len(c.q) == 0 || c.q[0].At == Never {
		return nil, nil
	}
	at := c.q[0].At
	if at > c.limit {
		c.now = c.limit
		return nil, fmt.Errorf("%w: %v", ErrLimit, c.limit)
	}
	if at > c.now {
		c.now = at
	}
	var due []Deadline
	for len(c.q) > 0 && c.q[0].At <= c.now {
		d := heap.Pop(&c.q).(*Deadline)
		delete(c.byID, d.ID)
		due = append(due, *d)
	}
	return due, nil
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

type deadlineHeap []*Deadline

func (h deadlineHeap) Len() int { return len(h) }
func (h deadlineHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if a.At != b.At {
		return a.At < b.At
	}
	if a.Owner != b.Owner {
		return a.Owner < b.Owner
	}
	return a.seq < b.seq
}
func (h deadlineHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *deadlineHeap) Push(x any) {
	d := x.(*Deadline)
	d.index = len(*h)
	*h = append(*h, d)
}
func (h *deadlineHeap) Pop() any {
	old := *h
	d := old[len(old)-1]
	*h = old[:len(old)-1]
	return d
}
