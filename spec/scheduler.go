package spec

import (
	"path/filepath"

	"github.com/goccy/go-yaml/ast"
)

func (d *decoder) conflict(n ast.Node, s *Spec) error {
	cp, err := d.fields(n, "scheduler.conflict", "scheme", "mode", "weight", "history")
	if err != nil {
		return err
	}
	var weightNode ast.Node
	for _, q := range cp {
		f := "scheduler.conflict." + q.key
		switch q.key {
		case "scheme":
			v, err := d.str(q.value, f)
			if err != nil {
				return err
			}
			if err := checkScheme(v); err != nil {
				return d.errf(q.value, f, "%v", err)
			}
			s.Scheduler.Conflict.Scheme = v
		case "mode":
			v, err := d.str(q.value, f)
			if err != nil {
				return err
			}
			if v != "skip" && v != "weight" {
				return d.errf(q.value, f, "unknown mode %q (want skip or weight)", v)
			}
			s.Scheduler.Conflict.Mode = v
		case "weight":
			v, err := d.number(q.value, f)
			if err != nil {
				return err
			}
			if v <= 0 || v > maxWeight {
				return d.errf(q.value, f, "must be positive and at most %g, got %v", maxWeight, v)
			}
			s.Scheduler.Conflict.Weight = v
			weightNode = q.value
		case "history":
			v, err := d.str(q.value, f)
			if err != nil {
				return err
			}
			if v != "" && !filepath.IsAbs(v) {
				v = filepath.Join(s.Dir, v)
			}
			s.Scheduler.Conflict.History = v
		}
	}
	if weightNode != nil && s.Scheduler.Conflict.Mode != "weight" {
		return d.errf(weightNode, "scheduler.conflict.weight", "only applies with mode weight")
	}
	if s.Scheduler.Conflict.Mode == "weight" && s.Scheduler.Conflict.Weight == 0 {
		s.Scheduler.Conflict.Weight = 10
	}
	return nil
}
