package report

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/coverage"
	"github.com/lockstep-dev/lockstep/sched"
)

// Layout of the space-time diagram, in pixels. Time runs down, one row per
// released op, so that a 1,000-op trace is a tall page that scrolls and no
// two ops (or the arrows that start at them) share a row.
const (
	rowH    = 22  // one step
	colW    = 118 // one thread (or a node's inbox)
	gutterW = 118 // step number and virtual time
	laneGap = 14  // between nodes
	headH   = 46  // lane titles (a separate, sticky SVG)
	outH    = 64  // the outcome band below the last step
)

// inboxLane is the sub-lane of a node where the messages delivered to it
// land; recvs take them from there.
const inboxLane = "inbox"

// lane is one node's column group: a sub-lane per thread (LPID), after its
// inbox when messages were delivered to it.
type lane struct {
	node string
	subs []string       // sub-lane names in order: inboxLane, then LPIDs by first op
	col  map[string]int // sub-lane name → index in subs
	x    int            // left edge
}

func (l *lane) width() int { return len(l.subs) * colW }

// center is the x of a sub-lane's time line.
func (l *lane) center(sub string) int { return l.x + l.col[sub]*colW + colW/2 }

// diagram places a trace's ops: a lane per node, a row per op.
type diagram struct {
	tr     *sched.Trace
	lanes  []*lane
	byNode map[string]*lane
	nodes  map[string]bool // the lanes' nodes, for laneOf
	row    map[uint64]int  // op ID → row
	// inFlight are the rows of sends no delivery cites: messages still in
	// the network when the trial ended, often the heart of a bug.
	inFlight []int
	dest     map[int]string // in-flight row → the node it was sent to, when known
	width    int
	height   int
	// explained, when set, highlights an explanation's races and greys
	// out the ops outside its causal slice (explain.go).
	explained *Explained
	// kinds are the messages' kinds by row, numbered as `lockstep kinds`
	// numbers the trace's.
	kinds map[int]*coverage.Kind
}

// laneOf says where an op is drawn: the node and sub-lane. A delivery is a
// message arriving, so it goes to the receiving node's inbox (its Node is
// the sender's); faults span their target's lane (sub "").
func laneOf(op *sched.Op, nodes map[string]bool) (node, sub string) {
	switch {
	case op.Kind == sched.Deliver:
		if dst, ok := strings.CutPrefix(op.Object, "inbox:"); ok {
			dst, _, _ = strings.Cut(dst, "/")
			if nodes[dst] {
				return dst, inboxLane
			}
		}
		return op.Node, inboxLane
	case op.Kind.IsFault():
		if i := strings.IndexAny(op.Node, ",>|"); i > 0 {
			// A heal names its cut ("a,b|c"): drawn on its first node's
			// lane, not a lane of its own.
			return op.Node[:i], ""
		}
		return op.Node, ""
	}
	return op.Node, op.LPID
}

