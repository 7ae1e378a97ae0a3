package engine

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/conflict"
	"github.com/lockstep-dev/lockstep/coverage"
	"github.com/lockstep-dev/lockstep/explore"
	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/result"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/spec"
)

// Explore is the strategy name of an exploring campaign: POS underneath,
// with a corpus of the trials that showed new features to branch from
// (package explore). Explore+ ("explore+") has POS+ underneath: fresh
// draws, and every choice a branch leaves to its strategy, release at once
// what the conflict history learned never conflicts.
const Explore = "explore"

// exploring says whether name is an exploring campaign's strategy, and
// the strategy its fresh draws and branches use.
func exploring(name string) (bool, string) {
	base, plus := strings.CutSuffix(name, "+")
	if base != Explore {
		return false, ""
	}
	if plus {
		return true, "pos+"
	}
	return true, "pos"
}

// learned is what a generation of trials sees of the campaign's earlier
// generations: the conflict history's predictions ("+" strategies) and
// the corpus (explore).
type learned struct {
	pred sched.Predictor
	view *explore.View
}

// learnFrom freezes what the trials before a generation taught: a
// snapshot of the history, a view of the corpus with its energies.
func learnFrom(hist *conflict.History, corpus *explore.Corpus, cc *campaignCoverage) learned {
	var l learned
	if hist != nil {
		l.pred = hist.Snapshot()
	}
	if corpus != nil && cc != nil {
		l.view = corpus.Freeze(cc.cov.CountOf)
	}
	return l
}

// trialStrategy sets p's strategy for the trial: the named one, or under
// explore a fresh POS draw or a branch of a corpus entry, which runs with
// that entry's seed (its nodes' randomness and its fault and delay draws,
// so that its prefix replays) while the strategy after the branch takes
// the trial's own. It returns the explore plan (zero otherwise).
func trialStrategy(sp *spec.Spec, name string, l learned, p *trialParams) (explore.Plan, error) {
	ok, under := exploring(name)
	if !ok {
		s, err := newStrategy(sp, name, l.pred)
		p.strategy = s
		return explore.Plan{}, err
	}
	pos, err := newStrategy(sp, under, l.pred)
	if err != nil {
		return explore.Plan{}, err
	}
	plan := l.view.Plan(p.seed, faults.ReplayOf)
	if plan.Parent == nil {
		p.strategy = pos
		return plan, nil
	}
	b, err := plan.Branch(pos, p.seed, faults.ReplayOf)
	if err != nil {
		return plan, err
	}
	if plan.Change == sched.Aim {
		a := plan.Aim
		b.Hold = faults.KindHold(a.From, a.To, a.Shape, a.Label, a.Hold)
		switch {
		case a.Slow:
			b.Hold = faults.KindSlow(a.From, a.To, a.Shape, a.Label, a.Hold, a.While)
		case a.Gray && a.From == sched.AnyNode:
			b.Hold = faults.AimedGray(a.To, true, a.Shape, a.Label, a.Hold)
		case a.Gray:
			b.Hold = faults.AimedGray(a.From, false, a.Shape, a.Label, a.Hold)
		case a.Drop:
			b.Hold = faults.AimedDrop(a.From, a.To, a.Shape, a.Label)
		}
	}
	p.strategy = b
	p.seed = plan.Parent.Seed
	return plan, nil
}

// aiming is what an exploring campaign's Aim change may do under the
// spec's fault plan: hold one kind of message on one link when the plan
// allows holds, slow it when it allows slow links, make one of its nodes
// gray one way when it allows grays, lose one datagram of a kind when it
// allows drops, within its budget, max_hold, min_outage and max_outage,
// on links with an end among its nodes; nothing otherwise (the arm is
// off).
func aiming(p spec.FaultPlan) explore.Aiming {
	has := func(k sched.Kind) bool { return slices.Contains(p.Kinds, spec.FaultKind(k)) }
	a := explore.Aiming{Nodes: p.Nodes, Hold: has(faults.Hold), Slow: has(faults.Slow), Gray: has(faults.Gray), Drop: has(faults.Drop),
		MaxHold: p.MaxHold, MaxOutage: p.MaxOutage, MinOutage: p.MinOutage, Budget: p.Budget}
	if !p.Enabled() || !a.Hold && !a.Slow && !a.Gray && !a.Drop {
		return explore.Aiming{}
	}
	return a
}

// lasts are the fault kinds of the spec's plan whose faults an exploring
// campaign's Longer change may make last longer, each with the longest the
// plan allows (faults.Plan.Lasts); nil without a plan (the arm is off).
func lasts(sp spec.FaultPlan) (map[sched.Kind]time.Duration, error) {
	if !sp.Enabled() {
		return nil, nil
	}
	p, err := faultPlan(sp)
	if err != nil {
		return nil, err
	}
	var out map[sched.Kind]time.Duration
	for _, k := range p.Kinds {
		if _, most, ok := p.Lasts(k); ok {
			if out == nil {
				out = map[sched.Kind]time.Duration{}
			}
			out[k] = most
		}
	}
	return out, nil
}

// trialFeatures are a trial's features as the campaign's coverage read
// them, and the record at which it first showed one no earlier trial had
// (-1: none, or only in its lines).
type trialFeatures struct {
	fs      coverage.Features
	novelAt int
	plan    explore.Plan // what the trial ran (explore)
	// msgs are its messages with their kinds, for an entry's Messages.
	msgs []coverage.Message
}

