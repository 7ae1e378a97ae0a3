package spec

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"
)

// FaultPlan is the spec's faults section (docs/spec.md, "Faults"): which
// faults may be injected, where, when and how hard. The engine makes a
// faults.Plan of it; the zero value injects nothing.
type FaultPlan struct {
	// Kinds are the injections offered, each once, in the spec's order.
	// Recoveries (restart, heal) follow them.
	Kinds []FaultKind
	// Nodes may be crashed, paused or cut off (faults.nodes; the servers
	// by default).
	Nodes []string
	// Budget is the number of injections per trial.
	Budget int
	// From and Until bound the virtual time in which injections happen;
	// the quiet period starts at Until.
	From, Until time.Duration
	// Spread draws each injection's trigger in [From, Until) from the
	// seed (set when the spec has faults.until and faults.spread is not
	// false).
	Spread bool
	// By is what the triggers are drawn over (faults.spread: true, time
	// or steps).
	By SpreadBy
	// Overlap is how many network cuts may be in force at once
	// (faults.overlap; 0 or 1: one at a time).
	Overlap int
	// MaxPause, MaxOutage, MaxClockJump and MaxHold bound a pause, an
	// outage (crash or cut until its recovery), a clock jump and a hold.
	MaxPause, MaxOutage, MaxClockJump, MaxHold time.Duration
	// MinPause and MinOutage are the shortest pause and outage
	// (faults.min_pause, faults.min_outage); 0: a tenth of the longest.
	MinPause, MinOutage time.Duration
	// ClockDirection is which way clock faults go; "" is both.
	ClockDirection ClockDirection
	// KeepClock leaves jumped clocks where they are in the quiet period
	// (faults.undo_clock: false).
	KeepClock bool
	// MaxDrift bounds a drift fault, in parts per million.
	MaxDrift int64
	// Groups are nodes that stay on one side of every cut.
	Groups [][]string
	// Shapes are the bipartition shapes drawn (ShapeIsolate, ShapeMinority,
	// ShapeBridge).
	Shapes []string
	// Probe, when set, is the command that names the node each injection
	// aims at (faults.target.probe).
	Probe []string
	// Follow makes groups follow their node (faults.groups: follow).
	Follow bool
	// Disk bounds the storage faults (power, corrupt, ioerror, stall;
	// storage.go).
	Disk DiskPlan
	// HoldMatch, when set, makes each hold one of a kind of message
	// (faults.hold.match): the patterns its messages' bytes match.
	HoldMatch []BytePattern
	// HoldDirection is faults.hold.direction: "to", "from", or "" to draw
	// one per hold.
	HoldDirection string
	// SlowMatch, when set, makes a slow link delay only the messages
	// whose bytes match (faults.slow.match); DropMatch makes a drop
	// discard only such a datagram (faults.drop.match).
	SlowMatch, DropMatch []BytePattern
}

// Enabled reports whether the plan injects anything.
func (p FaultPlan) Enabled() bool { return p.Budget > 0 && len(p.Kinds) > 0 && len(p.Nodes) > 0 }

// FaultKind is a fault a spec may name in faults.kinds. Its value is the
// name of the scheduler's op kind it becomes (sched.ParseKind).
type FaultKind string

// The fault kinds, in the docs' order.
const (
	FaultCrash       FaultKind = "crash"
	FaultPartition   FaultKind = "partition"
	FaultOneWay      FaultKind = "oneway"
	FaultLink        FaultKind = "link"
	FaultBipartition FaultKind = "bipartition"
	FaultHold        FaultKind = "hold"
	FaultPause       FaultKind = "pause"
	FaultClock       FaultKind = "clock"
	FaultDrift       FaultKind = "drift"
	FaultReset       FaultKind = "reset"
	FaultDrop        FaultKind = "drop"
	FaultPower       FaultKind = "power"
	FaultCorrupt     FaultKind = "corrupt"
	FaultIOError     FaultKind = "ioerror"
	FaultStall       FaultKind = "stall"
	FaultSlow        FaultKind = "slow"
	FaultFlap        FaultKind = "flap"
	FaultGray        FaultKind = "gray"
)