func newDiagram(tr *sched.Trace) *diagram {
	d := &diagram{tr: tr, byNode: map[string]*lane{}, row: map[uint64]int{}, kinds: messageKinds(tr)}
	nodes := map[string]bool{}
	d.nodes = nodes
	addNode := func(n string) *lane {
		l := d.byNode[n]
		if l == nil {
			l = &lane{node: n, col: map[string]int{}}
			d.byNode[n] = l
			d.lanes = append(d.lanes, l)
			nodes[n] = true
		}
		return l
	}
	// Nodes first (in order of first op), so that a delivery's destination
	// is known before its lane is chosen.
	for i := range tr.Records {
		if op := &tr.Records[i].Op; !op.Kind.IsFault() || !strings.ContainsAny(op.Node, ",>|") {
			addNode(op.Node) // not a heal's name of its cut
		}
	}
	inbox := map[string]bool{}
	for i := range tr.Records {
		op := &tr.Records[i].Op
		d.row[op.ID] = i
		n, sub := laneOf(op, nodes)
		l := addNode(n)
		switch sub {
		case "":
			// A fault spans the lane.
		case inboxLane:
			inbox[n] = true
		default:
			if _, ok := l.col[sub]; !ok {
				l.col[sub] = len(l.subs)
				l.subs = append(l.subs, sub)
			}
		}
	}
	d.findInFlight(nodes)
	for _, n := range d.dest {
		inbox[n] = true
	}
	x := gutterW
	for _, l := range d.lanes {
		if inbox[l.node] {
			l.subs = append([]string{inboxLane}, l.subs...)
		}
		if len(l.subs) == 0 {
			// Only faults happened here: keep room for their band.
			l.subs = []string{""}
		}
		for i, s := range l.subs {
			l.col[s] = i
		}
		l.x = x
		x += l.width() + laneGap
	}
	// Room for the labels beside the last lane's marks, and for the
	// outcome's line (monospace, about 8px a character).
	d.width = max(x+colW/2, 600)
	if tr.Outcome != nil {
		d.width = max(d.width, 8*len([]rune(shortOutcome(tr.Outcome)))+40)
	}
	d.height = len(tr.Records)*rowH + outH + 8
	return d
}

// findInFlight finds the sends that no delivery cites and, from the
// addresses the trace shows each node using, the node each was sent to.
func (d *diagram) findInFlight(nodes map[string]bool) {
	delivered := map[uint64]bool{}
	ipNode := map[string]string{}
	host := func(addr string) string {
		h, _, _ := strings.Cut(addr, ":")
		return h
	}
	for i := range d.tr.Records {
		r := &d.tr.Records[i]
		op := &r.Op
		src, dst, hasConn := strings.Cut(op.Conn, ">")
		switch op.Kind {
		case sched.Deliver:
			for _, c := range r.Causes {
				delivered[c] = true
			}
		case sched.Send:
			if hasConn {
				ipNode[host(src)] = op.Node
			}
		case sched.Recv:
			if hasConn {
				ipNode[host(dst)] = op.Node
			}
		case sched.Accept:
			if a, ok := strings.CutPrefix(op.Object, "listen:"); ok {
				ipNode[host(a)] = op.Node
			}
		}
	}
	d.dest = map[int]string{}
	for i := range d.tr.Records {
		op := &d.tr.Records[i].Op
		if op.Kind != sched.Send || delivered[op.ID] {
			continue
		}
		d.inFlight = append(d.inFlight, i)
		to := op.Peer
		if _, dst, ok := strings.Cut(op.Conn, ">"); ok {
			to = dst
		}
		if n := ipNode[host(to)]; nodes[n] && n != op.Node {
			d.dest[i] = n
		}
	}
}

func rowY(i int) int { return i*rowH + rowH/2 }

// opPoint is where an op's mark sits.
func (d *diagram) opPoint(i int) (x, y int) {
	op := &d.tr.Records[i].Op
	n, sub := laneOf(op, d.nodes)
	l := d.byNode[n]
	if sub == "" {
		return l.x + l.width()/2, rowY(i)
	}
	return l.center(sub), rowY(i)
}

// WriteHTML writes a self-contained HTML page (inline SVG, CSS and a few
// lines of script; nothing loaded from elsewhere) with the trace as a
// space-time diagram: a lane per node with a sub-lane per thread, each
// released op in its step's row, arrows from each send to its delivery and
// from a delivery to the recvs that consumed it (the records' causes),
// faults and timer advances marked, the outcome at the end. Hovering an op
// shows its details and lights up its arrows.
func WriteHTML(w io.Writer, tr *sched.Trace) error {
	d := newDiagram(tr)
	b := bufio.NewWriter(w)
	d.page(b)
	return b.Flush()
}

func esc(s string) string { return html.EscapeString(s) }

