package engine

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/netns"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/tracer"
	"github.com/lockstep-dev/lockstep/vclock"
)

// Version is written into trace headers.
const Version = "0.1.0"

// TrialResult is what one trial produced.
type TrialResult struct {
	Index     int
	Seed      int64
	Outcome   Outcome
	Dir       string // the trial's directory (node output)
	TracePath string // "" when no trace was written
	Records   []sched.Record
	Duration  time.Duration
	Stats     tracer.Stats
	// Launch, Teardown and Reset are the real time spent starting nodes,
	// killing them and resetting the network; with Stats' settle, decide
	// and release times they account for Duration (--stats prints them).
	Launch, Teardown, Reset time.Duration
	// Conntrack compares the kernel's byte records with lockstep's
	// accounting (zero when connection tracking is unavailable).
	Conntrack ConntrackStats
}

// job is one worker of a campaign: its own network and CPU, reused across
// the trials it runs.
type job struct {
	spec    *Spec
	cluster *netns.Cluster
	cpu     int
	track   *tracker // nil without eBPF
	zygote  *tracer.Zygote
	log     *slog.Logger
	outDir  string
}

func newJob(ctx context.Context, spec *Spec, cpu int, outDir string, log *slog.Logger) (*job, error) {
	names := make([]string, len(spec.Nodes))
	for i, n := range spec.Nodes {
		names[i] = n.Name
	}
	cl, err := netns.New(ctx, netns.Config{Subnet: spec.Network.Subnet, Nodes: names})
	if err != nil {
		return nil, fmt.Errorf("building the network: %w", err)
	}
	z, err := tracer.StartZygote()
	if err != nil {
		cl.Close()
		return nil, err
	}
	return &job{spec: spec, cluster: cl, cpu: cpu, log: log, outDir: outDir, zygote: z}, nil
}

func (j *job) close() error {
	j.zygote.Close()
	return j.cluster.Close()
}

// trialParams says how to run one trial.
type trialParams struct {
	index     int
	seed      int64
	strategy  sched.Strategy
	stepsHint int
	traceAll  bool
	// plus reports whether the last decision of a "+" strategy released an
	// op at once (nil when the strategy is not a "+" variant).
	immediate func() bool
	scheme    string
	frames    int
}

// replayEndWaits bounds the settles a replay waits, after the trace's last
// decision, for the outcome the trace recorded.
const replayEndWaits = 200

// errStartDue ends a Drive so that a delayed node can be launched.
var errStartDue = errors.New("node start due")

