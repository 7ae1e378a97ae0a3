package engine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lockstep-dev/lockstep/coverage"
	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/spec"
)

// The spec is data: package spec checks its words without importing the
// packages that act on them, and here they become those packages' values.
// The strategy and signature-scheme names go on as strings (sched.New and
// conflict.ParseScheme read them); TestSpecVocabulary checks that every
// word the spec accepts is taken.

// faultPlan is the fault plan of a spec's faults section.
func faultPlan(p spec.FaultPlan) (faults.Plan, error) {
	plan := faults.Plan{
		Nodes: p.Nodes, Budget: p.Budget, From: p.From, Until: p.Until, Spread: p.Spread,
		MaxPause: p.MaxPause, MaxOutage: p.MaxOutage, MaxClockJump: p.MaxClockJump, MaxHold: p.MaxHold,
		MinPause: p.MinPause, MinOutage: p.MinOutage,
		KeepClock: p.KeepClock, MaxDrift: p.MaxDrift, Groups: p.Groups, Shapes: p.Shapes,
		Probe: p.Probe, Follow: p.Follow, Overlap: p.Overlap, Disk: p.Disk,
		Shape:   func(msg string, n int, shape string) bool { return coverage.OfShape([]byte(msg), n, shape) },
		ShapeOf: func(msg string, n int) string { return coverage.Shape([]byte(msg), n) },
	}
	by, err := spreadBy(p.By)
	if err != nil {
		return faults.Plan{}, err
	}
	plan.By = by
	for _, k := range p.Kinds {
		kind, err := faultKind(k)
		if err != nil {
			return faults.Plan{}, err
		}
		plan.Kinds = append(plan.Kinds, kind)
	}
	patterns := func(ms []spec.BytePattern) []faults.Pattern {
		var out []faults.Pattern
		for _, m := range ms {
			out = append(out, faults.Pattern{Prefix: m.Prefix, Contains: m.Contains, Lacks: m.Lacks, OfKind: ofKind(m.Kind)})
		}
		return out
	}
	plan.Match = patterns(p.HoldMatch)
	plan.SlowMatch = patterns(p.SlowMatch)
	plan.DropMatch = patterns(p.DropMatch)
	if p.HoldDirection != "" {
		dir, ok := faults.ParseHoldDir(p.HoldDirection)
		if !ok {
			return faults.Plan{}, fmt.Errorf("spec: unknown hold direction %q", p.HoldDirection)
		}
		plan.HoldDir = dir
	}
	if p.ClockDirection != "" {
		dir, ok := faults.ParseDirection(string(p.ClockDirection))
		if !ok {
			return faults.Plan{}, fmt.Errorf("spec: unknown clock direction %q", p.ClockDirection)
		}
		plan.ClockDirection = dir
	}
	return plan, nil
}

// spreadBy is what a spread field's triggers are drawn over.
func spreadBy(s spec.SpreadBy) (faults.By, error) {
	if s == spec.SpreadEither {
		return faults.ByBoth, nil
	}
	by, ok := faults.ParseBy(string(s))
	if !ok {
		return faults.ByBoth, fmt.Errorf("spec: unknown spread %q", s)
	}
	return by, nil
}

// faultKind is the op kind of a spec's fault kind: the kind of that name,
// which package faults must define.
func faultKind(k spec.FaultKind) (sched.Kind, error) {
	kind, err := sched.ParseKind(string(k))
	if err != nil || !faults.Known(kind) || !slices.Contains(spec.FaultKinds(), k) {
		return sched.KindInvalid, fmt.Errorf("spec: fault kind %q is no fault package faults knows", k)
	}
	return kind, nil
}

// ofKind is what a hold pattern's kind (a learned message kind's label, as
// `lockstep kinds` prints it) matches: messages whose shape begins with
// it; a label copied with the "…" that ends a cut one says as much without
// it. Nil for no kind.
func ofKind(label []byte) func(msg string, n int) bool {
	if len(label) == 0 {
		return nil
	}
	want := strings.TrimSuffix(string(label), "…")
	return func(msg string, n int) bool {
		return msg != "" && strings.HasPrefix(coverage.Shape([]byte(msg), n), want)
	}
}