// FaultKinds lists every kind a spec may name.
func FaultKinds() []FaultKind {
	kinds := make([]FaultKind, 0, len(faultKeywords))
	for _, w := range faultKeywords {
		if !slices.Contains(kinds, w.kind) {
			kinds = append(kinds, w.kind)
		}
	}
	slices.Sort(kinds)
	return kinds
}

// Bipartition shapes (FaultPlan.Shapes), as package faults draws them.
const (
	ShapeIsolate  = "isolate"
	ShapeMinority = "minority"
	ShapeBridge   = "bridge"
)

// ClockDirection is which way a clock fault moves a node's wall clock
// (faults.clock_direction).
type ClockDirection string

const (
	ClockBoth     ClockDirection = "both"
	ClockForward  ClockDirection = "forward"
	ClockBackward ClockDirection = "backward"
)

// faultTrait is what spec checks about a fault kind: a plan with the
// kind must make some fault of it possible, else it loads and no fault is
// ever drawn.
type faultTrait uint8

const (
	// traitLink: the kind acts on a link between two sides (two of
	// faults.nodes in different groups).
	traitLink faultTrait = 1 << iota
	// traitOutage: the kind lasts a while drawn up to faults.max_outage,
	// which must then be positive.
	traitOutage
	// traitStorage: the kind acts on a node's disk (FaultPlan.Storage).
	traitStorage
)

// faultKeyword is one name faults.kinds accepts.
type faultKeyword struct {
	name   string
	kind   FaultKind
	traits faultTrait
}

// faultKeywords are the injections a spec may name, in the docs' order:
// a new kind is its FaultKind constant and a row here. bridge is a
// bipartition of the bridge shape alone.
var faultKeywords = []faultKeyword{
	{"crash", FaultCrash, 0},
	{"partition", FaultPartition, 0},
	{"oneway", FaultOneWay, 0},
	{"link", FaultLink, traitLink},
	{"bipartition", FaultBipartition, 0},
	{"bridge", FaultBipartition, 0},
	{"hold", FaultHold, 0},
	{"pause", FaultPause, 0},
	{"clock", FaultClock, 0},
	{"drift", FaultDrift, 0},
	{"reset", FaultReset, 0},
	{"drop", FaultDrop, 0},
	{"power", FaultPower, traitStorage},
	{"corrupt", FaultCorrupt, traitStorage},
	{"ioerror", FaultIOError, traitStorage},
	{"stall", FaultStall, traitStorage},
	{"slow", FaultSlow, traitLink | traitOutage},
	{"flap", FaultFlap, traitLink | traitOutage},
	{"gray", FaultGray, 0},
}

// keyword is the entry of the keyword name, if any.
func keyword(name string) (faultKeyword, bool) {
	i := slices.IndexFunc(faultKeywords, func(w faultKeyword) bool { return w.name == name })
	if i < 0 {
		return faultKeyword{}, false
	}
	return faultKeywords[i], true
}

// has reports whether kind k has every trait t (its keywords agree).
func (k FaultKind) has(t faultTrait) bool {
	i := slices.IndexFunc(faultKeywords, func(w faultKeyword) bool { return w.kind == k })
	return i >= 0 && faultKeywords[i].traits&t == t
}

// faultNames lists the keywords for error messages, in the docs' order,
// the last after "or" (sep ", " gives them all comma-separated).
func faultNames(sep string) string {
	var b strings.Builder
	for i, w := range faultKeywords {
		switch {
		case i == 0:
		case i == len(faultKeywords)-1:
			b.WriteString(sep)
		default:
			b.WriteString(", ")
		}
		b.WriteString(w.name)
	}
	return b.String()
}

