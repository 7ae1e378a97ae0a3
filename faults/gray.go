package faults

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/internal/recent"
	"github.com/lockstep-dev/lockstep/sched"
)

// Gray makes a node's links carry only their commonest kind of message for
// a while: every delivery to the node (or from it), on every link, waits
// unless it is of the kind most of the node's last grayWindow messages
// that way were, and goes when the while ends. That kind is, in most
// systems, the keepalive: a leader's heartbeats, a client's polls. A gray
// failure (Huang et al., HotOS'17) is that: the checks that say a peer is
// alive pass while the work does not, so no one steps in.
//
// Op.Conn names the node and direction ("gray to n2"), Op.Delay is the
// while (up to Plan.MaxHold). The kind that flows is settled when the
// gray is chosen, from the deliveries the injector has seen (Holds is
// asked of every ready op, in the same order in a replay), and is shown
// in Op.Peer. The tracer has nothing to do: the injector holds the
// deliveries back.
const Gray sched.Kind = "gray"

func init() {
	define(Gray, kindDef{
		start: startGray, possible: possibleGray, detail: detailGray, chose: choseGray, keep: keepGray, act: ActHold,
		holds: holdsGray, deadline: grayDeadline, onTraffic: true,
	})
}

// grayWindow is how many of a node's last messages one way say which kind
// is its commonest: recent ones, since a node's role changes in a trial
// (a follower answers, a leader sends heartbeats), and what it does now
// is what a gray of it should let through.
const grayWindow = 100

// grayBooks are what the gray kind keeps from a trial's first step: the
// shape of every delivery seen, the shapes of each node's last grayWindow
// messages each way, and the grays in force.
type grayBooks struct {
	shapes map[uint64]string // delivery op ID → its shape
	recent map[string]*recent.Window[string]
	grays  map[string]*grayed // grayKey → in force
}

// grayed is a gray in force.
type grayed struct {
	to      bool
	node    string
	pass    string // the shape that flows
	end     time.Duration
	holding bool // it has held a delivery
}

// grayKey names a node's messages one way: "gray to n2", "gray from n2".
func grayKey(to bool, node string) string {
	if to {
		return "gray to " + node
	}
	return "gray from " + node
}

func (in *Injector) grayBooks() *grayBooks {
	g, _ := in.own[Gray].(*grayBooks)
	return g
}

// startGray opens the books: the commonest kind is counted from the
// trial's first delivery, before any gray is drawn.
func startGray(in *Injector) {
	in.own[Gray] = &grayBooks{shapes: map[uint64]string{}, recent: map[string]*recent.Window[string]{}, grays: map[string]*grayed{}}
}

// grayDirs are the directions of node a gray may take now: those in which
// the node has had a message and that are not gray already.
func (g *grayBooks) grayDirs(node string) []bool {
	var dirs []bool
	for _, to := range []bool{true, false} {
		k := grayKey(to, node)
		if _, on := g.grays[k]; !on && g.recent[k] != nil {
			dirs = append(dirs, to)
		}
	}
	return dirs
}

func possibleGray(in *Injector, o *sched.Op) bool {
	g := in.grayBooks()
	return in.plan.MaxHold > 0 && in.plan.ShapeOf != nil && g != nil && len(g.grayDirs(o.Node)) > 0
}

func detailGray(in *Injector, o *sched.Op) {
	dirs := in.grayBooks().grayDirs(o.Node)
	to := dirs[0]
	if len(dirs) > 1 {
		to = dirs[in.r.IntN(len(dirs))]
	}
	o.Conn = grayKey(to, o.Node)
	o.Delay = int64(in.upTo(in.plan.MaxHold))
	o.Peer = fmt.Sprintf("holds every message %s but its commonest kind for %v", strings.TrimPrefix(o.Conn, "gray "), time.Duration(o.Delay))
}

// AimedGray is the op of a gray an exploring branch aims (sched.Aim): a
// gray of node's messages one way (to it, or from it), for length, made
// just before the delivery of a message its parent's trial had there,
// whose shape it records (label names that kind for people). The
// injector never draws it; the shape makes it an op a replay makes up
// from its record (sched.Op.Made). What flows is settled as for a drawn
// gray, when it is chosen.
func AimedGray(node string, to bool, shape, label string, length time.Duration) *sched.Op {
	return &sched.Op{
		LPID: "fault", Kind: Gray, Node: node, Object: "node:" + node,
		Conn: grayKey(to, node), Shape: sched.Bytes(shape), Peer: label, Delay: int64(length),
	}
}

