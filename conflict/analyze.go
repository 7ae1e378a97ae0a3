package conflict

import (
	"cmp"
	"slices"
	"sort"

	"github.com/lockstep-dev/lockstep/sched"
)

// Analysis is what one trial's records say about conflicts.
type Analysis struct {
	scheme Scheme
	// Records are the trial's released ops in step order.
	Records []sched.Record
	// Conflicting[i] says whether Records[i] is in at least one conflict.
	Conflicting []bool
}

// lane is a thread of happens-before: an LPID, or a connection's
// deliveries.
func lane(op *sched.Op) string {
	if op.Kind == sched.Deliver || finOf(op) {
		return "deliver:" + op.Conn
	}
	if op.Kind.IsFault() {
		return "fault:" + op.Node
	}
	if op.Kind == sched.Advance {
		// A delay is lockstep's decision, not the waiting thread's op.
		return "advance"
	}
	return op.LPID
}

// observes says whether an op only looks at its object.
func observes(k sched.Kind) bool { return k == sched.Poll }

// accesses are one lane's ops on one object, in lane order, with the
// stretch [lo, hi) known to be marked conflicting already, so repeated
// races against the same ops cost nothing.
type accesses struct {
	idx    []uint32 // position in the lane (epoch)
	rec    []int    // record index
	lo, hi int
}

// markAfter marks every access later than seen (not ordered before the
// current op) and reports whether there was any.
func (l *accesses) markAfter(seen uint32, conflicting []bool) bool {
	n := len(l.idx)
	// First position whose epoch the current op has not seen.
	s := sort.Search(n, func(i int) bool { return l.idx[i] > seen })
	if s == n {
		return false
	}
	mark := func(from, to int) {
		for k := from; k < to; k++ {
			conflicting[l.rec[k]] = true
		}
	}
	if s <= l.hi && l.hi > l.lo {
		if s < l.lo {
			mark(s, l.lo)
			l.lo = s
		}
		mark(l.hi, n)
	} else {
		mark(s, n)
		l.lo = s
	}
	l.hi = n
	return true
}

// Analyze builds happens-before over records (in step order) and marks
// every op that is concurrent with another op on the same object.
//
// Vector clocks are kept per lane, and per op only when a later op names
// it as a cause; an earlier op A of lane q happens before a later op B iff
// B's clock has seen A's position in q, so each comparison is O(1).
func Analyze(records []sched.Record, scheme Scheme) *Analysis {
	return analyzeWith(records, scheme, false, nil)
}

// Race is two ops of a run that conflict, A released before B: B's
// nearest race with A's lane on an object they share, the order a
// reversal (B before A) would change. A and B are indices in the records.
type Race struct{ A, B int }

// Races are every op's nearest races, as Analyze's pass finds them: for
// each op B and each other lane that touched one of B's objects
// concurrently with B, the last such op of that lane (a write, or with B
// a write an observation too), each pair once, in the order of B.
//
// Races also takes two sends on one connection from two threads for a
// race: their order is the order of their bytes on the connection (a
// broker's threads writing to one subscriber). Analyze does not yet: what
// the history learns decides what the "+" strategies release at once,
// and sends it took for conflicting would no longer be.
func Races(records []sched.Record) []Race {
	var out []Race
	start := 0 // where B's races begin in out: they come together
	analyzeWith(records, DefaultScheme, true, func(a, b int) {
		if len(out) > start && out[start].B != b {
			// The pass visits an object's lanes in map order.
			slices.SortFunc(out[start:], func(x, y Race) int { return cmp.Compare(x.A, y.A) })
			start = len(out)
		}
		for _, r := range out[start:] {
			if r.A == a {
				return // B shares two objects with A (an inbox and a connection)
			}
		}
		out = append(out, Race{a, b})
	})
	slices.SortFunc(out[start:], func(x, y Race) int { return cmp.Compare(x.A, y.A) })
	return out
}