// defaultMaxDrift bounds a drift fault unless the spec says otherwise:
// 10 %, far beyond what a quartz clock does (under 0.01 %), because the
// bugs a drifting clock exposes hide behind safety margins of a few per
// cent (a lease renewed at 90 % of its term).
const defaultMaxDrift = 100_000

// faultDraft is the faults section being decoded.
type faultDraft struct {
	plan FaultPlan
	s    *Spec
	// Where these fields are, when given.
	until, nodes, kinds, spread, hold, slow, drop, outage ast.Node
	minPause, minOutage                                   ast.Node
	// disk holds where each storage field is, by key.
	disk map[string]ast.Node
	// noSpread is faults.spread: false.
	noSpread bool
}

// faultFields are the faults section's; the storage faults' fields
// (diskFields) follow them.
var faultFields = append([]field[*faultDraft]{
	{"kinds", decodeFaultKinds},
	{"nodes", func(d *decoder, v ast.Node, path string, fd *faultDraft) (err error) {
		fd.plan.Nodes, err = d.strings(v, path)
		fd.nodes = v
		return err
	}},
	{"budget", intField(func(fd *faultDraft) *int { return &fd.plan.Budget }, 0, 100)},
	{"from", durationField(func(fd *faultDraft) *time.Duration { return &fd.plan.From }, true, maxVirtualTime)},
	{"until", func(d *decoder, v ast.Node, path string, fd *faultDraft) (err error) {
		fd.plan.Until, err = d.duration(v, path, false, maxVirtualTime)
		fd.until = v
		return err
	}},
	{"max_pause", durationField(func(fd *faultDraft) *time.Duration { return &fd.plan.MaxPause }, false, maxVirtualTime)},
	{"min_pause", func(d *decoder, v ast.Node, path string, fd *faultDraft) (err error) {
		fd.plan.MinPause, err = d.duration(v, path, false, maxVirtualTime)
		fd.minPause = v
		return err
	}},
	{"min_outage", func(d *decoder, v ast.Node, path string, fd *faultDraft) (err error) {
		fd.plan.MinOutage, err = d.duration(v, path, false, maxVirtualTime)
		fd.minOutage = v
		return err
	}},
	{"max_clock_jump", durationField(func(fd *faultDraft) *time.Duration { return &fd.plan.MaxClockJump }, false, 100*365*24*time.Hour)},
	{"max_drift", func(d *decoder, v ast.Node, path string, fd *faultDraft) (err error) {
		fd.plan.MaxDrift, err = d.rate(v, path)
		return err
	}},
	{"max_outage", func(d *decoder, v ast.Node, path string, fd *faultDraft) (err error) {
		fd.plan.MaxOutage, err = d.duration(v, path, true, maxVirtualTime)
		fd.outage = v
		return err
	}},
	{"groups", decodeFaultGroups},
	{"max_hold", durationField(func(fd *faultDraft) *time.Duration { return &fd.plan.MaxHold }, false, maxVirtualTime)},
	{"target", func(d *decoder, v ast.Node, path string, fd *faultDraft) (err error) {
		fd.plan.Probe, err = d.target(v, path, fd.s)
		return err
	}},
	{"clock_direction", func(d *decoder, v ast.Node, path string, fd *faultDraft) error {
		str, err := d.str(v, path)
		if err != nil {
			return err
		}
		dir := ClockDirection(str)
		if dir != ClockForward && dir != ClockBackward && dir != ClockBoth {
			return d.errf(v, path, "unknown direction %q (want forward, backward or both)", str)
		}
		fd.plan.ClockDirection = dir
		return nil
	}},
	{"undo_clock", func(d *decoder, v ast.Node, path string, fd *faultDraft) error {
		undo, err := d.boolean(v, path)
		fd.plan.KeepClock = !undo
		return err
	}},
	{"spread", func(d *decoder, v ast.Node, path string, fd *faultDraft) error {
		spread, by, err := d.spread(v, path)
		fd.noSpread, fd.plan.By, fd.spread = !spread, by, v
		return err
	}},
	{"overlap", intField(func(fd *faultDraft) *int { return &fd.plan.Overlap }, 1, 10)},
	{"hold", func(d *decoder, v ast.Node, path string, fd *faultDraft) error {
		fd.hold = v
		return d.holdMatch(v, path, &fd.plan)
	}},
	{"slow", func(d *decoder, v ast.Node, path string, fd *faultDraft) error {
		fd.slow = v
		return d.kindMatch(v, path, slowFields, &fd.plan, func() int { return len(fd.plan.SlowMatch) })
	}},
	{"drop", func(d *decoder, v ast.Node, path string, fd *faultDraft) error {
		fd.drop = v
		return d.kindMatch(v, path, dropFields, &fd.plan, func() int { return len(fd.plan.DropMatch) })
	}},
}, diskRows()...)

