package faults

import (
	"fmt"
	"slices"

	"github.com/lockstep-dev/lockstep/sched"
)

// probeObject is the Object of an injection the plan's probe aims: its
// node is named at the moment it is injected, so it is offered without one
// and replays match it by kind (sched.Op.IdentityObject).
const probeObject = sched.ProbeObject

// Aiming is what aims a fault the plan's probe aims (Injector.Aim).
type Aiming struct {
	// Answer is what the probe printed, or what the trace recorded it
	// printed (a replay keeps the rest of the trace's draws: Recall).
	Answer string
}

// aimed reports whether the plan aims its injections with a probe.
func (in *Injector) aimed() bool { return len(in.plan.Probe) > 0 }

// aimable says whether the probe aims faults of kind k: resets and drops
// hit a connection or a datagram in flight, drawn among those there are.
func aimable(k sched.Kind) bool { return k != Reset && k != Drop }

// drawAimed draws an injection among the candidates as draw does; an
// aimable one is offered without a node, which its probe names when it is
// chosen.
func (in *Injector) drawAimed(cs []candidate) *sched.Op {
	c := cs[in.r.IntN(len(cs))]
	if !aimable(c.kind) {
		o := in.op(c.kind, c.node, "node:"+c.node)
		in.detail(o)
		return o
	}
	return in.op(c.kind, "", probeObject)
}

// possibleAny says whether a fault of kind k can hit some node of the plan.
func (in *Injector) possibleAny(k sched.Kind) bool {
	return slices.ContainsFunc(in.plan.Nodes, func(n string) bool {
		return in.possible(&sched.Op{Kind: k, Node: n})
	})
}

// aim runs the probe for a chosen injection and aims it: at the node the
// probe named, or, when it named none the fault can hit now (no leader
// yet, a node down), at one drawn from the seed. The answer is kept in
// o.Aim, so the trace shows it and a replay uses it.
func (in *Injector) aim(o *sched.Op) error {
	if in.Aim == nil {
		return fmt.Errorf("faults: %v is aimed by a probe but nothing runs it", o.Kind)
	}
	a, err := in.Aim(o)
	if err != nil {
		return fmt.Errorf("faults: probe for %v: %w", o.Kind, err)
	}
	ans := a.Answer
	o.Aim, o.Aimed = ans, true
	if slices.Contains(in.plan.Nodes, ans) && in.possible(&sched.Op{Kind: o.Kind, Node: ans}) {
		o.Node = ans
	} else {
		var can []string
		for _, n := range in.plan.Nodes {
			if in.possible(&sched.Op{Kind: o.Kind, Node: n}) {
				can = append(can, n)
			}
		}
		if len(can) == 0 {
			return fmt.Errorf("faults: %v offered but no node can take it", o.Kind)
		}
		o.Node = can[in.r.IntN(len(can))]
	}
	in.detail(o)
	return nil
}