func (j *job) runTrial(ctx context.Context, p trialParams) (*TrialResult, error) {
	spec := j.spec
	start := time.Now()
	res := &TrialResult{Index: p.index, Seed: p.seed}
	res.Dir = filepath.Join(j.outDir, "trials", fmt.Sprintf("%05d", p.index))
	if err := os.MkdirAll(res.Dir, 0o755); err != nil {
		return nil, err
	}
	if j.track != nil {
		j.track.take(j) // what earlier trials of this job left
	}
	clk := vclock.New(spec.Time.Epoch, spec.Limits.VirtualTime)
	subnet := spec.Network.Subnet
	tr := tracer.New(tracer.Options{
		Clock:      clk,
		Random:     func(node string) io.Reader { return vclock.NewRandom(p.seed, node) },
		Gated:      func(a netip.Addr) bool { return subnet.Contains(a) },
		Capture:    true,
		CPU:        j.cpu,
		SiteFrames: p.frames,
		Logger:     j.log,
		Zygote:     j.zygote,
	})
	defer tr.Close()

	addrs := map[string]netip.Addr{}
	for _, n := range spec.Nodes {
		addrs[n.Name] = j.cluster.Node(n.Name).Addr
	}
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	launch := func(n NodeSpec) error {
		defer func(t0 time.Time) { res.Launch += time.Since(t0) }(time.Now())
		nodeDir := filepath.Join(res.Dir, n.Name)
		if err := os.MkdirAll(nodeDir, 0o755); err != nil {
			return err
		}
		argv, env, wd, err := spec.Expand(n.Name, TemplateVars{TrialDir: res.Dir, NodeDir: nodeDir, Seed: p.seed, Addrs: addrs})
		if err != nil {
			return err
		}
		// Appending: a restarted node's output follows its first run's.
		out, err := appendFile(filepath.Join(res.Dir, n.Name+".out"))
		if err != nil {
			return err
		}
		errf, err := appendFile(filepath.Join(res.Dir, n.Name+".err"))
		if err != nil {
			out.Close()
			return err
		}
		files = append(files, out, errf)
		cn := j.cluster.Node(n.Name)
		_, err = tr.Launch(tracer.LaunchConfig{
			Node: n.Name, Addr: cn.Addr, Argv: argv, Env: nodeEnv(env), Dir: wd,
			Netns: cn.NetnsPath, HostsFile: cn.HostsFile, Cgroup: cn.CgroupDir,
			Stdout: out, Stderr: errf,
		})
		if err != nil {
			return fmt.Errorf("starting node %s: %w", n.Name, err)
		}
		return nil
	}

	// Nodes start in spec order once their start_delay (virtual) has passed
	// and the nodes before them are ready.
	st0 := newStarts(spec.Nodes, func(node string, port uint16) (bool, error) {
		return netns.Listening(j.cluster.Node(node).NetnsPath, port)
	})
	for {
		n, ok := st0.due(0)
		if !ok {
			break
		}
		st0.take(n.Name)
		if err := launch(n); err != nil {
			res.Outcome = Outcome{Kind: Error, Detail: err.Error(), Node: n.Name}
			return j.finish(ctx, tr, res, p, clk, start)
		}
	}
	waiting := st0

	p.strategy.Reset(p.seed, p.stepsHint)
	clients := map[string]bool{}
	for _, n := range spec.Nodes {
		if n.Role == RoleClient {
			clients[n.Name] = true
		}
	}
	role := func(node string) Role {
		for _, n := range spec.Nodes {
			if n.Name == node {
				return n.Role
			}
		}
		return RoleServer
	}
	tm := newTiming(spec.Time.Delays, spec.Time.MaxDelay, p.seed)
	endWaits := 0 // settles after a replayed trace's last decision
	var inj *faults.Injector
	var restarts []string // crashed nodes to start again
	if spec.Faults.Enabled() {
		names := make([]string, len(spec.Nodes))
		for i, n := range spec.Nodes {
			names[i] = n.Name
		}
		inj = faults.New(spec.Faults, names, p.seed)
	}
	nodeOf := func(a netip.Addr) string {
		for name, na := range addrs {
			if na == a {
				return name
			}
		}
		return ""
	}
	// applyFault carries out a fault's effect; a crash or restart needs the
	// tracer, the caller's action.
	applyFault := func(e faults.Effect) (tracer.Action, error) {
		switch e.Kind {
		case sched.Crash:
			return tracer.Action{Crash: e.Node}, nil
		case sched.Restart:
			restarts = append(restarts, e.Node)
			return tracer.Action{}, errStartDue
		case sched.Partition:
			if err := j.cluster.Partition(e.Cut, e.Rest); err != nil {
				return tracer.Action{}, fmt.Errorf("partitioning %v from %v: %w", e.Cut, e.Rest, err)
			}
		case sched.Heal:
			if err := j.cluster.Heal(e.Cut, e.Rest); err != nil {
				return tracer.Action{}, fmt.Errorf("healing %v from %v: %w", e.Cut, e.Rest, err)
			}
		}
		return tracer.Action{}, nil
	}
	realLimit := time.Now().Add(spec.Limits.RealTime)
	var (
		steps    int
		lastOp   *sched.Op
		lastImm  bool
		outcome  *Outcome
		spinning int
	)
	set := func(k OutcomeKind, node, format string, args ...any) {
		outcome = &Outcome{Kind: k, Node: node, Detail: fmt.Sprintf(format, args...)}
	}
	decide := func(st *tracer.State, last tracer.Released) (tracer.Action, error) {
		if lastOp != nil {
			res.Records = append(res.Records, sched.Record{
				Step: steps, VTime: int64(clk.Now()), Op: *lastOp,
				Result: last.Result, Causes: last.Causes, Immediate: lastImm,
			})
			tm.released(lastOp)
			lastOp = nil
		}
		for _, e := range st.Exits {
			if !e.Root {
				continue
			}
			failed := e.Signal != 0 || e.Code != 0
			switch {
			case inj != nil && inj.Crashed(e.Node):
				// The injected crash, not a bug.
			case role(e.Node) == RoleClient && failed:
				set(ClientFailed, e.Node, "client %s", e.String())
			case role(e.Node) == RoleClient:
				delete(clients, e.Node)
			case failed:
				set(NodeCrashed, e.Node, "node %s", e.String())
			}
		}
		if outcome != nil {
			return tracer.Action{Stop: true}, nil
		}
		if len(restarts) > 0 {
			return tracer.Action{}, errStartDue
		}
		if len(clients) == 0 && waiting.empty() {
			set(Pass, "", "")
			return tracer.Action{Stop: true}, nil
		}
		if time.Now().After(realLimit) {
			set(Error, "", "real-time limit %v reached at step %d (raise limits.real_time)", spec.Limits.RealTime, steps)
			return tracer.Action{Stop: true}, nil
		}
		if len(st.Spinning) > 0 {
			if spinning++; spinning >= 3 {
				set(Livelock, "", "%s kept running without reaching a gated syscall", strings.Join(st.Spinning, ", "))
				return tracer.Action{Stop: true}, nil
			}
		} else {
			spinning = 0
		}
		if !waiting.empty() {
			if err := waiting.refresh(); err != nil {
				set(Error, "", "%v", err)
				return tracer.Action{Stop: true}, nil
			}
			if _, ok := waiting.due(clk.Now()); ok {
				return tracer.Action{}, errStartDue
			}
		}
		if steps >= spec.Limits.Steps {
			set(StepLimit, "", "step limit %d reached", spec.Limits.Steps)
			return tracer.Action{Stop: true}, nil
		}
		now := clk.Now()
		if inj != nil && inj.Quiet(now) {
			// The quiet period: heal, restart the crashed, no more faults.
			var act tracer.Action
			var actErr error
			for _, e := range inj.Recover() {
				steps++
				op := sched.Op{Node: e.Node, LPID: "fault", Kind: e.Kind, Object: "node:" + e.Node}
				if e.Kind == sched.Heal {
					op.Node, op.Object = strings.Join(e.Cut, ","), "node:"+strings.Join(e.Cut, ",")
				}
				res.Records = append(res.Records, sched.Record{Step: steps, VTime: int64(now), Op: op, Auto: true})
				a, err := applyFault(e)
				if err != nil && !errors.Is(err, errStartDue) {
					set(Error, e.Node, "%v", err)
					return tracer.Action{Stop: true}, nil
				}
				if err != nil {
					actErr = err
				}
				act = a
			}
			return act, actErr
		}
		ready := tm.ready(st.Pending, st.Enabled, now)
		if inj != nil {
			kept := ready[:0:0]
			for _, o := range ready {
				if !inj.Holds(o, now, nodeOf) {
					kept = append(kept, o)
				}
			}
			ready = kept
		}
		if len(ready) == 0 {
			// The deadlines of held ops passed already (they were enabled);
			// their holds end at holdEnd. Any other passed deadline is a
			// timed wait the next settle wakes.
			next, ok := nextDeadline(st, len(ready) != len(st.Enabled))
			if at, start := waiting.next(); start && (!ok || at < next) {
				next, ok = at, true
			}
			if end, held := tm.holdEnd(now); held && (!ok || end < next) {
				next, ok = end, true
			}
			if inj != nil {
				if end, held := inj.Deadline(now); held && (!ok || end < next) {
					next, ok = end, true
				}
			}
			if !ok {
				if w := waiting.describe(); w != "" {
					set(Deadlock, "", "nothing enabled and no deadline; %s; blocked: %s", w, describeOps(st.Pending))
					return tracer.Action{Stop: true}, nil
				}
				set(Deadlock, "", "nothing enabled and no deadline; blocked: %s", describeOps(st.Pending))
				return tracer.Action{Stop: true}, nil
			}
			if next > spec.Limits.VirtualTime {
				clk.AdvanceTo(spec.Limits.VirtualTime)
				set(VTimeLimit, "", "virtual time limit %v reached; blocked: %s", spec.Limits.VirtualTime, describeOps(st.Pending))
				return tracer.Action{Stop: true}, nil
			}
			clk.AdvanceTo(next)
			return tracer.Action{}, nil
		}
		choices := ready
		if adv := tm.advance(ready, waiting.deadlines(st.Deadlines), now); adv != nil {
			choices = append(ready[:len(ready):len(ready)], adv)
		}
		if inj != nil {
			if fs := inj.Offer(now); len(fs) > 0 {
				choices = append(choices[:len(choices):len(choices)], fs...)
			}
		}
		if rp, ok := p.strategy.(*sched.Replay); ok && rp.Done() && endWaits < replayEndWaits {
			// The trace ended here with an outcome: a process exit or a
			// failure that this run has not reported yet (a panicking Go
			// thread can look quiescent while it waits for a lock on its
			// way out). Settle again rather than call it a divergence.
			endWaits++
			time.Sleep(time.Millisecond)
			return tracer.Action{}, nil
		}
		i, err := p.strategy.Next(choices)
		if err != nil {
			set(Diverged, "", "%v", err)
			return tracer.Action{Stop: true}, nil
		}
		op := choices[i]
		if op.Kind == sched.Advance {
			steps++
			res.Records = append(res.Records, sched.Record{Step: steps, VTime: int64(now), Op: *op})
			tm.chose(op, ready)
			return tracer.Action{}, nil
		}
		if op.Kind.IsFault() {
			steps++
			e, err := inj.Chose(op, now)
			if err != nil {
				return tracer.Action{}, err
			}
			res.Records = append(res.Records, sched.Record{Step: steps, VTime: int64(now), Op: *op})
			a, err := applyFault(e)
			if err != nil && !errors.Is(err, errStartDue) {
				set(Error, e.Node, "%v", err)
				return tracer.Action{Stop: true}, nil
			}
			return a, err
		}
		lastOp = op
		lastImm = p.immediate != nil && p.immediate()
		steps++
		return tracer.Action{Release: op.ID}, nil
	}
	for outcome == nil {
		err := tr.Drive(ctx, decide)
		if errors.Is(err, errStartDue) {
			var n NodeSpec
			if len(restarts) > 0 {
				n = *spec.Node(restarts[0])
				restarts = restarts[1:]
			} else {
				n, _ = waiting.due(clk.Now())
				waiting.take(n.Name)
			}
			if err := launch(n); err != nil {
				set(Error, n.Name, "%v", err)
			}
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			set(Error, "", "%v", err)
		}
		if outcome == nil {
			set(Error, "", "trial stopped without an outcome")
		}
	}
	res.Outcome = *outcome
	res.Outcome.Steps = steps
	res.Outcome.VTime = clk.Now()
	return j.finish(ctx, tr, res, p, clk, start)
}