// diskRows are faultFields' rows of the storage faults' fields
// (diskPlanFields), which also note where each field is.
func diskRows() []field[*faultDraft] {
	rows := make([]field[*faultDraft], len(diskPlanFields))
	for i, f := range diskPlanFields {
		rows[i] = field[*faultDraft]{f.key, func(d *decoder, v ast.Node, path string, fd *faultDraft) error {
			fd.disk[f.key] = v
			return f.set(d, v, path, &fd.plan.Disk)
		}}
	}
	return rows
}

func decodeFaultKinds(d *decoder, v ast.Node, path string, fd *faultDraft) error {
	names, err := d.strings(v, path)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return d.errf(v, path, "must name at least one of %s", faultNames(", "))
	}
	plan := &fd.plan
	for _, name := range names {
		w, ok := keyword(name)
		if !ok {
			return d.errf(v, path, "unknown fault %q (want %s; restart and heal follow them)", name, faultNames(" or "))
		}
		switch name {
		case "bipartition":
			plan.Shapes = []string{ShapeIsolate, ShapeMinority, ShapeBridge}
		case "bridge":
			if !slices.Contains(plan.Shapes, ShapeBridge) {
				plan.Shapes = append(plan.Shapes, ShapeBridge)
			}
		}
		if !slices.Contains(plan.Kinds, w.kind) {
			plan.Kinds = append(plan.Kinds, w.kind)
		}
	}
	fd.kinds = v
	return nil
}

func decodeFaultGroups(d *decoder, v ast.Node, path string, fd *faultDraft) (err error) {
	if str, ok := v.(*ast.StringNode); ok {
		// Groups drawn at each injection from who talks to whom.
		if str.Value != "follow" {
			return d.errf(v, path, "must be a list of lists of node names or follow, got string %q", str.Value)
		}
		fd.plan.Follow = true
		return nil
	}
	fd.plan.Groups, err = d.groups(v, path, fd.s)
	return err
}