func (d *diagram) page(b *bufio.Writer) {
	h := d.tr.Header
	title := fmt.Sprintf("%s, trial %d", baseName(h.Spec), h.Trial)
	fmt.Fprintf(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>lockstep: %s</title>\n<style>%s</style></head>\n<body>\n", esc(title), css)
	fmt.Fprintf(b, "<header><h1>lockstep trace: %s</h1>\n<p class=\"meta\">spec %s · trial %d · seed %d · strategy %s · %d ops</p>\n",
		esc(title), esc(h.Spec), h.Trial, h.Seed, esc(h.Strategy), len(d.tr.Records))
	if o := d.tr.Outcome; o != nil {
		fmt.Fprintf(b, "<p class=\"verdict %s\">%s</p>\n", outcomeClass(o), esc(outcomeText(o)))
	}
	b.WriteString(legend)
	d.explained.section(b)
	b.WriteString("</header>\n")
	fmt.Fprintf(b, "<div id=\"heads\"><svg width=\"%d\" height=\"%d\">\n", d.width, headH)
	d.heads(b)
	b.WriteString("</svg></div>\n")
	fmt.Fprintf(b, "<div id=\"body\"><svg id=\"diagram\" width=\"%d\" height=\"%d\" xmlns=\"http://www.w3.org/2000/svg\">\n", d.width, d.height)
	b.WriteString(`<defs><marker id="ah" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0 0L10 5L0 10z" fill="context-stroke"/></marker></defs>` + "\n")
	d.grid(b)
	d.arrows(b)
	d.ops(b)
	d.outcome(b)
	b.WriteString("</svg></div>\n<script>" + script + "</script>\n</body></html>\n")
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		p = p[i+1:]
	}
	return p
}

// heads draws the lane titles: the node, then each sub-lane's thread.
func (d *diagram) heads(b *bufio.Writer) {
	fmt.Fprintf(b, "<text class=\"gut\" x=\"8\" y=\"%d\">step  vtime</text>\n", headH-8)
	for _, l := range d.lanes {
		// The title sits at the lane's left edge, where it is on screen
		// even when a many-threaded lane is wider than the window.
		fmt.Fprintf(b, "<g class=\"head\" data-node=\"%s\"><rect x=\"%d\" y=\"2\" width=\"%d\" height=\"20\" rx=\"4\"/><text class=\"node\" x=\"%d\" y=\"16\">%s</text>\n",
			esc(l.node), l.x, l.width(), l.x+8, esc(l.node))
		for _, s := range l.subs {
			label := s
			if i := strings.IndexByte(s, '/'); i >= 0 && s != inboxLane {
				label = s[i+1:] // the node is the lane's title
			}
			fmt.Fprintf(b, "<text class=\"sub\" x=\"%d\" y=\"%d\"><title>%s</title>%s</text>\n", l.center(s), headH-8, esc(s), esc(label))
		}
		b.WriteString("</g>\n")
	}
}

// grid draws the lanes, their thread lines and the step gutter.
func (d *diagram) grid(b *bufio.Writer) {
	n := len(d.tr.Records)
	bottom := n * rowH
	for i := 0; i < n; i += 2 {
		fmt.Fprintf(b, "<rect class=\"stripe\" x=\"0\" y=\"%d\" width=\"%d\" height=\"%d\"/>\n", i*rowH, d.width, rowH)
	}
	for _, l := range d.lanes {
		fmt.Fprintf(b, "<g class=\"lane\" data-node=\"%s\"><rect class=\"lanebg\" x=\"%d\" y=\"0\" width=\"%d\" height=\"%d\"/>", esc(l.node), l.x, l.width(), bottom)
		for _, s := range l.subs {
			cls := "thread"
			if s == inboxLane {
				cls = "inboxline"
			}
			fmt.Fprintf(b, "<line class=\"%s\" x1=\"%d\" y1=\"0\" x2=\"%d\" y2=\"%d\"/>", cls, l.center(s), l.center(s), bottom)
		}
		b.WriteString("</g>\n")
	}
	for i, r := range d.tr.Records {
		fmt.Fprintf(b, "<text class=\"gut\" x=\"8\" y=\"%d\">%d <tspan class=\"vt\">%s</tspan></text>\n", rowY(i)+4, r.Step, vtime(r.VTime))
	}
}