// analyzeWith is Analyze's pass, with sends touching their connection's
// byte order when sends is set; race, when not nil, is told each op's
// nearest races (Races).
func analyzeWith(records []sched.Record, scheme Scheme, sends bool, race func(a, b int)) *Analysis {
	a := &Analysis{scheme: scheme, Records: records, Conflicting: make([]bool, len(records))}
	byID := newOpIndex(records)
	lanes, laneOf := laneNumbers(records)
	needed := namedAsCause(records, byID)
	L := len(lanes)
	cur := make([][]uint32, L) // each lane's current clock
	for i := range cur {
		cur[i] = make([]uint32, L)
	}
	saved := make([][]uint32, len(records)) // clocks of ops named as causes
	slab := clockSlab{lanes: L}
	lastDeliver := map[string]int{}
	inboxOf := connInboxes(records)
	// per object, per lane: writes and observations in lane order
	objs := map[string]map[int]*objLane{}

	for i := range records {
		r := &records[i]
		op := &r.Op
		l := int(laneOf[i])
		vc := cur[l]
		predecessors(records, i, byID.find, lastDeliver, func(j int) {
			if s := saved[j]; s != nil {
				join(vc, s)
			}
		})
		if finOf(op) {
			// The FIN goes in the connection's lane, after its bytes; what
			// the closer did before comes before it.
			if k, ok := lanes[op.LPID]; ok {
				join(vc, cur[k])
			}
		}
		vc[l]++
		if needed[i] || op.Kind == sched.Deliver || finOf(op) {
			saved[i] = slab.save(vc)
		}
		w := !observes(op.Kind)
		touched := objects(r, inboxOf)
		if sends && op.Kind == sched.Send && op.Conn != "" {
			touched = append(touched, sendObject(op.Conn))
		}
		for _, obj := range touched {
			per := objs[obj]
			if per == nil {
				per = map[int]*objLane{}
				objs[obj] = per
			}
			touch(per, l, vc, w, i, a.Conflicting, race)
		}
	}
	return a
}

// join makes vc the least clock that has seen both vc and o.
func join(vc, o []uint32) {
	for k, v := range o {
		if v > vc[k] {
			vc[k] = v
		}
	}
}

// opIndex finds a record by its op's ID. Op IDs are dense in practice: a
// slice indexes them when they are, a map when not.
type opIndex struct {
	dense []int32 // record by ID, -1 for none; nil when sparse
	m     map[uint64]int
}

func newOpIndex(records []sched.Record) *opIndex {
	var maxID uint64
	for i := range records {
		maxID = max(maxID, records[i].Op.ID)
	}
	x := &opIndex{}
	if maxID <= uint64(4*len(records)+64) {
		x.dense = make([]int32, maxID+1)
		for i := range x.dense {
			x.dense[i] = -1
		}
		for i := range records {
			x.dense[records[i].Op.ID] = int32(i)
		}
		return x
	}
	x.m = make(map[uint64]int, len(records))
	for i := range records {
		x.m[records[i].Op.ID] = i
	}
	return x
}

// find is the index of the record of op id, if there is one.
func (x *opIndex) find(id uint64) (int, bool) {
	if x.dense != nil {
		if id >= uint64(len(x.dense)) || x.dense[id] < 0 {
			return 0, false
		}
		return int(x.dense[id]), true
	}
	j, ok := x.m[id]
	return j, ok
}

// laneNumbers numbers the lanes of records in the order they first
// appear, and gives each record its lane's number.
func laneNumbers(records []sched.Record) (map[string]int, []int32) {
	lanes := map[string]int{}
	laneOf := make([]int32, len(records))
	// Consecutive records often share a lane: look it up once per run of
	// them.
	prevLane := ""
	prevN := -1
	for i := range records {
		l := lane(&records[i].Op)
		n := prevN
		if l != prevLane {
			var ok bool
			n, ok = lanes[l]
			if !ok {
				n = len(lanes)
				lanes[l] = n
			}
			prevLane, prevN = l, n
		}
		laneOf[i] = int32(n)
	}
	return lanes, laneOf
}

// namedAsCause says of each record whether a record names its op as a
// cause: only those ops' clocks need keeping.
func namedAsCause(records []sched.Record, byID *opIndex) []bool {
	needed := make([]bool, len(records))
	for i := range records {
		for _, c := range records[i].Causes {
			if j, ok := byID.find(c); ok {
				needed[j] = true
			}
		}
	}
	return needed
}

