package spec

import (
	"errors"
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

var (
	nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
)

func (d *decoder) spec(root ast.Node, s *Spec) error {
	pairs, err := d.fields(root, "", "name", "nodes", "network", "scheduler", "trials", "limits", "checker", "faults", "time", "trace", "properties")
	if err != nil {
		return err
	}
	// Defaults.
	s.Network.Subnet = DefaultSubnet
	s.Scheduler.Strategy = "pos"
	s.Scheduler.Seed = 1
	s.Scheduler.Conflict.Scheme = "proc+pc"
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
	var nodesNode, checkerNode, subnetNode, faultsNode, timeUntil, timeSpreadNode, propertiesNode ast.Node
	timeSpread := true
	haveName := false
	pctNode := ast.Node(nil)
	for _, p := range pairs {
		switch p.key {
		case "name":
			if s.Name, err = d.str(p.value, "name"); err != nil {
				return err
			}
			if !nameRE.MatchString(s.Name) {
				return d.errf(p.value, "name", "%q is not a valid name (lowercase letters, digits and dashes)", s.Name)
			}
			haveName = true
		case "nodes":
			nodesNode = p.value
		case "network":
			np, err := d.fields(p.value, "network", "subnet")
			if err != nil {
				return err
			}
			for _, q := range np {
				v, err := d.str(q.value, "network.subnet")
				if err != nil {
					return err
				}
				pfx, perr := netip.ParsePrefix(v)
				if perr != nil {
					return d.errf(q.value, "network.subnet", "invalid subnet %q", v)
				}
				if !pfx.Addr().Is4() {
					return d.errf(q.value, "network.subnet", "must be an IPv4 subnet, got %s", v)
				}
				if pfx.Bits() < 8 || pfx.Bits() > 30 {
					return d.errf(q.value, "network.subnet", "prefix length must be between 8 and 30, got /%d", pfx.Bits())
				}
				if err := d.usableSubnet(q.value, pfx.Masked()); err != nil {
					return err
				}
				s.Network.Subnet = pfx.Masked()
				subnetNode = q.value
			}
		case "scheduler":
			sp, err := d.fields(p.value, "scheduler", "strategy", "seed", "pct_depth", "conflict")
			if err != nil {
				return err
			}
			for _, q := range sp {
				f := "scheduler." + q.key
				switch q.key {
				case "strategy":
					if s.Scheduler.Strategy, err = d.str(q.value, f); err != nil {
						return err
					}
					if serr := checkStrategy(s.Scheduler.Strategy); serr != nil {
						return d.errf(q.value, f, "%v", serr)
					}
				case "seed":
					if s.Scheduler.Seed, err = d.integer(q.value, f); err != nil {
						return err
					}
				case "pct_depth":
					v, err := d.integer(q.value, f)
					if err != nil {
						return err
					}
					if v < 1 || v > maxPCTDepth {
						return d.errf(q.value, f, "must be between 1 and %d, got %d", maxPCTDepth, v)
					}
					s.Scheduler.PCTDepth = int(v)
					pctNode = q.value
				case "conflict":
					if err := d.conflict(q.value, s); err != nil {
						return err
					}
				}
			}
		case "trials":
			v, err := d.integer(p.value, "trials")
			if err != nil {
				return err
			}
			if v < 1 || v > MaxTrials {
				return d.errf(p.value, "trials", "must be between 1 and %d, got %d", MaxTrials, v)
			}
			s.Trials = int(v)
		case "limits":
			lp, err := d.fields(p.value, "limits", "virtual_time", "steps", "real_time", "deadlock_grace", "livelock_steps", "node")
			if err != nil {
				return err
			}
			for _, q := range lp {
				f := "limits." + q.key
				switch q.key {
				case "virtual_time":
					if s.Limits.VirtualTime, err = d.duration(q.value, f, false, maxVirtualTime); err != nil {
						return err
					}
				case "real_time":
					if s.Limits.RealTime, err = d.duration(q.value, f, false, maxRealTime); err != nil {
						return err
					}
				case "deadlock_grace":
					if s.Limits.DeadlockGrace, err = d.duration(q.value, f, true, time.Minute); err != nil {
						return err
					}
				case "livelock_steps":
					if s.Limits.LivelockSteps, err = d.count(q.value, f, maxSteps); err != nil {
						return err
					}
				case "node":
					if s.Limits.Node, err = d.nodeLimits(q.value, f); err != nil {
						return err
					}
				case "steps":
					v, err := d.integer(q.value, f)
					if err != nil {
						return err
					}
					if v < 1 || v > maxSteps {
						return d.errf(q.value, f, "must be between 1 and %d, got %d", maxSteps, v)
					}
					s.Limits.Steps = int(v)
				}
			}
		case "checker":
			checkerNode = p.value
		case "properties":
			propertiesNode = p.value
		case "faults":
			faultsNode = p.value
		case "trace":
			tp, err := d.fields(p.value, "trace", "data")
			if err != nil {
				return err
			}
			for _, q := range tp {
				v, err := d.integer(q.value, "trace.data")
				if err != nil {
					return err
				}
				if v < 0 || v > maxTraceData {
					return d.errf(q.value, "trace.data", "must be between 0 and %d bytes, got %d", maxTraceData, v)
				}
				s.Trace.Data = int(v)
			}
		case "time":
			tp, err := d.fields(p.value, "time", "epoch", "delays", "max_delay", "tick", "skew", "from", "until", "spread")
			if err != nil {
				return err
			}
			for _, q := range tp {
				f := "time." + q.key
				switch q.key {
				case "epoch":
					v, err := d.str(q.value, f)
					if err != nil {
						return err
					}
					e, perr := time.Parse(time.RFC3339, v)
					if perr != nil {
						return d.errf(q.value, f, "invalid time %q (want RFC 3339, e.g. 2024-01-01T00:00:00Z)", v)
					}
					if e.Before(minEpoch) || e.After(maxEpoch) {
						return d.errf(q.value, f, "must be between 1970-01-01T00:00:00Z and 2200-01-01T00:00:00Z, got %s", v)
					}
					s.Time.Epoch = e
				case "delays":
					v, err := d.integer(q.value, f)
					if err != nil {
						return err
					}
					if v < 0 || v > maxDelays {
						return d.errf(q.value, f, "must be between 0 and %d, got %d", maxDelays, v)
					}
					s.Time.Delays = int(v)
				case "tick":
					if s.Time.Tick, err = d.duration(q.value, f, true, time.Second); err != nil {
						return err
					}
				case "skew":
					if s.Time.Skew, err = d.duration(q.value, f, true, time.Hour); err != nil {
						return err
					}
				case "max_delay":
					if s.Time.MaxDelay, err = d.duration(q.value, f, false, maxVirtualTime); err != nil {
						return err
					}
				case "from":
					if s.Time.From, err = d.duration(q.value, f, true, maxVirtualTime); err != nil {
						return err
					}
				case "until":
					if s.Time.Until, err = d.duration(q.value, f, false, maxVirtualTime); err != nil {
						return err
					}
					timeUntil = q.value
				case "spread":
					if timeSpread, s.Time.By, err = d.spread(q.value, f); err != nil {
						return err
					}
					timeSpreadNode = q.value
				}
			}
		}
	}
	if !haveName {
		return d.errf(root, "name", "missing")
	}
	if pctNode != nil && strings.TrimSuffix(s.Scheduler.Strategy, "+") != "pct" {
		return d.errf(pctNode, "scheduler.pct_depth", "only applies to strategy pct, not %s", s.Scheduler.Strategy)
	}
	if nodesNode == nil {
		return d.errf(root, "nodes", "missing")
	}
	if subnetNode == nil {
		// The default must not clash with the host either.
		if err := d.usableSubnet(nil, s.Network.Subnet); err != nil {
			var se *Error
			if errors.As(err, &se) {
				se.Msg = "the default " + se.Msg + " (set network.subnet)"
			}
			return err
		}
	}
	if err := d.nodes(nodesNode, s); err != nil {
		return err
	}
	if faultsNode != nil {
		if err := d.faults(faultsNode, s); err != nil {
			return err
		}
	}
	if err := d.delayWindow(timeUntil, s); err != nil {
		return err
	}
	if !timeSpread {
		if timeUntil != nil {
			return d.errf(timeSpreadNode, "time.spread", "is false, but time.until sets a delay window")
		}
		s.Time.Until = 0 // offered from time.from on, even with spread faults
	}
	if checkerNode != nil {
		if err := d.checker(checkerNode, s); err != nil {
			return err
		}
	}
	if propertiesNode != nil {
		if err := d.properties(propertiesNode, s); err != nil {
			return err
		}
	}
	return s.validateTemplates(d)
}