func vtime(ns int64) string { return fmt.Sprintf("%.3fs", time.Duration(ns).Seconds()) }

// arrows draws an arrow from each cause to the op it caused: send →
// deliver and deliver → recv as messages, others (connect → accept, a
// parent thread's op → the child) fainter. They are drawn under the marks.
func (d *diagram) arrows(b *bufio.Writer) {
	b.WriteString("<g id=\"arrows\">\n")
	for i, r := range d.tr.Records {
		x2, y2 := d.opPoint(i)
		for _, c := range r.Causes {
			j, ok := d.row[c]
			if !ok || j >= i {
				continue // an op the trace does not hold, or not earlier: no arrow
			}
			x1, y1 := d.opPoint(j)
			cls := "cause"
			switch r.Op.Kind {
			case sched.Deliver:
				cls = "msg"
			case sched.Recv:
				cls = "consume"
			}
			// A gentle S-curve: arrows between the same two lanes at
			// different steps stay apart instead of overlapping.
			my := (y1 + y2) / 2
			fmt.Fprintf(b, "<path class=\"arrow %s\" data-from=\"%d\" data-to=\"%d\" d=\"M%d %d C%d %d %d %d %d %d\" marker-end=\"url(#ah)\"/>\n",
				cls, c, r.Op.ID, x1, y1, x1, my, x2, my, x2, y2-5)
		}
	}
	// Messages never delivered run off the bottom of the lanes, into the
	// destination's inbox when it is known.
	bottom := len(d.tr.Records) * rowH
	for _, i := range d.inFlight {
		x1, y1 := d.opPoint(i)
		x2 := x1 + colW/3
		if n, ok := d.dest[i]; ok {
			x2 = d.byNode[n].center(inboxLane)
		}
		op := &d.tr.Records[i].Op
		fmt.Fprintf(b, "<path class=\"arrow inflight\" data-from=\"%d\" d=\"M%d %d C%d %d %d %d %d %d\" marker-end=\"url(#ah)\"><title>%s</title></path>\n",
			op.ID, x1, y1, x1, (y1+bottom)/2, x2, (y1+bottom)/2, x2, bottom-2,
			esc(fmt.Sprintf("step %d: %d bytes sent by %s to %s, never delivered: in flight when the trial ended", d.tr.Records[i].Step, op.Bytes, op.LPID, op.Peer)))
		fmt.Fprintf(b, "<text class=\"inflabel\" x=\"%d\" y=\"%d\">in flight</text>\n", x2-6, bottom-6)
	}
	b.WriteString("</g>\n")
}

// The fault kinds whose label says their size, by their names in traces
// (report reads traces, not package faults); any other fault is labelled
// with its name.
const (
	pauseKind sched.Kind = "pause"
	driftKind sched.Kind = "drift"
	clockKind sched.Kind = "clock"
)

// opLabel is the short text beside an op's mark. A message whose bytes
// are not text is labelled with its kind k, which says more than its
// first binary bytes do.
func opLabel(r *sched.Record, k *coverage.Kind) string {
	op := &r.Op
	s := op.Kind.String()
	switch {
	case op.Kind == sched.Advance:
		return fmt.Sprintf("advance +%v", time.Duration(op.Delay))
	case op.Kind == pauseKind:
		return fmt.Sprintf("pause %v", time.Duration(op.Delay))
	case op.Kind == driftKind:
		return fmt.Sprintf("drift %+.4g%%", float64(op.Delay)/1e4)
	case op.Kind == clockKind:
		return fmt.Sprintf("clock %+v", time.Duration(op.Delay))
	case op.Kind.IsFault():
		if r.Auto {
			s += " (quiet)"
		}
		return s
	case op.Syscall != "" && op.Syscall != s && op.Kind != sched.Deliver:
		s += " " + op.Syscall
	}
	if op.Bytes != 0 {
		s += fmt.Sprintf(" %dB", op.Bytes)
	}
	switch {
	case k != nil && !coverage.Text(r.Data):
		s += " " + k.Label()
	case len(r.Data) > 0:
		// A label stays short; the hover text has all that was kept.
		const labelData = 12
		s += " " + sched.FormatData(r.Data[:min(len(r.Data), labelData)], sched.DataLen(r))
	}
	return s
}