// finish tears the trial down, runs the checker and writes the trace.
func (j *job) finish(ctx context.Context, tr *tracer.Tracer, res *TrialResult, p trialParams, clk *vclock.Clock, start time.Time) (*TrialResult, error) {
	res.Stats = tr.Stats()
	t0 := time.Now()
	if err := tr.KillAll(); err != nil {
		return nil, err
	}
	tr.Close()
	res.Teardown = time.Since(t0)
	if j.track != nil {
		evs, err := j.track.take(j)
		if err != nil {
			return nil, fmt.Errorf("reading connection records: %w", err)
		}
		res.Conntrack = joinConntrack(res.Records, evs, os.Getpid())
		if res.Conntrack.Disagreed > 0 {
			j.log.Debug("kernel records and lockstep's accounting differ", "trial", res.Index, "recvs", res.Conntrack.Recvs, "differ", res.Conntrack.Disagreed)
		}
	}
	t0 = time.Now()
	if err := j.cluster.Reset(ctx); err != nil {
		return nil, fmt.Errorf("resetting the network after trial %d: %w", res.Index, err)
	}
	res.Reset = time.Since(t0)
	if res.Outcome.Kind == Pass && len(j.spec.Checker.Command) > 0 {
		if err := j.runChecker(ctx, res); err != nil {
			res.Outcome.Kind = CheckerFailed
			res.Outcome.Detail = err.Error()
		}
	}
	if res.Outcome.Kind != Pass || p.traceAll {
		path := filepath.Join(res.Dir, "trace.jsonl")
		if err := writeTrace(path, j.spec, res, p, clk); err != nil {
			return nil, err
		}
		res.TracePath = path
	}
	res.Duration = time.Since(start)
	return res, nil
}