// planned notes on an exploring campaign's trial what it ran, and keeps
// the plan until the trial is counted.
func (c *campaign) planned(r *TrialResult, i int, plan explore.Plan, s sched.Strategy) {
	r.Plan = plan.String()
	if b, ok := s.(*sched.Branch); ok && b.Diverged > 0 {
		r.Plan += fmt.Sprintf(" (the prefix diverged at step %d)", b.Diverged)
		c.opts.Logger.Info("explore: prefix diverged", "trial", i, "step", b.Diverged, "why", b.Why)
	}
	c.opts.Logger.Info("explore", "trial", i, "plan", r.Plan, "outcome", r.Outcome.Kind)
	c.mu.Lock()
	c.plans[i] = plan
	c.mu.Unlock()
}

// keep offers a counted trial to the corpus (nil unless exploring), with
// its features as the coverage read them and how close it came to the
// spec's sometimes properties, and notes the corpus size.
func keep(corpus *explore.Corpus, cc *campaignCoverage, sum *Summary, r *TrialResult, tf trialFeatures) {
	if corpus == nil || cc == nil {
		return
	}
	ids := make([]int, 0, len(tf.fs))
	for _, f := range tf.fs {
		ids = append(ids, cc.cov.ID(f))
	}
	var msgs []explore.Message
	if corpus.Aiming.On() {
		for _, m := range tf.msgs {
			msgs = append(msgs, explore.Message{Record: m.Record, From: m.From, To: m.To, Kind: cc.cov.ID(m.Kind.Feature()),
				Shape: m.Kind.Shape, Label: m.Kind.Label(), Datagram: m.Record < len(r.Records) && r.Records[m.Record].Op.Datagram()})
		}
	}
	corpus.Add(&explore.Entry{Trial: r.Index, Seed: r.Seed, Records: r.Records, Features: ids, Novel: r.Novel, NovelAt: tf.novelAt,
		Hits: hitsOf(r), Goals: goalsOf(sum.Spec, r), Messages: msgs, Races: racesOf(r.Records)}, tf.plan, cc.cov.CountOf)
	r.Corpus = corpus.Len()
	sum.Coverage.Corpus = r.Corpus
	sum.Coverage.Packed = corpus.Packed()
}

// racesOf are the races of a trial a Flip may reverse (conflict.Races),
// their orders named by the two ops' signatures and the shapes of what
// they sent or delivered (one helper may send every kind of message):
// two program ops a strategy released, not faults, advances or a quiet
// period's recoveries. Of each order, the first race and the last.
func racesOf(recs []sched.Record) []explore.Race {
	keys := make([]string, len(recs))
	key := func(i int) string {
		if keys[i] == "" {
			r := &recs[i]
			k := conflict.DefaultScheme.Key(r.Op.Signature())
			if r.Op.Msg == "" && len(r.Data) > 0 && (r.Op.Kind == sched.Send || r.Op.Kind == sched.Deliver) {
				k += " " + coverage.Shape(r.Data, int(max(r.Result, int64(len(r.Data)))))
			}
			keys[i] = k
		}
		return keys[i]
	}
	program := func(r *sched.Record) bool {
		return !r.Auto && !r.Op.Kind.IsFault() && r.Op.Kind != sched.Advance
	}
	type order struct{ a, b string }
	type seen struct{ first, last conflict.Race }
	byOrder := map[order]*seen{}
	var orders []order
	for _, rc := range conflict.Races(recs) {
		if !program(&recs[rc.A]) || !program(&recs[rc.B]) {
			continue
		}
		o := order{key(rc.A), key(rc.B)}
		if s := byOrder[o]; s != nil {
			s.last = rc
			continue
		}
		byOrder[o] = &seen{rc, rc}
		orders = append(orders, o)
	}
	var out []explore.Race
	for _, o := range orders {
		s := byOrder[o]
		for _, rc := range []conflict.Race{s.first, s.last} {
			out = append(out, explore.Race{A: rc.A, B: rc.B, Order: o.a + "\x00" + o.b, Reverse: o.b + "\x00" + o.a,
				OneWay: consumes(recs[rc.A].Op.Kind, recs[rc.B].Op.Kind)})
			if s.first == s.last {
				break
			}
		}
	}
	return out
}

// consumes says whether an op of kind a takes in what one of kind b
// brings (a recv or a poll a delivery, an accept a connect): had b come
// first, a would have named it as a cause, and the two would be ordered,
// not a race the other way round.
func consumes(a, b sched.Kind) bool {
	return (a == sched.Recv || a == sched.Poll) && b == sched.Deliver || a == sched.Accept && b == sched.Connect
}

// hitsOf are a trial's lines that are its campaign's symptom's.
func hitsOf(r *TrialResult) []explore.Hit {
	var out []explore.Hit
	for _, h := range r.SymptomHits {
		out = append(out, explore.Hit{Line: h[0], At: h[1]})
	}
	return out
}

// goalsOf is how close a trial came to each of the spec's sometimes
// properties, in spec order: an exploring campaign's goals (unreached,
// a sometimes steers the branches to the trials that came closest).
func goalsOf(sp *spec.Spec, r *TrialResult) []explore.Approach {
	if sp == nil {
		return nil
	}
	var out []explore.Approach
	for _, p := range sp.Properties {
		if p.Kind != spec.Sometimes {
			continue
		}
		a := explore.Approach{Reached: slices.Contains(r.Reached, p.Name)}
		if i := slices.IndexFunc(r.Near, func(n result.Near) bool { return n.Name == p.Name }); i >= 0 {
			a.Words, a.At = r.Near[i].Words, r.Near[i].Step
		}
		out = append(out, a)
	}
	return out
}