// opTitle is an op's hover text: everything the record says, and its
// message's kind k.
func opTitle(r *sched.Record, k *coverage.Kind) string {
	op := &r.Op
	var t strings.Builder
	fmt.Fprintf(&t, "step %d · vtime %s · op #%d\n%s %s", r.Step, vtime(r.VTime), op.ID, op.Kind, op.Node)
	if op.LPID != "" && op.LPID != op.Node {
		fmt.Fprintf(&t, " (%s)", op.LPID)
	}
	field := func(name, v string) {
		if v != "" {
			fmt.Fprintf(&t, "\n%s: %s", name, v)
		}
	}
	field("syscall", op.Syscall)
	field("peer", op.Peer)
	field("connection", op.Conn)
	field("object", op.Object)
	field("site", op.Site)
	field("caller", op.Caller)
	if op.Bytes != 0 {
		field("bytes", fmt.Sprint(op.Bytes))
	}
	if r.Result != 0 {
		field("result", fmt.Sprint(r.Result))
	}
	if len(r.Data) > 0 {
		field("data", sched.FormatData(r.Data, sched.DataLen(r)))
	}
	if k != nil {
		field("kind", k.Label())
	}
	if op.Kind == sched.Advance {
		field("clock runs to", vtime(op.At))
	}
	if op.Delay != 0 {
		field("delay", time.Duration(op.Delay).String())
	}
	if len(r.Causes) > 0 {
		ids := make([]string, len(r.Causes))
		for i, c := range r.Causes {
			ids[i] = fmt.Sprintf("#%d", c)
		}
		field("after", strings.Join(ids, ", "))
	}
	if r.Immediate {
		field("released at once", "predicted not to conflict")
	}
	if r.Auto {
		field("by lockstep", "recovery in the fault plan's quiet period")
	}
	return t.String()
}

// ops draws one mark per released op, in its lane and row.
func (d *diagram) ops(b *bufio.Writer) {
	b.WriteString("<g id=\"ops\">\n")
	for i := range d.tr.Records {
		r := &d.tr.Records[i]
		op := &r.Op
		x, y := d.opPoint(i)
		n, sub := laneOf(op, d.nodes)
		kind := op.Kind.String()
		fmt.Fprintf(b, "<g class=\"op k-%s%s\" data-id=\"%d\" data-step=\"%d\" data-node=\"%s\"><title>%s</title>",
			esc(kind), d.explained.classes(r.Step), op.ID, r.Step, esc(n), esc(d.explained.title(r.Step, opTitle(r, d.kinds[i]))))
		label := esc(opLabel(r, d.kinds[i]))
		switch {
		case sub == "":
			// A fault: a band across its target's whole lane.
			l := d.byNode[n]
			fmt.Fprintf(b, "<rect class=\"band\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"3\"/><text class=\"flabel\" x=\"%d\" y=\"%d\">⚡ %s</text>",
				l.x+2, y-rowH/2+2, l.width()-4, rowH-4, x, y+4, label)
		case op.Kind == sched.Advance:
			// Virtual time jumps for every node: a rule across the page,
			// with the timer's thread marked.
			fmt.Fprintf(b, "<line class=\"rule\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/><path class=\"mark\" d=\"M%d %d l7 7 l-7 7 l-7 -7z\"/><text class=\"label\" x=\"%d\" y=\"%d\">%s</text>",
				gutterW, y, d.width, y, x, y-7, x+10, y+4, label)
		default:
			fmt.Fprintf(b, "<circle class=\"mark\" cx=\"%d\" cy=\"%d\" r=\"5\"/><text class=\"label\" x=\"%d\" y=\"%d\">%s</text>", x, y, x+8, y+4, label)
		}
		b.WriteString("</g>\n")
	}
	b.WriteString("</g>\n")
}