func (j *job) runChecker(ctx context.Context, res *TrialResult) error {
	argv, err := j.spec.ExpandChecker(TemplateVars{TrialDir: res.Dir, NodeDir: res.Dir, Seed: res.Seed, Addrs: map[string]netip.Addr{}})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, j.spec.Checker.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = res.Dir
	out, err := cmd.CombinedOutput()
	os.WriteFile(filepath.Join(res.Dir, "checker.out"), out, 0o644)
	if err != nil {
		last := lastLine(out)
		if last != "" {
			return fmt.Errorf("checker %s: %v: %s", filepath.Base(argv[0]), err, last)
		}
		return fmt.Errorf("checker %s: %v", filepath.Base(argv[0]), err)
	}
	return nil
}

func lastLine(b []byte) string {
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	last := ""
	for sc.Scan() {
		if t := strings.TrimSpace(sc.Text()); t != "" {
			last = t
		}
	}
	return last
}

func describeOps(ops []*sched.Op) string {
	if len(ops) == 0 {
		return "(no pending ops)"
	}
	var b []string
	for i, o := range ops {
		if i == 8 {
			b = append(b, fmt.Sprintf("and %d more", len(ops)-8))
			break
		}
		b = append(b, o.String())
	}
	return strings.Join(b, "; ")
}

