package explain

import (
	"net/netip"
	"strconv"
	"strings"

	"github.com/lockstep-dev/lockstep/coverage"
	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/spec"
)

// Effects are what a fault did while it lasted (from the fault to its
// heal or restart), read off the failing run against the run without the
// fault: the messages the cut held, what the cut-off nodes went on doing
// among themselves, and what the others did that they never do without
// the fault. For a partition of a primary with its client that is the
// write the primary acknowledged, its copy to the replicas held by the
// cut, and the failover on the other side.
type Effects struct {
	// Held are messages sent across the cut while it lasted that arrived
	// only after it ended, or never (Comment says which); a copy of what
	// the cut-off side was sent from inside first.
	Held []Event `json:"held,omitempty"`
	// Inside are messages among the cut-off nodes while it lasted: the
	// request whose content was then held, with its answer, else the
	// first few kinds of message.
	Inside []Event `json:"inside,omitempty"`
	// New are messages among the other nodes, while it lasted, of a kind
	// (identity) the run without the fault never sends.
	New []Event `json:"new,omitempty"`
}

// maxEffects bounds Effects' lists; maxNew its New, where a failover
// (votes, their answers, the promotion) is several kinds of message.
const (
	maxEffects = 4
	maxNew     = 6
	kindBytes  = 12 // the start of a shape that tells a message's kind
)

func kindOf(shape string) string { return shape[:min(kindBytes, len(shape))] }

// identity is what effects tell messages apart by, whole (key) and by its
// start (start: one of each kind, where the answers to one request differ
// further on). A message whose bytes are text is its bytes with digits
// ignored; one whose bytes are not is its kind (coverage.Namer), both
// ways, since its bytes carry ids, counters and addresses as binary
// numbers, which ignoring digits would keep: two of an Erlang VM's
// MONITOR_P differ in their pids.
func (s *faultSpan) identity(r *sched.Record) (key, start string) {
	if !coverage.Text(r.Data) {
		if k := s.syms.kind(r); k != nil {
			key = k.Feature().Key
			return key, key
		}
	}
	key = shape(r.Data)
	return key, kindOf(key)
}

// key is a message's whole identity.
func (s *faultSpan) key(r *sched.Record) string {
	k, _ := s.identity(r)
	return k
}

// addrNodes maps node addresses to names: node i has the subnet's
// address i+1 (spec and netns follow that rule).
func addrNodes(sp *spec.Spec) map[netip.Addr]string {
	out := map[netip.Addr]string{}
	if sp == nil || !sp.Network.Subnet.IsValid() {
		return out
	}
	a := sp.Network.Subnet.Masked().Addr()
	for _, n := range sp.Nodes {
		a = a.Next()
		out[a] = n.Name
	}
	return out
}

// shape is a message's kind for comparing runs: its first bytes without
// digits (times, offsets, lengths and ports differ from run to run).
func shape(b []byte) string {
	var s strings.Builder
	for _, c := range b {
		if c < '0' || c > '9' {
			s.WriteByte(c)
		}
	}
	return s.String()
}

// receiver is the node a delivery goes to.
func receiver(o *sched.Op) string {
	return FailingNode(strings.TrimPrefix(o.Object, "inbox:"))
}

// heldClass is what kept a fault's held messages from their receivers,
// by what the fault did.
type heldClass uint8

const (
	// heldInForce: the fault itself while in force (a slow or flapping
	// link, a hold, a clock fault, and any kind added later).
	heldInForce heldClass = iota
	heldCut               // a cut of the network
	heldDown              // the fault's node down (a crash or a power cut)
	heldPaused            // the fault's node paused
)

// heldClassOf is the class of fault kind k's held messages.
func heldClassOf(k sched.Kind) heldClass {
	switch k {
	case faults.Partition, faults.OneWay, faults.Link, faults.Bipartition:
		return heldCut
	case faults.Crash, faults.Power:
		return heldDown
	case faults.Pause:
		return heldPaused
	}
	return heldInForce
}