func outcomeText(o *sched.Outcome) string {
	return "Outcome: " + o.String()
}

// maxOutcomeChars bounds the outcome line in the diagram; the page's
// header and the line's hover text have it all.
const maxOutcomeChars = 140

func shortOutcome(o *sched.Outcome) string {
	s := strings.Join(strings.Fields(outcomeText(o)), " ")
	if r := []rune(s); len(r) > maxOutcomeChars {
		s = string(r[:maxOutcomeChars-1]) + "…"
	}
	return s
}

func outcomeClass(o *sched.Outcome) string {
	if o.Kind == sched.Pass {
		return "pass"
	}
	return "fail"
}

// outcome draws how the trial ended below the last step, with a mark on
// the node it names.
func (d *diagram) outcome(b *bufio.Writer) {
	o := d.tr.Outcome
	if o == nil {
		return
	}
	y := len(d.tr.Records)*rowH + 8
	fmt.Fprintf(b, "<g id=\"outcome\" class=\"%s\" data-kind=\"%s\"><title>%s</title><rect x=\"4\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"6\"/><text x=\"14\" y=\"%d\">%s</text>",
		outcomeClass(o), esc(string(o.Kind)), esc(outcomeText(o)), y, d.width-8, outH-16, y+(outH-16)/2+5, esc(shortOutcome(o)))
	if l := d.byNode[o.Node]; l != nil {
		cx := l.x + l.width()/2
		fmt.Fprintf(b, "<path class=\"x\" d=\"M%d %d l12 12 M%d %d l-12 12\"/>", cx-6, y-14, cx+6, y-14)
		for _, s := range l.subs {
			// The node's threads end here.
			fmt.Fprintf(b, "<line class=\"end\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>", l.center(s), y-20, l.center(s), y)
		}
	}
	b.WriteString("</g>\n")
}