// faults decodes the spec's faults section (docs/spec.md, "Faults"); it
// runs after the nodes are known, since it names them.
func (d *decoder) faults(n ast.Node, s *Spec) error {
	if _, isNull := n.(*ast.NullNode); isNull {
		return nil
	}
	fd := &faultDraft{
		plan: FaultPlan{Budget: 1, MaxPause: time.Second, MaxClockJump: 10 * time.Second, MaxDrift: defaultMaxDrift,
			MaxOutage: 2 * time.Second, MaxHold: time.Second, Until: s.Limits.VirtualTime, Disk: DefaultDiskPlan()},
		s:    s,
		disk: map[string]ast.Node{},
	}
	if err := decodeMap(d, n, "faults", faultFields, fd); err != nil {
		return err
	}
	if fd.kinds == nil {
		return d.errf(n, "faults.kinds", "missing")
	}
	if err := d.faultWindow(fd); err != nil {
		return err
	}
	if err := d.faultNodes(fd); err != nil {
		return err
	}
	plan := fd.plan
	if fd.hold != nil && !slices.Contains(plan.Kinds, FaultHold) {
		return d.errf(fd.hold, "faults.hold", "holds one kind of message, but faults.kinds has no hold")
	}
	if fd.slow != nil && !slices.Contains(plan.Kinds, FaultSlow) {
		return d.errf(fd.slow, "faults.slow", "slows one kind of message, but faults.kinds has no slow")
	}
	if fd.drop != nil && !slices.Contains(plan.Kinds, FaultDrop) {
		return d.errf(fd.drop, "faults.drop", "drops one kind of datagram, but faults.kinds has no drop")
	}
	for _, k := range plan.Kinds {
		if k.has(traitOutage) && plan.MaxOutage == 0 {
			return d.errf(fd.outage, "faults.max_outage", "must be positive for %s, which lasts up to it", k)
		}
	}
	if err := d.checkShortest(fd); err != nil {
		return err
	}
	if err := d.netFaults(fd.kinds, plan); err != nil {
		return err
	}
	if err := d.checkDisk(n, fd.kinds, fd.disk, plan, s); err != nil {
		return err
	}
	s.Faults = plan
	return nil
}

// checkShortest checks faults.min_pause and faults.min_outage against the
// longest they bound: a shortest past the longest leaves nothing to draw.
func (d *decoder) checkShortest(fd *faultDraft) error {
	p := fd.plan
	if fd.minPause != nil && p.MinPause > p.MaxPause {
		return d.errf(fd.minPause, "faults.min_pause", "%v is longer than faults.max_pause (%v)", p.MinPause, p.MaxPause)
	}
	if fd.minOutage != nil && p.MinOutage > p.MaxOutage {
		return d.errf(fd.minOutage, "faults.min_outage", "%v is longer than faults.max_outage (%v)", p.MinOutage, p.MaxOutage)
	}
	return nil
}

// faultWindow checks the window injections happen in (faults.from,
// faults.until, faults.spread) against the trial's virtual time.
func (d *decoder) faultWindow(fd *faultDraft) error {
	s, plan := fd.s, &fd.plan
	if !fd.noSpread && fd.spread != nil && fd.until == nil {
		return d.errf(fd.spread, "faults.spread", "needs faults.until: the window ends at limits.virtual_time (%v), past most runs", s.Limits.VirtualTime)
	}
	plan.Spread = !fd.noSpread && fd.until != nil
	if fd.until != nil && plan.Until <= plan.From {
		return d.errf(fd.until, "faults.until", "%v is not after faults.from (%v)", plan.Until, plan.From)
	}
	if fd.until != nil && plan.Until >= s.Limits.VirtualTime {
		return d.errf(fd.until, "faults.until", "%v leaves no quiet period before limits.virtual_time (%v)", plan.Until, s.Limits.VirtualTime)
	}
	return nil
}

// faultNodes defaults faults.nodes to the servers and checks that every
// node it names is one.
func (d *decoder) faultNodes(fd *faultDraft) error {
	s, plan := fd.s, &fd.plan
	if fd.nodes == nil {
		for _, nd := range s.Nodes {
			if nd.Role == RoleServer {
				plan.Nodes = append(plan.Nodes, nd.Name)
			}
		}
	}
	for _, name := range plan.Nodes {
		i := slices.IndexFunc(s.Nodes, func(nd Node) bool { return nd.Name == name })
		switch {
		case i < 0:
			return d.errf(fd.nodes, "faults.nodes", "no node %q", name)
		case s.Nodes[i].Role == RoleClient:
			return d.errf(fd.nodes, "faults.nodes", "%s is a client: faults apply to servers (a client's exit ends the trial)", name)
		}
	}
	return nil
}

