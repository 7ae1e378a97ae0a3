package tracer

import (
	"cmp"
	"slices"
	"strings"
)

// enabled says whether releasing p now would not block.
func (ot *opTable) enabled(p *pendingOp) bool {
	k := ot.kindOf(p)
	if k.interruptible && ot.vt.interruptedBySignal(p) {
		return true
	}
	return k.enabled(p)
}

// enabledOps is enabled for each of ops, in a buffer reused from state to
// state.
func (ot *opTable) enabledOps(ops []*pendingOp) []bool {
	en := ot.enabledBuf[:0]
	for _, p := range ops {
		en = append(en, ot.enabled(p))
	}
	ot.enabledBuf = en
	return en
}

// release lets one pending op proceed.
func (ot *opTable) release(id uint64) (Released, error) {
	p := ot.pending[id]
	if p == nil {
		return Released{}, errUnknownOp(id)
	}
	ot.forget(id)
	k := ot.kindOf(p)
	ot.net.stirOp(p, k)
	if th := p.th; th != nil {
		th.pending = nil
		th.lastOp = id
	}
	if !k.calm {
		ot.net.invalidate()
	}
	return k.release(p)
}

// numberFresh gives the ops that appeared since the last quiescent point
// their IDs, in LPID order so that numbering does not depend on the order
// in which the kernel reported the stops.
func (ot *opTable) numberFresh() {
	slices.SortStableFunc(ot.fresh, func(a, b *pendingOp) int {
		if c := strings.Compare(a.op.LPID, b.op.LPID); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	for _, p := range ot.fresh {
		if p.dropped {
			continue
		}
		ot.nextID++
		p.op.ID = ot.nextID
		ot.pending[p.op.ID] = p
		ot.ordered = append(ot.ordered, p) // IDs only grow
		if p.deadline >= 0 {
			ot.vt.addDeadline(p)
		}
	}
	ot.fresh = ot.fresh[:0]
}