const css = `
body{margin:0;font:13px/1.35 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d2430;background:#fff}
header{padding:12px 16px 6px}
h1{font-size:18px;margin:0 0 2px}
.meta{margin:0;color:#5a6472}
.verdict{display:inline-block;margin:8px 0 4px;padding:4px 10px;border-radius:5px;font-weight:600}
.verdict.fail{background:#fde8e8;color:#9b1c1c;border:1px solid #f5b4b4}
.verdict.pass{background:#e6f6ea;color:#1e6b35;border:1px solid #a8dcb5}
.legend{display:flex;flex-wrap:wrap;gap:12px;margin:6px 0 0;padding:0;list-style:none;color:#3d4654;font-size:12px}
.legend i{display:inline-block;width:10px;height:10px;border-radius:50%;margin-right:4px;vertical-align:-1px}
#heads{position:sticky;top:0;z-index:2;background:#fff;border-bottom:1px solid #d5dae1;overflow:hidden}
#body{overflow:visible}
svg text{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:11px}
.head rect{fill:#2f3b52}
.head .node{fill:#fff;font-weight:700;font-size:12px}
.sub{fill:#5a6472;text-anchor:middle;font-size:10px}
.gut{fill:#3d4654}
.gut .vt{fill:#8a94a3}
.stripe{fill:#f6f8fa}
.lanebg{fill:#eef2f8;fill-opacity:.55}
.thread{stroke:#9aa6b8;stroke-width:1.5}
.inboxline{stroke:#9aa6b8;stroke-width:1;stroke-dasharray:2 3}
.op{cursor:default}
.op .mark{stroke:#fff;stroke-width:1.5}
.op .label,.flabel,.inflabel{paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round}
.op .label{fill:#1d2430;font-size:10px}
.op:hover .mark{stroke:#000}
.k-send .mark{fill:#2563eb}
.k-deliver .mark{fill:#7c3aed}
.k-recv .mark{fill:#059669}
.k-connect .mark,.k-accept .mark{fill:#d97706}
.k-poll .mark,.k-sleep .mark{fill:#94a3b8}
.k-close .mark,.k-shutdown .mark{fill:#475569}
.k-advance .mark{fill:#0891b2}
.rule{stroke:#0891b2;stroke-width:1;stroke-dasharray:6 4}
.band{fill:#dc2626;fill-opacity:.16;stroke:#dc2626;stroke-width:1.2}
.k-restart .band,.k-heal .band{fill:#16a34a;stroke:#16a34a}
.k-pause .band,.k-clock .band{fill:#ca8a04;stroke:#ca8a04}
.flabel{fill:#7f1d1d;font-weight:700;text-anchor:middle;font-size:10px}
.k-restart .flabel,.k-heal .flabel{fill:#14532d}
.k-pause .flabel,.k-clock .flabel{fill:#713f12}
.arrow{fill:none;stroke-width:1.3;opacity:.55}
.arrow.msg{stroke:#7c3aed}
.arrow.consume{stroke:#059669}
.arrow.cause{stroke:#64748b;stroke-dasharray:3 3;opacity:.4}
.arrow.inflight{stroke:#dc2626;stroke-dasharray:6 3;opacity:.85;stroke-width:1.6}
.inflabel{text-anchor:end;fill:#b91c1c;font-size:10px;font-weight:700}
.arrow.hot{opacity:1;stroke-width:2.4}
#outcome rect{stroke-width:1.5}
#outcome.fail rect{fill:#fde8e8;stroke:#dc2626}
#outcome.pass rect{fill:#e6f6ea;stroke:#16a34a}
#outcome text{font-weight:700;font-size:13px}
#outcome.fail text{fill:#9b1c1c}
#outcome.pass text{fill:#1e6b35}
#outcome .x{stroke:#dc2626;stroke-width:3}
#outcome .end{stroke:#dc2626;stroke-width:2}
`

const legend = `<ul class="legend">
<li><i style="background:#2563eb"></i>send</li>
<li><i style="background:#7c3aed"></i>deliver (in the receiver's inbox)</li>
<li><i style="background:#059669"></i>recv</li>
<li><i style="background:#d97706"></i>connect / accept</li>
<li><i style="background:#94a3b8"></i>poll / sleep</li>
<li><i style="background:#0891b2;border-radius:0;transform:rotate(45deg)"></i>timer advance</li>
<li><i style="background:#fca5a5;border-radius:2px"></i>fault</li>
<li><i style="background:#dc2626;height:2px;border-radius:0"></i>message in flight at the end</li>
<li>hover an op for details and its arrows</li>
</ul>
`

// script lights up the arrows of the op under the pointer and keeps the
// sticky lane titles aligned when the page scrolls sideways.
const script = `
(function(){
  var arrows = document.querySelectorAll('#arrows .arrow');
  var by = {};
  arrows.forEach(function(a){
    [a.dataset.from, a.dataset.to].forEach(function(id){ (by[id] = by[id] || []).push(a); });
  });
  document.querySelectorAll('#ops .op').forEach(function(g){
    g.addEventListener('mouseenter', function(){ (by[g.dataset.id] || []).forEach(function(a){ a.classList.add('hot'); }); });
    g.addEventListener('mouseleave', function(){ (by[g.dataset.id] || []).forEach(function(a){ a.classList.remove('hot'); }); });
  });
  // Says the script ran (the browser test reads it back).
  document.documentElement.dataset.arrows = arrows.length;
  var heads = document.getElementById('heads');
  window.addEventListener('scroll', function(){ heads.scrollLeft = window.scrollX; });
})();
`
