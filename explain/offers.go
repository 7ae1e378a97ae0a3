package explain

import "github.com/lockstep-dev/lockstep/sched"

// A decision reorders only ops that were there to be reordered: a hold
// passes its op over for ops released while it was offered, and a delay
// holds back the ops offered beside it. An op released before the other
// was even offered (a first connection's ACQUIRE, sent before the RELEASE
// it is named with existed) raced with nothing: it is no candidate for the
// pair a decision ordered, and a clause that says a message was in flight
// at some op needs the message offered there. offers says which ops were.

// offers are, per record of a run, the IDs of the ops offered at the
// decision that released it (nil for Auto records, decided by no one).
// An op keeps its ID while it waits, so an ID offered at two decisions is
// one op passed over at the first.
type offers []map[uint64]bool

// newOffers reads a run's offers from the choices a Recorder kept (one
// list per record that is not Auto, in order); nil if they do not fit the
// records.
func newOffers(recs []sched.Record, choices [][]sched.Op) offers {
	out := make(offers, len(recs))
	c := 0
	for j := range recs {
		if recs[j].Auto {
			continue
		}
		if c >= len(choices) {
			return nil
		}
		out[j] = make(map[uint64]bool, len(choices[c]))
		for _, o := range choices[c] {
			out[j][o.ID] = true
		}
		c++
	}
	if c != len(choices) {
		return nil
	}
	return out
}

// at says whether the op with ID id was offered when record j was
// released.
func (o offers) at(j int, id uint64) bool {
	return id != 0 && j >= 0 && j < len(o) && o[j][id]
}

// firstPassed is the first record released while the op with ID id was
// offered, and not that op: where a hold first acted. -1 if none.
func (o offers) firstPassed(recs []sched.Record, id uint64) int {
	for j := range o {
		if o.at(j, id) && recs[j].Op.ID != id {
			return j
		}
	}
	return -1
}

// heldID is the ID of a hold decision's op in a run: the released op's,
// or for an op held to the end (never released) the ID of the op offered
// with the decision's key. 0 if the run never offered it.
func heldID(d sched.Decision, recs []sched.Record, keys []sched.Key, choices [][]sched.Op) uint64 {
	for j := range recs {
		if !recs[j].Auto && keys[j] == d.Key {
			return recs[j].Op.ID
		}
	}
	// Named as the run's keys and the decision name them: by their
	// thread where two threads had ops of one identity on offer at once.
	k := sched.NewKeyer(append([]sched.Key{d.Key}, keys...)...)
	c := 0
	for j := range recs {
		if recs[j].Auto {
			continue
		}
		if c < len(choices) {
			for i := range choices[c] {
				k.Offer(&choices[c][i])
			}
			for i := range choices[c] {
				if k.Key(&choices[c][i]) == d.Key {
					return choices[c][i].ID
				}
			}
		}
		c++
		k.Released(&recs[j].Op)
	}
	return 0
}
