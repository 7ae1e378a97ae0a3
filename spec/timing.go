package spec

import (
	"time"

	"github.com/goccy/go-yaml/ast"
)

// DefaultLivelockSteps bounds the ops a trial releases while virtual time
// stands still (limits.livelock_steps). Real exchanges between timers are
// a few hundred ops; a bulk transfer of a few megabytes a few thousand.
const DefaultLivelockSteps = 20000

// timeFields are the time section's.
var timeFields = []field[*draft]{
	{"epoch", decodeEpoch},
	{"delays", intField(func(b *draft) *int { return &b.s.Time.Delays }, 0, maxDelays)},
	{"max_delay", durationField(func(b *draft) *time.Duration { return &b.s.Time.MaxDelay }, false, maxVirtualTime)},
	{"tick", durationField(func(b *draft) *time.Duration { return &b.s.Time.Tick }, true, time.Second)},
	{"skew", durationField(func(b *draft) *time.Duration { return &b.s.Time.Skew }, true, time.Hour)},
	{"from", durationField(func(b *draft) *time.Duration { return &b.s.Time.From }, true, maxVirtualTime)},
	{"until", func(d *decoder, v ast.Node, path string, b *draft) (err error) {
		b.s.Time.Until, err = d.duration(v, path, false, maxVirtualTime)
		b.timeUntil = v
		return err
	}},
	{"spread", func(d *decoder, v ast.Node, path string, b *draft) error {
		spread, by, err := d.spread(v, path)
		b.noTimeSpread, b.s.Time.By, b.timeSpread = !spread, by, v
		return err
	}},
}

func decodeEpoch(d *decoder, v ast.Node, path string, b *draft) error {
	str, err := d.str(v, path)
	if err != nil {
		return err
	}
	e, perr := time.Parse(time.RFC3339, str)
	if perr != nil {
		return d.errf(v, path, "invalid time %q (want RFC 3339, e.g. 2024-01-01T00:00:00Z)", str)
	}
	if e.Before(minEpoch) || e.After(maxEpoch) {
		return d.errf(v, path, "must be between 1970-01-01T00:00:00Z and 2200-01-01T00:00:00Z, got %s", str)
	}
	b.s.Time.Epoch = e
	return nil
}

// delayWindow checks and completes the delay window (time.from,
// time.until) once the fault plan is known. Without time.until, a spec
// whose faults are spread spreads its delays up to the faults' window's end
// (faults.until: where trouble is wanted, and where the quiet period
// begins), and any other spec does not spread them: its delays are offered from
// time.from on, as soon as a deadline is in reach. until is the node of
// time.until, nil when the spec has none.
func (d *decoder) delayWindow(until ast.Node, s *Spec) error {
	if until == nil {
		if s.Faults.Enabled() && s.Faults.Spread && s.Faults.Until > s.Time.From {
			s.Time.Until = s.Faults.Until
		}
		return nil
	}
	if s.Time.Until <= s.Time.From {
		return d.errf(until, "time.until", "%v is not after time.from (%v)", s.Time.Until, s.Time.From)
	}
	if s.Time.Until > s.Limits.VirtualTime {
		return d.errf(until, "time.until", "%v is past limits.virtual_time (%v)", s.Time.Until, s.Limits.VirtualTime)
	}
	return nil
}

// spread decodes a spread field (faults.spread, time.spread): true (a
// trigger per op, over the window's time or its steps), false (none),
// time or steps (every trigger over that).
func (d *decoder) spread(n ast.Node, field string) (bool, SpreadBy, error) {
	if v, ok := n.(*ast.BoolNode); ok {
		return v.Value, SpreadEither, nil
	}
	if v, ok := n.(*ast.StringNode); ok && (SpreadBy(v.Value) == SpreadTime || SpreadBy(v.Value) == SpreadSteps) {
		return true, SpreadBy(v.Value), nil
	}
	return false, SpreadEither, d.errf(n, field, "must be true, false, time or steps, got %s", describe(n))
}

// boolean decodes true or false.
func (d *decoder) boolean(n ast.Node, field string) (bool, error) {
	if v, ok := n.(*ast.BoolNode); ok {
		return v.Value, nil
	}
	return false, d.errf(n, field, "must be true or false, got %s", describe(n))
}