// netFaults checks that the plan's nodes can take its network faults: a
// kind on a link (traitLink) needs two sides, a bridge three (a group is
// one side).
func (d *decoder) netFaults(kinds ast.Node, plan FaultPlan) error {
	sides := map[string]bool{}
	for _, n := range plan.Nodes {
		side := n
		for _, g := range plan.Groups {
			if slices.Contains(g, n) {
				side = strings.Join(g, ",")
			}
		}
		sides[side] = true
	}
	if len(sides) < 2 {
		for _, k := range plan.Kinds {
			if k.has(traitLink) {
				return d.errf(kinds, "faults.kinds", "%s needs two of faults.nodes in different groups, got %d", k, len(sides))
			}
		}
	}
	if slices.Equal(plan.Shapes, []string{ShapeBridge}) && len(sides) < 3 {
		return d.errf(kinds, "faults.kinds", "bridge needs three of faults.nodes in different groups, got %d", len(sides))
	}
	return nil
}

// target decodes faults.target: {probe: [command...]}, {{dir}} standing
// for the spec's directory.
func (d *decoder) target(n ast.Node, path string, s *Spec) ([]string, error) {
	fp, err := d.fields(n, path, "probe")
	if err != nil {
		return nil, err
	}
	var argv []string
	for _, q := range fp {
		if argv, err = d.strings(q.value, path+".probe"); err != nil {
			return nil, err
		}
		if len(argv) == 0 || argv[0] == "" {
			return nil, d.errf(q.value, path+".probe", "must be a command: a program and its arguments")
		}
		for i := range argv {
			argv[i] = strings.ReplaceAll(argv[i], "{{dir}}", s.Dir)
		}
		if err := checkProgram(argv[0], s.Dir); err != nil {
			return nil, d.errf(q.value, path+".probe", "%v", err)
		}
	}
	if argv == nil {
		return nil, d.errf(n, path+".probe", "missing")
	}
	return argv, nil
}

// groups decodes faults.groups: lists of node names, each node in one group
// at most.
func (d *decoder) groups(n ast.Node, path string, s *Spec) ([][]string, error) {
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		return nil, d.errf(n, path, "must be a list of lists of node names, got %s", describe(n))
	}
	seen := map[string]bool{}
	var groups [][]string
	for i, v := range seq.Values {
		f := fmt.Sprintf("%s[%d]", path, i)
		names, err := d.strings(v, f)
		if err != nil {
			return nil, err
		}
		if len(names) == 0 {
			return nil, d.errf(v, f, "is empty")
		}
		for _, name := range names {
			if !slices.ContainsFunc(s.Nodes, func(nd Node) bool { return nd.Name == name }) {
				return nil, d.errf(v, f, "no node %q", name)
			}
			if seen[name] {
				return nil, d.errf(v, f, "node %q is in two groups", name)
			}
			seen[name] = true
		}
		groups = append(groups, names)
	}
	return groups, nil
}

// rate decodes a clock rate bound: "5%" or "500ppm", above 0 and below
// 100 %, in parts per million.
func (d *decoder) rate(n ast.Node, path string) (int64, error) {
	str, err := d.str(n, path)
	if err != nil {
		return 0, err
	}
	var v float64
	num, unit := str, ""
	for _, u := range []string{"%", "ppm"} {
		if s, ok := strings.CutSuffix(str, u); ok {
			num, unit = strings.TrimSpace(s), u
			break
		}
	}
	if unit == "" {
		return 0, d.errf(n, path, "want a rate such as 5%% or 500ppm, got %q", str)
	}
	v, err = strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) {
		return 0, d.errf(n, path, "want a rate such as 5%% or 500ppm, got %q", str)
	}
	if unit == "%" {
		v *= 1e4
	}
	if v < 1 || v >= 1e6 {
		return 0, d.errf(n, path, "must be from 1ppm to below 100%%, got %q", str)
	}
	return int64(v), nil
}
