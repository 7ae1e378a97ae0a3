package explore

import "math/rand/v2"

// flipWait is the least number of decisions a reversing Flip keeps its op
// back, beyond twice the decisions between the race's two ops in the
// parent's trial.
const flipWait = 16

// countRaces counts the race orders a trial showed (each once per trial)
// and returns its races as an entry keeps them (the engine hands an
// order's first and last race only: the two ways a run meets it, its
// first exchange and the one the trial ended with).
func (c *Corpus) countRaces(e *Entry) []race {
	if len(e.Races) == 0 {
		return nil
	}
	if c.orders == nil {
		c.orders = map[string]int32{}
	}
	id := func(key string) int32 {
		n, ok := c.orders[key]
		if !ok {
			n = int32(len(c.orderSeen))
			c.orders[key] = n
			c.orderSeen = append(c.orderSeen, 0)
		}
		return n
	}
	counted := map[int32]bool{}
	out := make([]race, 0, len(e.Races))
	for _, r := range e.Races {
		rc := race{a: int32(r.A), b: int32(r.B), order: id(r.Order), rev: -1}
		if !counted[rc.order] {
			counted[rc.order] = true
			c.orderSeen[rc.order]++
		}
		if !r.OneWay {
			rc.rev = id(r.Reverse)
		}
		out = append(out, rc)
	}
	e.Races = nil // kept as races: the keys are the corpus's
	return out
}

// pickRace draws the race of e a Flip reverses, in proportion to how
// many more trials showed its order than its reversed order: an order
// every trial keeps and none reversed (a likely invariant of the
// system's runs, the kind an order bug breaks) weighs most, a race that
// goes either way about as often weighs one, and so does a race whose
// reverse cannot show as one (OneWay: its order says nothing). Only races
// whose first op comes at decision past or later: a branch keeps what its
// entry showed first, or its symptom's or goal's closest line, and varies
// what follows. None when e's trial had no such race.
func (v *View) pickRace(r *rand.Rand, e *Entry, past int) (race, bool) {
	w := make([]float64, len(e.races))
	any := false
	seen := func(o int32) float64 {
		if int(o) < len(v.orderSeen) {
			return float64(v.orderSeen[o])
		}
		return 0
	}
	for i, rc := range e.races {
		if e.before(int(rc.a)) < past {
			continue
		}
		any = true
		w[i] = 1
		if rc.rev >= 0 {
			w[i] = (1 + seen(rc.order)) / (1 + seen(rc.rev))
		}
	}
	if !any {
		return race{}, false
	}
	return e.races[pick(r, w)], true
}
