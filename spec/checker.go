package spec

import (
	"github.com/goccy/go-yaml/ast"
)

func (d *decoder) checker(n ast.Node, s *Spec) error {
	cp, err := d.fields(n, "checker", "command", "timeout", "model", "history")
	if err != nil {
		return err
	}
	for _, q := range cp {
		switch q.key {
		case "command":
			if s.Checker.Command, err = d.strings(q.value, "checker.command"); err != nil {
				return err
			}
			s.checkerLine = lineOf(q.value)
			if len(s.Checker.Command) == 0 {
				return d.errf(q.value, "checker.command", "must not be empty")
			}
		case "timeout":
			if s.Checker.Timeout, err = d.duration(q.value, "checker.timeout", false, maxRealTime); err != nil {
				return err
			}
		}
	}
	if s.Checker.Model, err = d.checkerModel(n, cp); err != nil {
		return err
	}
	if len(s.Checker.Command) == 0 && s.Checker.Model == nil {
		return d.errf(n, "checker.command", "missing (or give checker.model)")
	}
	return nil
}
