package spec

import (
	"net/netip"
	"regexp"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"
)

// Role says whether a node's exit ends the trial.
type Role string

const (
	RoleServer Role = "server"
	RoleClient Role = "client"
)

// Spec is a validated test spec. docs/spec.md documents the format.
type Spec struct {
	Path    string // as given
	Dir     string // absolute directory of the spec file
	Digest  string // sha256 of the file's bytes
	Name    string
	Nodes   []Node
	Network struct {
		Subnet netip.Prefix
	}
	Scheduler struct {
		Strategy string
		Seed     int64
		PCTDepth int
		Conflict struct {
			Scheme  string
			Mode    string // "skip" or "weight"
			Weight  float64
			History string // absolute path, "" for none
		}
	}
	Trials int
	Limits struct {
		VirtualTime time.Duration
		Steps       int
		RealTime    time.Duration
		// LivelockSteps bounds the ops released while virtual time stands
		// still: past it the trial ends as a livelock (engine.Livelock).
		LivelockSteps int
		// DeadlockGrace is the real time lockstep keeps watching a state
		// with nothing enabled and no deadline before it calls it a
		// deadlock: threads still starting or runnable on a loaded machine
		// may yet reach a gated syscall.
		DeadlockGrace time.Duration
		// Node bounds every node's resources (limits.node); each node's
		// own Limits override it field by field (see NodeLimits).
		Node NodeLimits
	}
	Checker struct {
		Command []string // unexpanded
		Timeout time.Duration
		// Model checks the clients' histories (docs/history.md); nil for none.
		Model *HistoryCheck
	}
	checkerLine int
	// composed is set for a spec imported from a compose file, whose
	// errors say so (see loadCompose).
	composed bool
	// imagesResolved is set once the image nodes have their images (see
	// ResolveImages).
	imagesResolved bool
	// Properties are patterns over the nodes' output lines that must never,
	// eventually or sometimes match (properties:).
	Properties []Property
	// Faults is the fault plan; its zero value injects nothing.
	Faults FaultPlan
	Time   struct {
		Epoch time.Time
		// Delays is the budget of advance ops per trial: how many times the
		// scheduler may let virtual time run to a deadline while other ops
		// are enabled. 0 is ideal timing (the clock moves only when nothing
		// else can run).
		Delays int
		// MaxDelay bounds each delay: no op that was enabled is held longer
		// than this much virtual time.
		MaxDelay time.Duration
		// Tick, when set, is the virtual time each released op takes, so
		// that clock readings order what happened (client histories).
		Tick time.Duration
		// Skew, when set, sets each node's wall clock apart from the
		// others' by up to this much either way, drawn from the trial's
		// seed, as real hosts' clocks are: with identical clocks, programs
		// that seed a random generator with the time draw the same numbers
		// on every node (Raft members then time out together forever).
		Skew time.Duration
		// From and Until are the delay window: the k-th delay of a trial
		// is offered only once virtual time passes its trigger, drawn from
		// the seed uniformly in [From, Until). Until 0 means no spread:
		// delays are offered from From on (see delayWindow for defaults).
		From, Until time.Duration
		// By is what the delays' triggers are drawn over (time.spread):
		// the window's virtual time, its steps, or either (the default).
		By SpreadBy
	}
	// Trace says what a trace keeps (spec section `trace`).
	Trace struct {
		// Data is how many of the first bytes of each message an op sent,
		// delivered or read are kept in its record, for show and explain;
		// 0 keeps none.
		Data int
	}
}

// Node returns the named node of the spec, or nil.
func (s *Spec) Node(name string) *Node {
	for i := range s.Nodes {
		if s.Nodes[i].Name == name {
			return &s.Nodes[i]
		}
	}
	return nil
}

// Timing defaults (docs/spec.md, "Timing"): up to two delays per trial,
// each holding the ops it passes over for at most one virtual second.
const (
	// DefaultTraceData: see Spec.Trace.Data.
	DefaultTraceData = 32
	// maxTraceData bounds Spec.Trace.Data: a trace keeps a message's
	// first bytes, not the message.
	maxTraceData = 4096
	// DefaultDeadlockGrace: see Spec.Limits.DeadlockGrace.
	DefaultDeadlockGrace = time.Second
	DefaultDelays        = 2
	DefaultMaxDelay      = time.Second
	maxDelays            = 1000
)

// Bounds on a spec's numbers (docs/spec.md). Each keeps a typo from
// turning into hours of spinning or gigabytes of memory, and leaves room
// far beyond any real campaign.
const (
	// MaxSize bounds the spec file: `lockstep run /dev/zero` must fail
	// at once, not read forever.
	MaxSize = 1 << 20
	// MaxTrials bounds trials per campaign (a month at a trial a second).
	MaxTrials      = 10_000_000
	maxSteps       = 10_000_000
	maxPCTDepth    = 100 // d-1 change points are drawn per trial
	maxVirtualTime = 365 * 24 * time.Hour
	maxRealTime    = 24 * time.Hour
	maxWeight      = 1e6
	maxNodes       = 64
)

