package spec

import (
	"fmt"
	"path/filepath"

	"github.com/goccy/go-yaml/ast"
)

// schedulerFields are the scheduler section's.
var schedulerFields = []field[*draft]{
	{"strategy", func(d *decoder, v ast.Node, path string, b *draft) (err error) {
		if b.s.Scheduler.Strategy, err = d.str(v, path); err != nil {
			return err
		}
		if serr := checkStrategy(b.s.Scheduler.Strategy); serr != nil {
			return d.errf(v, path, "%v", serr)
		}
		return nil
	}},
	{"seed", func(d *decoder, v ast.Node, path string, b *draft) (err error) {
		b.s.Scheduler.Seed, err = d.integer(v, path)
		return err
	}},
	{"pct_depth", func(d *decoder, v ast.Node, path string, b *draft) (err error) {
		b.s.Scheduler.PCTDepth, err = d.intIn(v, path, 1, maxPCTDepth)
		b.pctDepth = v
		return err
	}},
	{"conflict", func(d *decoder, v ast.Node, path string, b *draft) error {
		return d.conflict(v, b.s)
	}},
}

// conflictDraft is scheduler.conflict being decoded.
type conflictDraft struct {
	s      *Spec
	weight ast.Node // where weight is, when given
}

// conflictFields are scheduler.conflict's.
var conflictFields = []field[*conflictDraft]{
	{"scheme", func(d *decoder, v ast.Node, path string, c *conflictDraft) error {
		str, err := d.str(v, path)
		if err != nil {
			return err
		}
		if err := checkScheme(str); err != nil {
			return d.errf(v, path, "%v", err)
		}
		c.s.Scheduler.Conflict.Scheme = str
		return nil
	}},
	{"mode", func(d *decoder, v ast.Node, path string, c *conflictDraft) error {
		str, err := d.str(v, path)
		if err != nil {
			return err
		}
		if str != "skip" && str != "weight" {
			return d.errf(v, path, "unknown mode %q (want skip or weight)", str)
		}
		c.s.Scheduler.Conflict.Mode = str
		return nil
	}},
	{"weight", func(d *decoder, v ast.Node, path string, c *conflictDraft) error {
		w, err := d.number(v, path)
		if err != nil {
			return err
		}
		if err := CheckConflictWeight(w); err != nil {
			return d.errf(v, path, "%v", err)
		}
		c.s.Scheduler.Conflict.Weight = w
		c.weight = v
		return nil
	}},
	{"history", func(d *decoder, v ast.Node, path string, c *conflictDraft) error {
		str, err := d.str(v, path)
		if err != nil {
			return err
		}
		if str != "" && !filepath.IsAbs(str) {
			str = filepath.Join(c.s.Dir, str)
		}
		c.s.Scheduler.Conflict.History = str
		return nil
	}},
}

// CheckConflictWeight says why w is no scheduler.conflict.weight, for the
// spec and for run's --conflict-weight alike. It is written so that NaN,
// which every comparison rejects, is refused rather than let through.
func CheckConflictWeight(w float64) error {
	if !(w > 0 && w <= maxWeight) {
		return fmt.Errorf("must be positive and at most %g, got %v", maxWeight, w)
	}
	return nil
}

func (d *decoder) conflict(n ast.Node, s *Spec) error {
	c := &conflictDraft{s: s}
	if err := decodeMap(d, n, "scheduler.conflict", conflictFields, c); err != nil {
		return err
	}
	if c.weight != nil && s.Scheduler.Conflict.Mode != "weight" {
		return d.errf(c.weight, "scheduler.conflict.weight", "only applies with mode weight")
	}
	if s.Scheduler.Conflict.Mode == "weight" && s.Scheduler.Conflict.Weight == 0 {
		s.Scheduler.Conflict.Weight = 10
	}
	return nil
}
