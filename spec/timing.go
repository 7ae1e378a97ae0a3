package spec

import (
	"github.com/goccy/go-yaml/ast"
)

// DefaultLivelockSteps bounds the ops a trial releases while virtual time
// stands still (limits.livelock_steps). Real exchanges between timers are
// a few hundred ops; a bulk transfer of a few megabytes a few thousand.
const DefaultLivelockSteps = 20000

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

// count decodes an integer from 1 to hi.
func (d *decoder) count(n ast.Node, field string, hi int64) (int, error) {
	v, err := d.integer(n, field)
	if err != nil {
		return 0, err
	}
	if v < 1 || v > hi {
		return 0, d.errf(n, field, "must be between 1 and %d, got %d", hi, v)
	}
	return int(v), nil
}