// heldBy says what kept fault f's held messages from their receivers: a
// fault in force on a link (slow, flap) is named by its link, another by
// its node.
func heldBy(f *sched.Op) string {
	switch heldClassOf(f.Kind) {
	case heldCut:
		return "held by the cut"
	case heldDown:
		return "sent while " + f.Node + " was down"
	case heldPaused:
		return "sent while " + f.Node + " was paused"
	}
	if link, ok := strings.CutPrefix(f.Object, "link:"); ok {
		return "sent while " + f.Kind.String() + " " + link + " was in force"
	}
	return "sent while " + f.Kind.String() + " of " + f.Node + " was in force"
}

// heldVerb is heldBy's clause for the first held message of the fault op
// names (an Event's Op: the kind, then the syscall in parentheses).
func heldVerb(op string) string {
	k, _, _ := strings.Cut(op, "(")
	switch heldClassOf(sched.Kind(k)) {
	case heldCut:
		return " is held by the cut"
	case heldDown:
		return " goes to a node that is down"
	case heldPaused:
		return " goes to a paused node"
	}
	return " is sent while the " + k + " is in force"
}

// effects reads a fault's effects: recs is the failing run with the fault
// at index at, without the run without it.
func effects(recs []sched.Record, at int, without []sched.Record, sp *spec.Spec, syms *symbolizer) *Effects {
	span := newFaultSpan(recs, at, sp, syms)
	inside, held := span.inside(), span.held()
	ex := &Effects{}
	copied := span.addCopy(ex, held, inside)
	span.addHeld(ex, held, copied)
	if len(ex.Inside) == 0 {
		span.addInside(ex, inside)
	}
	span.addNew(ex, without)
	if len(ex.Held) == 0 && len(ex.Inside) == 0 && len(ex.New) == 0 {
		return nil
	}
	return ex
}

// faultSpan is a fault of the failing run while it lasted, with what
// reading its effects needs.
type faultSpan struct {
	recs []sched.Record
	// at is the fault's index; end its heal's or restart's, or the run's
	// end.
	at, end int
	// cut are the nodes the fault cut off (a partition's side that holds
	// its peer, else the fault's nodes).
	cut         map[string]bool
	nodes       map[netip.Addr]string // node names by address
	deliveredAt map[uint64]int        // a send's ID -> its delivery's index, after the fault
	how         string                // what held the held messages (heldBy)
	syms        *symbolizer
}

func newFaultSpan(recs []sched.Record, at int, sp *spec.Spec, syms *symbolizer) *faultSpan {
	f := &recs[at].Op
	s := &faultSpan{recs: recs, at: at, end: len(recs), cut: map[string]bool{}, nodes: addrNodes(sp),
		deliveredAt: map[uint64]int{}, how: heldBy(f), syms: syms}
	group := f.Node
	if f.Kind == faults.Partition && f.Peer != "" {
		group = f.Peer
	}
	for _, n := range strings.Split(group, ",") {
		s.cut[n] = true
	}
	// The fault lasts until its heal or restart (or the run's end).
	for j := at + 1; j < len(recs); j++ {
		o := &recs[j].Op
		if (o.Kind == faults.Heal || o.Kind == faults.Restart) && strings.Contains(","+o.Node+",", ","+f.Node+",") {
			s.end = j
			break
		}
	}
	for j := at + 1; j < len(recs); j++ {
		if recs[j].Op.Kind == sched.Deliver {
			for _, c := range recs[j].Causes {
				s.deliveredAt[c] = j
			}
		}
	}
	return s
}

// inside are the deliveries among the cut-off nodes while the fault
// lasted.
func (s *faultSpan) inside() []int {
	var inside []int
	for j := s.at + 1; j < s.end; j++ {
		o := &s.recs[j].Op
		if o.Kind == sched.Deliver && len(s.recs[j].Data) > 0 && s.cut[o.Node] && s.cut[receiver(o)] && o.Node != receiver(o) {
			inside = append(inside, j)
		}
	}
	return inside
}

// held are the sends across the cut while the fault lasted that were not
// delivered before it ended.
func (s *faultSpan) held() []int {
	var held []int
	for j := s.at + 1; j < s.end; j++ {
		o := &s.recs[j].Op
		if o.Kind != sched.Send || len(s.recs[j].Data) == 0 {
			continue
		}
		ap, err := netip.ParseAddrPort(o.Peer)
		if err != nil {
			continue
		}
		to, ok := s.nodes[ap.Addr()]
		if !ok || s.cut[o.Node] == s.cut[to] {
			continue
		}
		if d, ok := s.deliveredAt[o.ID]; ok && d < s.end {
			continue
		}
		held = append(held, j)
	}
	return held
}