func choseGray(in *Injector, o *sched.Op, now time.Duration, _ *Effect) error {
	g := in.grayBooks()
	to, node := strings.HasPrefix(o.Conn, "gray to "), o.Node
	if o.Conn != grayKey(to, node) {
		return fmt.Errorf("faults: gray %q does not name %s", o.Conn, node)
	}
	var w *recent.Window[string]
	if g != nil {
		w = g.recent[o.Conn]
	}
	if o.Made() {
		// An aimed gray that would do nothing (that way gray already, the
		// budget spent, outside the window, the quiet period among it,
		// whose recovery closed the books, or no message yet to say which
		// kind flows) is recorded as holding nothing and not spent.
		inForce := g != nil && g.grays[o.Conn] != nil && now < g.grays[o.Conn].end
		why := in.aimedIdle(now, inForce, "its node is gray that way")
		if why == "" && w == nil {
			why = "no message has gone " + strings.TrimPrefix(o.Conn, "gray ") + " yet"
		}
		if why != "" {
			o.Peer = "holds nothing: " + why + "; not spent"
			return nil
		}
	}
	if g == nil {
		return fmt.Errorf("faults: gray chosen without its books (%s)", o.Conn)
	}
	in.spend(now)
	if w == nil {
		return fmt.Errorf("faults: gray of %s, which has had no message that way", o.Conn)
	}
	pass := w.Commonest()
	g.grays[o.Conn] = &grayed{to: to, node: node, pass: pass, end: now + time.Duration(o.Delay)}
	// What show prints: the shape's first bytes, quoted, as a label.
	label := short(pass)
	aimed := ""
	if o.Made() {
		// The kind it was aimed at, by its shape: Peer may be a record's.
		aimed = fmt.Sprintf(", from before a %q", short(string(o.Shape)))
	}
	o.Peer = fmt.Sprintf("holds every message %s but %q for %v%s", strings.TrimPrefix(o.Conn, "gray "), label, time.Duration(o.Delay), aimed)
	return nil
}

// short is a shape's first 32 bytes, for show.
func short(shape string) string {
	if len(shape) > 32 {
		return shape[:32] + "…"
	}
	return shape
}

// holdsGray counts each delivery once, by the first time it is ready, and
// holds it while a gray in force on its receiver (or sender) lets another
// kind through. Grays whose while is over are dropped. A delivery whose
// bytes the tracer did not hand over (a FIN) is neither counted nor held.
func holdsGray(in *Injector, o *sched.Op, now time.Duration, nodeOf func(netip.Addr) string) bool {
	g := in.grayBooks()
	if g == nil || in.plan.ShapeOf == nil {
		return false
	}
	from, to, ok := deliveryEnds(o, nodeOf)
	if !ok || o.Msg == "" || from == to {
		return false
	}
	shape, seen := g.shapes[o.ID]
	if !seen {
		shape = in.plan.ShapeOf(o.Msg, o.Bytes)
		g.shapes[o.ID] = shape
		for _, k := range []string{grayKey(true, to), grayKey(false, from)} {
			if k == "gray to " || k == "gray from " {
				continue // an end outside the cluster
			}
			w := g.recent[k]
			if w == nil {
				w = recent.New[string](grayWindow)
				g.recent[k] = w
			}
			w.Add(shape)
		}
	}
	held := false
	for k, gr := range g.grays {
		if now >= gr.end {
			delete(g.grays, k)
			continue
		}
		if (gr.to && to == gr.node || !gr.to && from == gr.node) && shape != gr.pass {
			gr.holding, held = true, true
		}
	}
	return held
}

// grayDeadline is the earliest end of a gray that holds a delivery: what
// it held goes then. One that holds nothing wakes nothing.
func grayDeadline(in *Injector, now time.Duration) (time.Duration, bool) {
	g := in.grayBooks()
	if g == nil {
		return 0, false
	}
	var d time.Duration
	ok := false
	for _, gr := range g.grays {
		if gr.holding && gr.end > now && (!ok || gr.end < d) {
			d, ok = gr.end, true
		}
	}
	return d, ok
}