// Epochs lockstep can represent: traces store the epoch in Unix
// nanoseconds, which end in 2262, and virtual time runs on from it.
var (
	minEpoch = time.Unix(0, 0).UTC()
	maxEpoch = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

var nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)

// draft is a spec being decoded. Sections decode into s in the file's
// order, but the nodes must be known before the sections that name them
// (faults, checker, properties): those are kept here and decoded after
// the rest (see decoder.spec), as are the nodes that checks across
// sections point at.
type draft struct {
	s     *Spec
	named bool
	// Decoded once the others are, in this order.
	nodes, faults, checker, properties ast.Node
	// Where network.subnet, scheduler.pct_depth, time.until and
	// time.spread are, when given.
	subnet, pctDepth, timeUntil, timeSpread ast.Node
	// noTimeSpread is time.spread: false.
	noTimeSpread bool
}

// specFields are the spec's sections (docs/spec.md).
var specFields = []field[*draft]{
	{"name", decodeName},
	{"nodes", keep(func(b *draft) *ast.Node { return &b.nodes })},
	{"network", section(networkFields)},
	{"scheduler", section(schedulerFields)},
	{"trials", intField(func(b *draft) *int { return &b.s.Trials }, 1, MaxTrials)},
	{"limits", section(limitsFields)},
	{"checker", keep(func(b *draft) *ast.Node { return &b.checker })},
	{"faults", keep(func(b *draft) *ast.Node { return &b.faults })},
	{"time", section(timeFields)},
	{"trace", section(traceFields)},
	{"properties", keep(func(b *draft) *ast.Node { return &b.properties })},
}

// keep sets a section aside, to be decoded after the others.
func keep(at func(*draft) *ast.Node) setter[*draft] {
	return func(_ *decoder, v ast.Node, _ string, b *draft) error {
		*at(b) = v
		return nil
	}
}

func decodeName(d *decoder, v ast.Node, path string, b *draft) (err error) {
	if b.s.Name, err = d.str(v, path); err != nil {
		return err
	}
	if !nameRE.MatchString(b.s.Name) {
		return d.errf(v, path, "%q is not a valid name (lowercase letters, digits and dashes)", b.s.Name)
	}
	b.named = true
	return nil
}

// setDefaults gives s what a spec that says nothing gets.
func setDefaults(s *Spec) {
	s.Network.Subnet = DefaultSubnet
	s.Scheduler.Strategy = "pos"
	s.Scheduler.Seed = 1
	s.Scheduler.Conflict.Scheme = "proc+pc+msg+peer+nth" // conflict.DefaultScheme
	s.Scheduler.Conflict.Mode = "skip"
	s.Trials = 100
	s.Limits.VirtualTime = 10 * time.Minute
	s.Limits.Steps = 100000
	s.Limits.RealTime = 60 * time.Second
	s.Checker.Timeout = 30 * time.Second
	s.Time.Epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	s.Limits.DeadlockGrace = DefaultDeadlockGrace
	s.Limits.LivelockSteps = DefaultLivelockSteps
	s.Time.Delays = DefaultDelays
	s.Time.MaxDelay = DefaultMaxDelay
	s.Trace.Data = DefaultTraceData
}

// spec decodes the document root into s.
func (d *decoder) spec(root ast.Node, s *Spec) error {
	setDefaults(s)
	b := &draft{s: s}
	if err := decodeMap(d, root, "", specFields, b); err != nil {
		return err
	}
	if !b.named {
		return d.errf(root, "name", "missing")
	}
	if b.pctDepth != nil && strings.TrimSuffix(s.Scheduler.Strategy, "+") != "pct" {
		return d.errf(b.pctDepth, "scheduler.pct_depth", "only applies to strategy pct, not %s", s.Scheduler.Strategy)
	}
	if b.nodes == nil {
		return d.errf(root, "nodes", "missing")
	}
	if b.subnet == nil {
		if err := d.defaultSubnet(s); err != nil {
			return err
		}
	}
	if err := d.nodes(b.nodes, s); err != nil {
		return err
	}
	if b.faults != nil {
		if err := d.faults(b.faults, s); err != nil {
			return err
		}
	}
	if err := d.delayWindow(b.timeUntil, s); err != nil {
		return err
	}
	if b.noTimeSpread {
		if b.timeUntil != nil {
			return d.errf(b.timeSpread, "time.spread", "is false, but time.until sets a delay window")
		}
		s.Time.Until = 0 // offered from time.from on, even with spread faults
	}
	if b.checker != nil {
		if err := d.checker(b.checker, s); err != nil {
			return err
		}
	}
	if b.properties != nil {
		if err := d.properties(b.properties, s); err != nil {
			return err
		}
	}
	return s.validateTemplates(d)
}
