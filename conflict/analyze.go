package conflict

import (
	"github.com/lockstep-dev/lockstep/sched"
)

// Analysis is what one trial's records say about conflicts.
type Analysis struct {
	scheme Scheme
	// Records are the trial's released ops in step order.
	Records []sched.Record
	// Conflicting[i] says whether Records[i] is in at least one conflict.
	Conflicting []bool
	// Pairs counts conflicting pairs.
	Pairs int
}

// lane is a thread of happens-before: an LPID, or a connection's
// deliveries.
func lane(op *sched.Op) string {
	if op.Kind == sched.Deliver {
		return "deliver:" + op.Conn
	}
	if op.Kind.IsFault() {
		return "fault:" + op.Node
	}
	return op.LPID
}

// observes says whether an op only looks at its object.
func observes(k sched.Kind) bool { return k == sched.Poll }

// access is one earlier op on an object.
type access struct {
	idx   uint32 // position in the lane (1-based epoch)
	rec   int    // record index
	write bool
}

// Analyze builds happens-before over records (in step order) and marks
// every op that is concurrent with another op on the same object.
//
// Vector clocks are kept per lane, and per op only when a later op names
// it as a cause; an earlier op A of lane q happens before a later op B iff
// B's clock has seen A's position in q, so each comparison is O(1).
func Analyze(records []sched.Record, scheme Scheme) *Analysis {
	a := &Analysis{scheme: scheme, Records: records, Conflicting: make([]bool, len(records))}
	lanes := map[string]int{}
	laneOf := make([]int, len(records))
	byID := make(map[uint64]int, len(records))
	needed := map[uint64]bool{}
	for i := range records {
		op := &records[i].Op
		l := lane(op)
		n, ok := lanes[l]
		if !ok {
			n = len(lanes)
			lanes[l] = n
		}
		laneOf[i] = n
		byID[op.ID] = i
		for _, c := range records[i].Causes {
			needed[c] = true
		}
	}
	L := len(lanes)
	cur := make([][]uint32, L) // each lane's current clock
	for i := range cur {
		cur[i] = make([]uint32, L)
	}
	saved := map[int][]uint32{} // clocks of ops named as causes
	lastDeliver := map[string]int{}
	// per object, per lane: accesses in lane order
	objs := map[string]map[int][]access{}

	for i := range records {
		r := &records[i]
		op := &r.Op
		l := laneOf[i]
		vc := cur[l]
		join := func(o []uint32) {
			for k, v := range o {
				if v > vc[k] {
					vc[k] = v
				}
			}
		}
		for _, c := range r.Causes {
			if j, ok := byID[c]; ok && j < i {
				if s := saved[j]; s != nil {
					join(s)
				}
			}
		}
		if op.Kind == sched.Deliver {
			// Causes name the send; FIFO per connection is the lane.
			if j, ok := lastDeliver[op.Conn]; ok {
				if s := saved[j]; s != nil {
					join(s)
				}
			}
			lastDeliver[op.Conn] = i
		}
		vc[l]++
		if needed[op.ID] || op.Kind == sched.Deliver {
			s := make([]uint32, L)
			copy(s, vc)
			saved[i] = s
		}
		if op.Object == "" {
			continue
		}
		w := !observes(op.Kind)
		per := objs[op.Object]
		if per == nil {
			per = map[int][]access{}
			objs[op.Object] = per
		}
		for q, acc := range per {
			if q == l {
				continue // program order
			}
			seen := vc[q]
			for k := len(acc) - 1; k >= 0 && acc[k].idx > seen; k-- {
				if acc[k].write || w {
					a.Conflicting[acc[k].rec] = true
					a.Conflicting[i] = true
					a.Pairs++
				}
			}
		}
		per[l] = append(per[l], access{idx: vc[l], rec: i, write: w})
	}
	return a
}

// Stats are one trial's prediction figures (Morpheus Table 4): how many
// ops, how many in a real conflict, and how the "+" variant's predictions
// fared — false negatives were released at once but did conflict, false
// positives were held back but never conflicted.
type Stats struct {
	Ops            int `json:"ops"`
	Conflicting    int `json:"conflicting"`
	Immediate      int `json:"immediate"`
	FalseNegatives int `json:"false_negatives"`
	FalsePositives int `json:"false_positives"`
}

// Stats compares the trial's Immediate flags with the conflicts found.
func (a *Analysis) Stats() Stats {
	var s Stats
	for i := range a.Records {
		r := &a.Records[i]
		if r.Op.Kind.IsFault() {
			continue
		}
		s.Ops++
		c := a.Conflicting[i]
		if c {
			s.Conflicting++
		}
		if r.Immediate {
			s.Immediate++
			if c {
				s.FalseNegatives++
			}
		} else if !c {
			s.FalsePositives++
		}
	}
	return s
}
