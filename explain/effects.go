package explain

import (
	"net/netip"
	"strconv"
	"strings"

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
	// (bytes with digits ignored) the run without the fault never sends.
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
	f := &recs[at].Op
	cut := map[string]bool{}
	group := f.Node
	if f.Kind == faults.Partition && f.Peer != "" {
		group = f.Peer
	}
	for _, n := range strings.Split(group, ",") {
		cut[n] = true
	}
	// The fault lasts until its heal or restart (or the run's end).
	end := len(recs)
	for j := at + 1; j < len(recs); j++ {
		o := &recs[j].Op
		if (o.Kind == faults.Heal || o.Kind == faults.Restart) && strings.Contains(","+o.Node+",", ","+f.Node+",") {
			end = j
			break
		}
	}
	nodes := addrNodes(sp)
	deliveredAt := map[uint64]int{}
	for j := at + 1; j < len(recs); j++ {
		if recs[j].Op.Kind == sched.Deliver {
			for _, c := range recs[j].Causes {
				deliveredAt[c] = j
			}
		}
	}
	ex := &Effects{}
	// Inside: deliveries among the cut-off nodes.
	var inside []int
	for j := at + 1; j < end; j++ {
		o := &recs[j].Op
		if o.Kind == sched.Deliver && len(recs[j].Data) > 0 && cut[o.Node] && cut[receiver(o)] && o.Node != receiver(o) {
			inside = append(inside, j)
		}
	}
	// Held: sends across the cut, not delivered before its end.
	var held []int
	for j := at + 1; j < end; j++ {
		o := &recs[j].Op
		if o.Kind != sched.Send || len(recs[j].Data) == 0 {
			continue
		}
		ap, err := netip.ParseAddrPort(o.Peer)
		if err != nil {
			continue
		}
		to, ok := nodes[ap.Addr()]
		if !ok || cut[o.Node] == cut[to] {
			continue
		}
		if d, ok := deliveredAt[recs[j].Op.ID]; ok && d < end {
			continue
		}
		held = append(held, j)
	}
	how := heldBy(f)
	heldEv := func(j int) Event {
		ev := event(&recs[j], syms)
		ap, _ := netip.ParseAddrPort(recs[j].Op.Peer)
		ev.To = nodes[ap.Addr()]
		if d, ok := deliveredAt[recs[j].Op.ID]; ok {
			ev.Comment = how + ": delivered at step " + strconv.Itoa(recs[d].Step) + ", after it ended"
		} else {
			ev.Comment = how + ": never delivered"
		}
		return ev
	}
	// A copy across the cut of what was sent from inside: the request,
	// its answer, and the copy first.
	copied := -1
	for _, h := range held {
		for _, in := range inside {
			if in < h && string(recs[in].Data) == string(recs[h].Data) {
				ex.Inside = append(ex.Inside, event(&recs[in], syms))
				if a := answer(recs, in, end); a >= 0 {
					ex.Inside = append(ex.Inside, event(&recs[a], syms))
				}
				ex.Held = append(ex.Held, heldEv(h))
				copied = h
				break
			}
		}
		if copied >= 0 {
			break
		}
	}
	seen := map[string]bool{}
	for _, h := range held {
		if len(ex.Held) >= maxEffects {
			break
		}
		if k := recs[h].Op.Node + shape(recs[h].Data); !seen[k] && (copied < 0 || string(recs[h].Data) != string(recs[copied].Data)) {
			seen[k] = true
			ex.Held = append(ex.Held, heldEv(h))
		}
	}
	if len(ex.Inside) == 0 {
		seen = map[string]bool{}
		for _, j := range inside {
			if k := shape(recs[j].Data); !seen[k] && len(ex.Inside) < maxEffects {
				seen[k] = true
				ex.Inside = append(ex.Inside, event(&recs[j], syms))
			}
		}
	}
	// New: messages among the others of a kind the run without the fault
	// never sends between the same two nodes.
	known := map[string]bool{}
	for j := range without {
		if o := &without[j].Op; o.Kind == sched.Deliver {
			known[o.Node+">"+receiver(o)+"|"+shape(without[j].Data)] = true
		}
	}
	seen = map[string]bool{}
	for j := at + 1; j < end && len(ex.New) < maxNew; j++ {
		o := &recs[j].Op
		if o.Kind != sched.Deliver || len(recs[j].Data) == 0 || cut[o.Node] || cut[receiver(o)] {
			continue
		}
		k := shape(recs[j].Data)
		// One of each kind, told by its start: the answers to one
		// request differ further on.
		if known[o.Node+">"+receiver(o)+"|"+k] || seen[kindOf(k)] {
			continue
		}
		seen[kindOf(k)] = true
		ex.New = append(ex.New, event(&recs[j], syms))
	}
	if len(ex.Held) == 0 && len(ex.Inside) == 0 && len(ex.New) == 0 {
		return nil
	}
	return ex
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