// clockSlab keeps copies of vector clocks of its number of lanes in large
// blocks, so that saving the clock of every delivery and every cause is a
// copy rather than an allocation each.
type clockSlab struct {
	lanes int
	free  []uint32
}

// save returns a copy of vc.
func (s *clockSlab) save(vc []uint32) []uint32 {
	if len(s.free) < s.lanes {
		s.free = make([]uint32, s.lanes*4096)
	}
	c := s.free[:s.lanes:s.lanes]
	s.free = s.free[s.lanes:]
	copy(c, vc)
	return c
}

// objLane is one lane's writes and observations of one object, in lane
// order.
type objLane struct{ w, r accesses }

// touch marks record i (lane l, clock vc; w: it changes the object) and
// the earlier accesses of the object's other lanes it is concurrent with
// as conflicting, then adds i to its lane's accesses.
func touch(per map[int]*objLane, l int, vc []uint32, w bool, i int, conflicting []bool, race func(a, b int)) {
	for q, acc := range per {
		if q == l {
			continue // program order
		}
		seen := vc[q]
		if race != nil {
			nearest(&acc.w, seen, i, race)
			if w {
				nearest(&acc.r, seen, i, race)
			}
		}
		if acc.w.markAfter(seen, conflicting) {
			conflicting[i] = true
		}
		if w && acc.r.markAfter(seen, conflicting) {
			conflicting[i] = true
		}
	}
	mine := per[l]
	if mine == nil {
		mine = &objLane{}
		per[l] = mine
	}
	list := &mine.r
	if w {
		list = &mine.w
	}
	list.idx = append(list.idx, vc[l])
	list.rec = append(list.rec, i)
}

// nearest tells race the last of l's accesses that record i is
// concurrent with (its epoch not seen), if any.
func nearest(l *accesses, seen uint32, i int, race func(a, b int)) {
	if n := len(l.idx); n > 0 && l.idx[n-1] > seen {
		race(l.rec[n-1], i)
	}
}

// objects are what an op touches. A delivery changes both its receiver's
// inbox, which the receiver's polls watch, and its connection, which is
// all a recv on that connection reads: a recv of one connection does not
// race with bytes arriving on another, and an inbox alone would say it
// does.
//
// A close or a shutdown of a connection sends its FIN: the peer's polls
// see it, as they would a delivery, and a recv that reads the end of the
// connection (none of its bytes) reads it. Its op names no inbox (closing
// is the closer's own act), so it gets the inbox the connection's
// deliveries went to.
func objects(r *sched.Record, inboxOf map[string]string) []string {
	op := &r.Op
	if finOf(op) {
		if in := inboxOf[op.Conn]; in != "" {
			return []string{in, finObject(op.Conn)}
		}
		return []string{finObject(op.Conn)}
	}
	switch {
	case op.Object == "":
		return nil
	case op.Conn == "":
		return []string{op.Object}
	case op.Kind == sched.Deliver:
		return []string{op.Object, connObject(op.Conn)}
	case op.Kind == sched.Recv && r.Result == 0:
		return []string{connObject(op.Conn), finObject(op.Conn)}
	case op.Kind == sched.Recv:
		return []string{connObject(op.Conn)}
	}
	return []string{op.Object}
}

func finObject(conn string) string { return "fin:" + conn }

// sendObject is a connection's byte order as its senders change it.
func sendObject(conn string) string { return "send:" + conn }

// finOf reports whether op closes or shuts down a connection, sending its
// FIN down the connection after the bytes queued on it.
func finOf(op *sched.Op) bool {
	return (op.Kind == sched.Close || op.Kind == sched.Shutdown) && op.Object == "" && op.Conn != ""
}

// connInboxes maps each connection direction to the inbox its deliveries
// went to.
func connInboxes(records []sched.Record) map[string]string {
	m := map[string]string{}
	for i := range records {
		op := &records[i].Op
		if op.Kind == sched.Deliver && op.Conn != "" && op.Object != "" {
			m[op.Conn] = op.Object
		}
	}
	return m
}

func connObject(conn string) string { return "conn:" + conn }

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