// heldEvent is held send j, with its receiver and when it arrived.
func (s *faultSpan) heldEvent(j int) Event {
	ev := event(&s.recs[j], s.syms)
	ap, _ := netip.ParseAddrPort(s.recs[j].Op.Peer)
	ev.To = s.nodes[ap.Addr()]
	if d, ok := s.deliveredAt[s.recs[j].Op.ID]; ok {
		ev.Comment = s.how + ": delivered at step " + strconv.Itoa(s.recs[d].Step) + ", after it ended"
	} else {
		ev.Comment = s.how + ": never delivered"
	}
	return ev
}

// addCopy adds the first held send that copies across the cut what was
// sent from inside before it: the request inside, its answer, and the
// copy first. It returns the copy's index, -1 if there is none.
func (s *faultSpan) addCopy(ex *Effects, held, inside []int) int {
	for _, h := range held {
		for _, in := range inside {
			if in < h && string(s.recs[in].Data) == string(s.recs[h].Data) {
				ex.Inside = append(ex.Inside, event(&s.recs[in], s.syms))
				if a := answer(s.recs, in, s.end); a >= 0 {
					ex.Inside = append(ex.Inside, event(&s.recs[a], s.syms))
				}
				ex.Held = append(ex.Held, s.heldEvent(h))
				return h
			}
		}
	}
	return -1
}

// addHeld adds held sends up to maxEffects, one per sender and kind,
// leaving out those with the content of the copy (copied, or -1).
func (s *faultSpan) addHeld(ex *Effects, held []int, copied int) {
	seen := map[string]bool{}
	for _, h := range held {
		if len(ex.Held) >= maxEffects {
			break
		}
		if k := s.recs[h].Op.Node + s.key(&s.recs[h]); !seen[k] && (copied < 0 || string(s.recs[h].Data) != string(s.recs[copied].Data)) {
			seen[k] = true
			ex.Held = append(ex.Held, s.heldEvent(h))
		}
	}
}

// addInside adds the first inside deliveries of each kind, up to
// maxEffects: what the cut-off nodes went on doing when no copy of theirs
// was held.
func (s *faultSpan) addInside(ex *Effects, inside []int) {
	seen := map[string]bool{}
	for _, j := range inside {
		if k := s.key(&s.recs[j]); !seen[k] && len(ex.Inside) < maxEffects {
			seen[k] = true
			ex.Inside = append(ex.Inside, event(&s.recs[j], s.syms))
		}
	}
}

// addNew adds messages among the others, while the fault lasted, of a
// kind the run without the fault never sends between the same two nodes,
// up to maxNew.
func (s *faultSpan) addNew(ex *Effects, without []sched.Record) {
	known := map[string]bool{}
	for j := range without {
		if o := &without[j].Op; o.Kind == sched.Deliver {
			known[o.Node+">"+receiver(o)+"|"+s.key(&without[j])] = true
		}
	}
	seen := map[string]bool{}
	for j := s.at + 1; j < s.end && len(ex.New) < maxNew; j++ {
		o := &s.recs[j].Op
		if o.Kind != sched.Deliver || len(s.recs[j].Data) == 0 || s.cut[o.Node] || s.cut[receiver(o)] {
			continue
		}
		// One of each kind, told by its start: the answers to one
		// request differ further on.
		k, short := s.identity(&s.recs[j])
		if known[o.Node+">"+receiver(o)+"|"+k] || seen[short] {
			continue
		}
		seen[short] = true
		ex.New = append(ex.New, event(&s.recs[j], s.syms))
	}
}

// answer is the first delivery after request in back the other way on
// its connection, before end; -1 if none.
func answer(recs []sched.Record, request, end int) int {
	q := &recs[request].Op
	for j := request + 1; j < end; j++ {
		o := &recs[j].Op
		if o.Kind == sched.Deliver && o.Node == receiver(q) && receiver(o) == q.Node && len(recs[j].Data) > 0 {
			return j
		}
	}
	return -1
}