// nodeEnv is a node's environment: baseEnv with the spec's entries added,
// a spec entry replacing a base one of the same name (a duplicate would be
// read by some programs and not others).
func nodeEnv(spec []string) []string {
	out := baseEnv()
	for _, e := range spec {
		name, _, _ := strings.Cut(e, "=")
		replaced := false
		for i, b := range out {
			if strings.HasPrefix(b, name+"=") {
				out[i], replaced = e, true
				break
			}
		}
		if !replaced {
			out = append(out, e)
		}
	}
	return out
}

// baseEnv is the environment every node starts with: enough for programs
// to find their tools, nothing of lockstep's own.
func baseEnv() []string {
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"}
	if h := os.Getenv("JAVA_HOME"); h != "" {
		env = append(env, "JAVA_HOME="+h)
	}
	return env
}

var _ = syscall.SIGKILL

// appendFile opens a node's output file for appending, creating it.
func appendFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
}

// nextDeadline is the earliest deadline of the state, leaving out those of
// enabled ops when some are held: a held op's deadline has passed, and
// jumping to it would not move the clock.
func nextDeadline(st *tracer.State, held bool) (time.Duration, bool) {
	if !held {
		return st.NextDeadline, st.HasDeadline
	}
	enabled := make(map[uint64]bool, len(st.Enabled))
	for _, o := range st.Enabled {
		enabled[o.ID] = true
	}
	for _, d := range st.Deadlines { // sorted
		if d.Op == 0 || !enabled[d.Op] {
			return d.At, true
		}
	}
	return 0, false
}
