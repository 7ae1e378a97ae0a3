package engine

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lockstep-dev/lockstep/bpf"
	"github.com/lockstep-dev/lockstep/coverage"
	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/netns"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/spec"
	"github.com/lockstep-dev/lockstep/tracer"
	"github.com/lockstep-dev/lockstep/vclock"
)

// Version is written into trace headers.
const Version = "0.1.0"

// job is one worker of a campaign: its own network and CPU, reused across
// the trials it runs.
type job struct {
	spec    *spec.Spec
	cluster *netns.Cluster
	cpu     int
	claim   *cpuClaim // on cpu, while the job lives (nil: shared)
	track   *tracker  // nil without eBPF
	// activity counts the nodes' cgroups' wake-ups for quiescence; nil
	// without eBPF (cpu.stat is read instead).
	activity *bpf.Activity
	zygote   *tracer.Zygote
	images   *tracer.Images
	log      *slog.Logger
	outDir   string
	// limits are the nodes' resource limits; jobs is how many jobs the
	// campaign runs, whose clusters share the host.
	limits *campaignLimits
	jobs   int
	// faults is the spec's fault plan for package faults.
	faults faults.Plan
	// delayBy is what the delays' triggers are drawn over (time.spread).
	delayBy faults.By
}

// newJob builds a job's network and zygote; its nodes' limits are
// derived from the host for a campaign of jobs jobs.
//
// kernel (nil: the job's own) shares what loading eBPF programs decodes of
// the kernel's types with the campaign's other loads.
func newJob(ctx context.Context, sp *spec.Spec, cpu cpuPick, jobs int, outDir string, log *slog.Logger, kernel *bpf.Kernel) (j *job, err error) {
	defer func() {
		if err != nil {
			cpu.claim.release()
		}
	}()
	if err := needPrivileges(); err != nil {
		return nil, err
	}
	names := make([]string, len(sp.Nodes))
	for i, n := range sp.Nodes {
		names[i] = n.Name
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	plan, err := faultPlan(sp.Faults)
	if err != nil {
		return nil, err
	}
	delayBy, err := spreadBy(sp.Time.By)
	if err != nil {
		return nil, err
	}
	host, err := readHost()
	if err != nil {
		return nil, fmt.Errorf("sizing the nodes' limits: %w", err)
	}
	lim := resolveLimits(sp, host, jobs)
	cl, err := netns.New(ctx, netns.Config{Subnet: sp.Network.Subnet, Nodes: names, Limits: lim.netnsLimits(), Total: lim.total})
	if err != nil {
		return nil, fmt.Errorf("building the network: %w", err)
	}
	z, err := tracer.StartZygote()
	if err != nil {
		cl.Close()
		return nil, err
	}
	return &job{spec: sp, cluster: cl, cpu: cpu.cpu, claim: cpu.claim, log: log, outDir: outDir, zygote: z, images: tracer.NewImages(), activity: newActivity(log, kernel), limits: lim, jobs: max(jobs, 1), faults: plan, delayBy: delayBy}, nil
}

func (j *job) close() error {
	defer j.claim.release()
	j.zygote.Close()
	if j.activity != nil {
		j.activity.Close()
	}
	return j.cluster.Close()
}

// trialParams says how to run one trial.
type trialParams struct {
	index     int
	seed      int64
	strategy  sched.Strategy
	stepsHint int
	// expect is the steps the fault and delay windows are expected to
	// hold (trial 0's Windows; zero in trial 0 itself).
	expect   Windows
	traceAll bool
	keepTmp  bool // keep a passing trial's {{tmp}} directories (RunOptions.KeepTmp)
	dropTmp  bool // and not a failing one's (RunOptions.DropTmp)
	// plus reports whether the last decision of a "+" strategy released an
	// op at once (nil when the strategy is not a "+" variant).
	immediate func() bool
	scheme    string
	frames    int
	// msgBytes is how many of each delivery's first bytes the conflict
	// scheme names messages by (Op.Msg; 0: it does not).
	msgBytes int
	// dir, when set, is the trial's directory instead of its place under
	// the job's output directory (a --verify replay's).
	dir string
	// symptom, when set, is what the trial's lines are matched against
	// (run --symptom): its last line printed ends the trial.
	symptom *coverage.Symptom
	// lines keeps the nodes' lines in the order read (replay --lines).
	lines bool
}

// replayEndWait bounds the real time a replay waits, after the trace's
// last decision, for the outcome the trace recorded, before it releases
// the ops of processes on their way out (sched.ReplayTail): a JVM's exit
// takes a few hundred milliseconds, more on a busy machine.
const replayEndWait = 2 * time.Second

// replayMissWait bounds the real time a replay settles again when the
// recorded op is not among the enabled ones, before it reports a
// divergence.
const replayMissWait = 2 * time.Second

// Trial is one run of a spec's nodes under the tracer, between quiescent
// points: Step turns the tracer's state into an action (release an op,
// move the clock, start or crash a node, stop), and Released and Launched
// bring back what the action did before the next Step. It implements
// tracer.Stepper; the tracer runs it on its own thread.
type Trial struct {
	j     *job
	p     trialParams
	spec  *spec.Spec
	res   *TrialResult
	clk   *vclock.Clock
	addrs map[string]netip.Addr
	nodes map[netip.Addr]string // addrs reversed, for fault holds
	// dir writes lockstep's files into the trial's directory, which
	// the nodes can write too; tmps are the nodes' {{tmp}} mounts;
	// outputs are each node's stdout and stderr files, opened before any
	// node starts (a restart appends to them).
	dir     *trialFiles
	tmps    *nodeTmps
	outputs map[string][2]*os.File

	// props watches the nodes' output for the spec's properties (nil
	// without any).
	props    *properties
	starts   *starts          // nodes not started yet
	timing   *timing          // delays
	faults   *faults.Injector // nil without a fault plan
	drops    bool             // the plan has drop faults
	holds    bool             // the plan has hold faults
	corrupts bool             // the plan has corruptions
	disk     storage          // books of the nodes' data files (storage.go)
	restarts []string         // crashed nodes to start again
	clients  map[string]bool  // clients still running

	realLimit time.Time
	steps     int
	spinning  int
	// timed are the tracer's real-time points (tracer.State.Timed) since
	// the last record: the next record carries them.
	timed     []string
	endSince  time.Time // when a replayed trace's last decision was made
	missSince time.Time // when a replay first missed the recorded op
	// endOwedSince is when a replay whose clients were done first waited
	// for a decision its trace has left (owed).
	endOwedSince time.Time
	skew         map[string]time.Duration // each node's wall-clock offset (time.skew)
	// graceSpent is the real time a deadlock has been watched for since
	// the last release (Limits.DeadlockGrace).
	graceSpent time.Duration
	// pending is the op the last action released, recorded when its
	// result comes back; imm says a "+" strategy released it at once.
	pending *sched.Op
	imm     bool
	// forked is the seed of a fork made at the decision under way, for
	// its op's record.
	forked  *int64
	outcome *Outcome
	live    livelock
	// limitBase are the nodes' limit counters when the trial began;
	// outCaps keeps their output files at their caps.
	limitBase map[string]netns.LimitEvents
	outCaps   *outputCaps
}

// isHost reports whether a node of the cluster has the address.
func (j *job) isHost(a netip.Addr) bool {
	for _, n := range j.spec.Nodes {
		if nd := j.cluster.Node(n.Name); nd != nil && nd.Addr == a {
			return true
		}
	}
	return false
}

// trialDir is where trial index of a run into out keeps its files.
// nodesCPU sums the CPU time used so far in the nodes' cgroups.
func (j *job) nodesCPU() time.Duration {
	var sum time.Duration
	for _, n := range j.spec.Nodes {
		cn := j.cluster.Node(n.Name)
		if cn == nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(cn.CgroupDir, "cpu.stat"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
				us, _ := strconv.ParseInt(v, 10, 64)
				sum += time.Duration(us) * time.Microsecond
			}
		}
	}
	return sum
}

func trialDir(out string, index int) string {
	return filepath.Join(out, "trials", fmt.Sprintf("%05d", index))
}

func (j *job) runTrial(ctx context.Context, p trialParams) (*TrialResult, error) {
	sp := j.spec
	start := time.Now()
	res := &TrialResult{Index: p.index, Seed: p.seed}
	res.Dir = trialDir(j.outDir, p.index)
	if p.dir != "" {
		res.Dir = p.dir
	}
	// A trial starts from empty node directories: what an earlier run into
	// the same directory left (a Redis dump.rdb, an etcd WAL) would make
	// the same seed take another path.
	if err := clearTrial(res.Dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(res.Dir, 0o755); err != nil {
		return nil, err
	}
	tf, err := openTrialFiles(res.Dir)
	if err != nil {
		return nil, err
	}
	defer tf.close()
	nodeNames := make([]string, len(sp.Nodes))
	for i, n := range sp.Nodes {
		nodeNames[i] = n.Name
	}
	tmps, err := mountTmps(tf, nodeNames, j.tmpSizes())
	if err != nil {
		return nil, err
	}
	defer tmps.release(false) // finish keeps a failing trial's first
	if j.track != nil {
		j.track.take(j) // what earlier trials of this job left, and their drops
	}
	res.NodesCPU = -j.nodesCPU() // finish adds the usage at the end
	clk := vclock.New(sp.Time.Epoch, sp.Limits.VirtualTime)
	t := &Trial{
		j: j, p: p, spec: sp, res: res, clk: clk,
		addrs:   map[string]netip.Addr{},
		nodes:   map[netip.Addr]string{},
		clients: map[string]bool{},
		timing:  newTiming(sp.Time.Delays, sp.Time.MaxDelay, p.seed),
		dir:     tf,
		tmps:    tmps,
		outputs: map[string][2]*os.File{},
		// Read before any node starts: the counters only grow.
		limitBase: j.limitEvents(),
		outCaps:   newOutputCaps(j.tmpfsWatch()),
	}
	for node, fd := range tmps.fds() {
		t.outCaps.pinTmp(node, fd)
	}
	// Every node's output files before the first node starts: one node
	// could otherwise put a link where a later one's go.
	for _, n := range sp.Nodes {
		if _, _, err := t.outputFiles(n.Name); err != nil {
			t.closeFiles()
			t.outCaps.close()
			return nil, fmt.Errorf("node %s's output: %w", n.Name, err)
		}
	}
	t.timing.place(sp.Time.From, sp.Time.Until, j.delayBy, p.expect.Delays, p.seed)
	// Nodes start in spec order once their start_delay (virtual) has passed
	// and the nodes before them are ready.
	t.starts = newStarts(sp.Nodes, func(node string, port uint16) (bool, error) {
		return j.cluster.Node(node).Listens(port)
	}, func(node string) ([]uint16, bool, error) {
		return j.cluster.Node(node).ListenPorts()
	})
	tr := tracer.New(t.tracerOptions())
	defer tr.Close()

	if t.props, err = newProperties(sp, t.outputs, p.symptom, p.lines); err != nil {
		t.closeFiles()
		t.outCaps.close()
		return nil, err
	}
	defer t.props.close()
	defer t.countOutputs()()
	defer t.closeFiles()
	defer t.closeDisks()
	defer t.outCaps.close()
	names := make([]string, len(sp.Nodes))
	for i, n := range sp.Nodes {
		names[i] = n.Name
		t.addrs[n.Name] = j.cluster.Node(n.Name).Addr
		t.nodes[t.addrs[n.Name]] = n.Name
		if n.Role == spec.RoleClient {
			t.clients[n.Name] = true
		}
	}
	t.drawFaults(j.faults, p, names)
	if !t.startFirst(tr) {
		return j.finish(ctx, tr, res, p, clk, start, t)
	}

	p.strategy.Reset(p.seed, p.stepsHint)
	if f, ok := p.strategy.(sched.Forker); ok {
		f.OnFork(t.fork)
	}
	t.realLimit = time.Now().Add(sp.Limits.RealTime)
	if err := tr.Run(ctx, t); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if t.outcome == nil {
			t.set(Error, "", "%v", err)
		}
	}
	if t.outcome == nil {
		t.set(Error, "", "trial stopped without an outcome")
	}
	res.Outcome = *t.outcome
	res.Outcome.Steps = t.steps
	res.Outcome.VTime = clk.Now()
	res.Windows = Windows{Faults: t.faults.WindowSteps(t.steps), Delays: t.timing.windowSteps(t.steps)}
	return j.finish(ctx, tr, res, p, clk, start, t)
}

// startFirst starts the nodes due at the start, together, before anything
// runs. It reports false when one failed to start, with the trial's
// outcome set.
func (t *Trial) startFirst(tr *tracer.Tracer) bool {
	for {
		n, ok := t.starts.due(0)
		if !ok {
			return true
		}
		t.starts.take(n.Name)
		cfg, err := t.launchConfig(n)
		if err == nil {
			t0 := time.Now()
			var pid int
			pid, err = tr.Launch(*cfg)
			t.res.Launch += time.Since(t0)
			t.outCaps.pinTmpfs(n.Name, pid)
		}
		if err != nil {
			t.res.Outcome = Outcome{Kind: Error, Detail: fmt.Sprintf("starting node %s: %v", n.Name, err), Node: n.Name}
			return false
		}
	}
}

// tracerOptions are the options of the trial's tracer: the trial's clock
// and deadlines, its seed's random streams, the cluster's subnet gated and
// its firewall cut, every thread serialized.
func (t *Trial) tracerOptions() tracer.Options {
	j, sp, seed := t.j, t.spec, t.p.seed
	subnet := sp.Network.Subnet
	return tracer.Options{
		Clock:       t.clk,
		Wakes:       t.wakes(),
		Random:      func(node string) io.Reader { return vclock.NewRandom(seed, node) },
		Gated:       func(a netip.Addr) bool { return subnet.Contains(a) },
		Host:        j.isHost,
		Capture:     true,
		CPU:         j.cpu,
		SiteFrames:  t.p.frames,
		Data:        sp.Trace.Data,
		MatchBytes:  max(matchBytes(sp), t.p.msgBytes),
		Logger:      j.log,
		Zygote:      j.zygote,
		Images:      j.images,
		WatchCgroup: j.watchCgroup(),
		WatchThread: j.watchThread(),
		Socks:       j.faults.Needs(faults.NeedSocks) || j.faults.Follow,
		Firewall:    j.cluster.Firewall(),
		Serialize:   true,
	}
}

// drawFaults sets up the trial's fault plan (nil without one), drawn from
// its seed, and its nodes' wall-clock skews.
func (t *Trial) drawFaults(plan faults.Plan, p trialParams, names []string) {
	if plan.Enabled() {
		plan.Expect = p.expect.Faults
		t.faults = faults.New(plan, names, p.seed)
		t.drops = plan.Needs(faults.NeedDatagrams)
		t.holds = plan.Needs(faults.NeedConns)
		t.corrupts = plan.Needs(faults.NeedDataFiles)
		if len(plan.Probe) > 0 {
			t.faults.Aim = t.aimer()
		}
		if rc, ok := p.strategy.(sched.Recaller); ok {
			// A replay's or forced run's fault keeps the trace's draws.
			t.faults.Recall = rc.Recalled
		}
	}
	if skew := t.spec.Time.Skew; skew > 0 {
		// One draw per node in spec order, from a stream of its own.
		r := rand.New(rand.NewPCG(uint64(p.seed), 0x736b6577)) // "skew"
		t.skew = map[string]time.Duration{}
		for _, n := range names {
			t.skew[n] = time.Duration(r.Int64N(int64(2*skew)+1)) - skew
		}
	}
}

func (t *Trial) closeFiles() {
	for _, fs := range t.outputs {
		fs[0].Close()
		fs[1].Close()
	}
}

// launchConfig prepares a node's start: its directory, output files (a
// restarted node's output follows its first run's) and command.
func (t *Trial) launchConfig(n spec.Node) (*tracer.LaunchConfig, error) {
	// Its directory, {{tmp}}, is mounted already (nodeTmps).
	// The node sees the trial's directory at a fixed path (see
	// tracer.Sandbox.Trial), so its paths are the same in a replay.
	argv, env, wd, err := t.spec.Expand(n.Name, spec.TemplateVars{TrialDir: tracer.TrialPath, NodeDir: tracer.TrialPath + "/" + n.Name, Seed: t.p.seed, Addrs: t.addrs})
	if err != nil {
		return nil, err
	}
	out, errf, err := t.outputFiles(n.Name)
	if err != nil {
		return nil, err
	}
	lim := t.j.limits.nodes[n.Name]
	cn := t.j.cluster.Node(n.Name)
	sb := &tracer.Sandbox{Writable: []string{t.res.Dir}, Caps: n.Caps, Trial: t.res.Dir, TmpfsSize: lim.tmpfs,
		HiddenMounts: []string{tmpSource}, Hostname: n.Name}
	if sb.Private, err = privateDirs(filepath.Join(t.res.Dir, n.Name), n.PrivateDirs); err != nil {
		return nil, err
	}
	if n.Image != nil {
		sb.Root, env = imageRoot(t.res.Dir, n), imageNodeEnv(env)
	} else {
		env = nodeEnv(env)
	}
	dk, err := t.diskFor(n)
	if err != nil {
		return nil, err
	}
	return &tracer.LaunchConfig{
		Disk: dk,
		Node: n.Name, Addr: cn.Addr, Argv: argv, Env: env, Dir: wd,
		Netns: cn.NetnsPath, HostsFile: cn.HostsFile, Cgroup: cn.CgroupDir, LimitCgroups: cn.LimitCgroups,
		Stdout: out, Stderr: errf,
		// Pids the node sees are then the same in every run (replay).
		PIDNamespace: true,
		Init:         n.Init,
		ClockOffset:  t.skew[n.Name],
		// The host is read-only to a node but for the trial's directory
		// (its {{tmp}}, and {{trialdir}} where clients write histories).
		Sandbox: sb,
	}, nil
}

// outputFiles are a node's stdout and stderr files: opened (and capped)
// before any node starts (runTrial), and the same open files at each of
// its starts.
func (t *Trial) outputFiles(node string) (out, errf *os.File, err error) {
	if fs, ok := t.outputs[node]; ok {
		return fs[0], fs[1], nil
	}
	if out, err = t.dir.output(node + ".out"); err != nil {
		return nil, nil, err
	}
	if errf, err = t.dir.output(node + ".err"); err != nil {
		out.Close()
		return nil, nil, err
	}
	t.outputs[node] = [2]*os.File{out, errf}
	lim := t.j.limits.nodes[node]
	t.outCaps.add(out, node, "stdout", lim.output)
	t.outCaps.add(errf, node, "stderr", lim.output)
	return out, errf, nil
}

func (t *Trial) set(k OutcomeKind, node, format string, args ...any) {
	t.outcome = &Outcome{Kind: k, Node: node, Detail: fmt.Sprintf(format, args...)}
	if len(t.timed) > 0 {
		t.res.TimedEnd = append(t.res.TimedEnd, t.takeTimed()...)
	}
}

// broke ends the trial on a never property a node's line matched.
func (t *Trial) broke(br *brokenProperty) {
	t.set(PropertyViolated, br.node, "%s", br)
	t.outcome.Property = br.prop.Name
}

// exitText words a node's first process's end as a failure (see
// job.exitText).
func (t *Trial) exitText(e tracer.Exit) string {
	return t.j.exitText(t.role(e.Node), exitDesc{node: e.Node, lpid: e.LPID, text: e.String(), signal: e.Signal}, t.j.limitsSince(t.limitBase, e.Node))
}

// stop ends the trial with an outcome.
func (t *Trial) stop(k OutcomeKind, node, format string, args ...any) (tracer.Action, error) {
	t.set(k, node, format, args...)
	return tracer.Action{Stop: true}, nil
}

func (t *Trial) role(node string) spec.Role {
	if n := t.spec.Node(node); n != nil {
		return n.Role
	}
	return spec.RoleServer
}

func (t *Trial) nodeOf(a netip.Addr) string { return t.nodes[a] }

// Released records the op the last action released, with its result.
func (t *Trial) Released(id uint64, r tracer.Released) {
	if t.pending == nil || t.pending.ID != id {
		return
	}
	t.res.Records = append(t.res.Records, sched.Record{
		Step: t.steps, VTime: int64(t.clk.Now()), Op: *t.pending,
		Result: r.Result, Causes: r.Causes, Data: r.Data, Immediate: t.imm,
		Timed: t.takeTimed(),
	})
	t.markFork()
	if r.Completes != 0 {
		// A delivery read by a recv released earlier (MSG_WAITALL), the
		// last one of its kind on its connection, so a recent record.
		for i := len(t.res.Records) - 2; i >= 0; i-- {
			if rec := &t.res.Records[i]; rec.Op.ID == r.Completes {
				rec.Causes = append(rec.Causes, id)
				break
			}
		}
	}
	t.timing.released(t.pending)
	t.pending = nil
	if tick := t.spec.Time.Tick; tick > 0 {
		t.clk.AdvanceTo(t.clk.Now() + tick)
	}
}

// Launched learns whether a node the last action started did start.
func (t *Trial) Launched(node string, _ int, d time.Duration, err error) {
	t.res.Launch += d
	if err != nil && t.outcome == nil {
		t.set(Error, node, "starting node %s: %v", node, err)
	}
}

// launch is the action that starts a node.
func (t *Trial) launch(n spec.Node) (tracer.Action, error) {
	cfg, err := t.launchConfig(n)
	if err != nil {
		return t.stop(Error, n.Name, "starting node %s: %v", n.Name, err)
	}
	return tracer.Action{Launch: cfg}, nil
}

// record adds a decision that released no traced op (a delay, a fault).
func (t *Trial) record(op sched.Op, auto bool) {
	t.steps++
	t.live.step(&op, t.clk.Now())
	t.res.Records = append(t.res.Records, sched.Record{Step: t.steps, VTime: int64(t.clk.Now()), Op: op, Auto: auto, Timed: t.takeTimed()})
	if !auto {
		t.markFork()
	}
}

// takeTimed returns the real-time points since the last record.
func (t *Trial) takeTimed() []string {
	n := t.timed
	t.timed = nil
	return n
}

// markFork writes a fork made at the decision under way on its op's
// record, the last one: a replay forks where that record is decided.
func (t *Trial) markFork() {
	if t.forked != nil {
		t.res.Records[len(t.res.Records)-1].Fork = t.forked
		t.forked = nil
	}
}

// fork draws the trial's faults and delays from seed from now on
// (sched.Forker): an exploring campaign's branch leaves its parent's run
// here, and the record of the op released at this decision says so.
func (t *Trial) fork(seed int64) {
	t.forked = &seed
	t.faults.Reseed(seed)
	t.timing.reseed(seed)
}

// applyFault carries out a fault's effect by its mechanism (e.Act): that
// mechanism's applier (faultAppliers), or nothing for a kind the injector
// carries out alone (a hold or a slow link holds deliveries back through
// Holds).
func (t *Trial) applyFault(e faults.Effect) (tracer.Action, error) {
	if apply := faultAppliers[e.Act]; apply != nil {
		return apply(t, e)
	}
	return tracer.Action{}, nil
}

// targets are what a reset or a drop fault may hit now: the connected
// sockets and the datagrams in flight. Pending ops are in ID order, so the
// datagrams are too.
func (t *Trial) targets(st *tracer.State) faults.Targets {
	var tg faults.Targets
	for _, s := range st.Socks { // empty unless the plan has resets or groups that follow
		tg.Socks = append(tg.Socks, faults.Sock{Node: s.Node, Object: s.Object, Conn: s.Conn})
	}
	if t.spec.Faults.Follow {
		tg.Peers = t.peers(st.Socks)
	}
	tg.DataFiles = t.dataFiles()
	if !t.drops && !t.holds {
		return tg // no walk of the pending ops at every step
	}
	for _, o := range st.Pending {
		if t.holds && o.Kind == sched.Deliver && o.Conn != "" && !slices.ContainsFunc(tg.Conns, func(c faults.Conn) bool { return c.Conn == o.Conn }) {
			tg.Conns = append(tg.Conns, faults.Conn{From: o.Node, To: t.nodeOf(addrOf(o.Peer)), Conn: o.Conn})
		}
		if t.drops && o.Kind == sched.Deliver && o.Syscall == tracer.DatagramSyscall {
			tg.Datagrams = append(tg.Datagrams, faults.Datagram{ID: o.ID, From: o.Node, To: t.nodeOf(addrOf(o.Peer)), Conn: o.Conn, Msg: o.Msg, Bytes: o.Bytes})
		}
	}
	return tg
}

// addrOf is the address of "ip:port", the zero Addr when it is not one.
func addrOf(s string) netip.Addr {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

// nodeAddrs are the nodes' addresses.
func (t *Trial) nodeAddrs(nodes []string) []netip.Addr {
	var out []netip.Addr
	for _, n := range nodes {
		if a, ok := t.addrs[n]; ok {
			out = append(out, a)
		}
	}
	return out
}

// Step decides what happens at a quiescent point.
func (t *Trial) Step(st *tracer.State) (tracer.Action, error) {
	t.timed = append(t.timed, st.Timed...)
	if a, done, err := t.outcomeOrStart(st); done || err != nil {
		return a, err
	}
	now := t.clk.Now()
	choices, ready, a, err := t.choices(st, now)
	if choices == nil || err != nil {
		return a, err
	}
	if a, wait := t.awaitRecorded(choices); wait {
		return a, nil
	}
	i, err := t.p.strategy.Next(choices)
	if err != nil {
		return t.stop(Diverged, "", "%v", err)
	}
	return t.apply(choices[i], ready, now)
}

// outcomeOrStart is a step's first phase: what ends the trial (a failed
// launch, a broken property, a node's or client's exit, the clients done, a
// limit) or starts a node (a restart, a start that is due). done says the
// step is decided.
func (t *Trial) outcomeOrStart(st *tracer.State) (tracer.Action, bool, error) {
	if t.outcome != nil { // a launch failed
		return tracer.Action{Stop: true}, true, nil
	}
	if a, stop, err := t.finishCut(); stop || err != nil {
		return a, true, err
	}
	// What the servers themselves said since the last decision, before
	// what a client made of it.
	if br, err := t.props.scan(len(t.res.Records)); err != nil {
		return tracer.Action{}, true, err
	} else if br != nil {
		t.broke(br)
		return tracer.Action{Stop: true}, true, nil
	}
	t.exits(st.Exits)
	if t.outcome != nil {
		return tracer.Action{Stop: true}, true, nil
	}
	if len(t.restarts) > 0 {
		n := *t.spec.Node(t.restarts[0])
		t.restarts = t.restarts[1:]
		a, err := t.launch(n)
		return a, true, err
	}
	if len(t.clients) == 0 && t.starts.empty() {
		switch t.owed(st) {
		case owedNone:
			a, err := t.stop(Pass, "", "")
			return a, true, err
		case owedSoon:
			return tracer.Action{Wait: time.Millisecond}, true, nil
		}
	}
	if a, done, err := t.limits(st); done || err != nil {
		return a, true, err
	}
	if !t.starts.empty() {
		if err := t.starts.refresh(); err != nil {
			a, err := t.stop(Error, "", "%v", err)
			return a, true, err
		}
		if n, ok := t.starts.due(t.clk.Now()); ok {
			t.starts.take(n.Name)
			a, err := t.launch(n)
			return a, true, err
		}
	}
	if t.steps >= t.spec.Limits.Steps {
		a, err := t.stop(StepLimit, "", "step limit %d reached", t.spec.Limits.Steps)
		return a, true, err
	}
	return tracer.Action{}, false, nil
}

// exits sets the outcome a root process's exit makes: a client's failure,
// a node's crash (not an injected one); a client that exited well is done.
func (t *Trial) exits(exits []tracer.Exit) {
	for _, e := range exits {
		if !e.Root {
			continue
		}
		failed := e.Signal != 0 || e.Code != 0
		switch {
		case t.faults != nil && t.faults.Crashed(e.Node):
			// The injected crash, not a bug.
		case !failed && e.Took > 0 && t.role(e.Node) != spec.RoleClient:
			// Natively the processes would have lived on: the sandbox,
			// not the system, ended them.
			others := "its other process"
			if e.Took > 1 {
				others = fmt.Sprintf("its %d other processes", e.Took)
			}
			t.set(Error, e.Node, "%s exited with code 0, and the kernel killed %s with it: a node runs as pid 1 of a PID namespace of its own, as in a container, so a command that starts its server in the background and returns (`&`, a daemonize option, a `start` script) ends the server with it; run it in the foreground, or give the node init: true (docs/spec.md, \"Daemons\")", e.LPID, others)
		case t.role(e.Node) == spec.RoleClient && failed:
			t.set(ClientFailed, e.Node, "%s", t.exitText(e))
		case t.role(e.Node) == spec.RoleClient:
			delete(t.clients, e.Node)
		case failed:
			t.set(NodeCrashed, e.Node, "%s", t.exitText(e))
		}
	}
}

// limits ends the trial at its real-time limit, a livelock or threads
// that keep running without reaching a gated syscall.
func (t *Trial) limits(st *tracer.State) (tracer.Action, bool, error) {
	if time.Now().After(t.realLimit) {
		if t.live.still >= livelockRealSteps && cycle(t.live.ring) != nil {
			// Ops flowed to the end, repeating one cycle: the system was
			// busy going round, lockstep was not stuck. A long burst that
			// repeats nothing (a legitimate one on a slow machine) stays
			// lockstep's error: raising the limit would let it finish.
			a, err := t.stop(Livelock, "", "real-time limit %v reached: %s", t.spec.Limits.RealTime, t.live.describe())
			return a, true, err
		}
		a, err := t.stop(Error, "", "real-time limit %v reached at step %d (raise limits.real_time)", t.spec.Limits.RealTime, t.steps)
		return a, true, err
	}
	if n := t.spec.Limits.LivelockSteps; n > 0 && t.live.still >= n {
		a, err := t.stop(Livelock, "", "%s (limits.livelock_steps)", t.live.describe())
		return a, true, err
	}
	if len(st.Spinning) == 0 {
		t.spinning = 0
		return tracer.Action{}, false, nil
	}
	if t.spinning++; t.spinning >= 3 {
		a, err := t.stop(Livelock, "", "%s kept running without reaching a gated syscall", strings.Join(st.Spinning, ", "))
		return a, true, err
	}
	return tracer.Action{}, false, nil
}

// A replay's debt to a run whose clients are done (owed).
const (
	owedNone = iota // the run ends
	owedNow         // the next decision is offered: the step makes it
	owedSoon        // settle again: a process may reach it yet
)

// owed says what a replay still owes a run whose clients are done
// (sched.Ender): the recorded run released its next decision before it
// saw their exits, so this one does too before it ends. One not offered
// yet is waited for as a missing op is (replayMissWait): a child's last
// poll comes once its parent has exited.
func (t *Trial) owed(st *tracer.State) int {
	e, ok := t.p.strategy.(sched.Ender)
	if !ok {
		return owedNone
	}
	switch left, here := e.Owes(st.Enabled); {
	case here:
		return owedNow
	case !left:
		return owedNone
	}
	if t.endOwedSince.IsZero() {
		t.endOwedSince = time.Now()
	}
	if time.Since(t.endOwedSince) < replayMissWait {
		return owedSoon
	}
	return owedNone
}

// choices are what the strategy chooses among at now: the ready ops (not
// delayed, not held by a fault), the advance and the fault offers, and the
// ops an Extender makes up; ready alone as well. Nil choices: the step was
// decided here (the quiet period begins, or nothing can run and the clock
// moves), with its action.
func (t *Trial) choices(st *tracer.State, now time.Duration) (choices, ready []*sched.Op, a tracer.Action, err error) {
	if c, ok := t.p.strategy.(sched.Clocked); ok {
		c.Clock(now) // before a lull's fault is declined
	}
	// The placers count the steps since their windows opened.
	t.timing.observe(now, t.steps)
	t.faults.Observe(now, t.steps)
	if t.faults != nil && t.faults.Quiet(now) {
		a, err := t.quiet()
		return nil, nil, a, err
	}
	ready = t.timing.ready(st.Pending, st.Enabled, now)
	if t.faults != nil {
		kept := ready[:0:0]
		for _, o := range ready {
			if !t.faults.Holds(o, now, t.nodeOf) {
				kept = append(kept, o)
			}
		}
		ready = kept
	}
	var fs []*sched.Op
	if t.faults != nil && (len(ready) > 0 || t.faults.Spread() || t.faults.Armed()) {
		// (Not in a lull without spread: the offer's draws, and so the
		// schedule, stay those of eager placement. An armed drop's datagram
		// waits for its drop, lull or not.)
		fs = t.faults.Offer(now, t.targets(st))
	}
	if len(ready) == 0 {
		// In a lull, a spread injection whose trigger the clock reached is
		// taken there; anything else waits for ops to run beside.
		next, wakes := t.nextWake(st)
		inj := t.faults.InLull(fs, next, wakes)
		if d, ok := t.p.strategy.(sched.Decliner); ok && inj != nil && d.Declines(inj) {
			inj = nil // explain's default order: no fault of its own
		}
		if inj == nil {
			a, err := t.wait(st)
			return nil, nil, a, err
		}
		fs = []*sched.Op{inj}
	}
	t.graceSpent = 0
	choices = ready
	if adv := t.timing.advance(ready, st.Queue.List, now); adv != nil {
		choices = append(ready[:len(ready):len(ready)], adv)
	}
	if len(fs) > 0 {
		choices = append(choices[:len(choices):len(choices)], fs...)
	}
	if x, ok := t.p.strategy.(sched.Extender); ok {
		// explain's forced decisions: an advance or fault the offers above
		// did not draw (see sched.Forced).
		for _, o := range x.Extra(now, choices) {
			if !o.Kind.IsFault() || t.faults != nil {
				choices = append(choices[:len(choices):len(choices)], o)
			}
		}
	}
	return choices, ready, tracer.Action{}, nil
}

// awaitRecorded settles again, for a strategy that forces a recorded run
// (sched.Awaiter), rather than decide too early: while its records have
// ended but the run has not yet reported the outcome they ended with, and
// while the op it must release next is not offered yet.
func (t *Trial) awaitRecorded(choices []*sched.Op) (tracer.Action, bool) {
	aw, ok := t.p.strategy.(sched.Awaiter)
	if !ok {
		return tracer.Action{}, false
	}
	if aw.Done() {
		if t.endSince.IsZero() {
			t.endSince = time.Now()
		}
		if time.Since(t.endSince) < replayEndWait {
			// The trace ended here with an outcome: a process exit or a
			// failure that this run has not reported yet (a panicking Go
			// thread can look quiescent while it waits for a lock on its
			// way out). Settle again rather than call it a divergence.
			return tracer.Action{Wait: time.Millisecond}, true
		}
	}
	if !aw.Ready(choices) {
		if t.missSince.IsZero() {
			t.missSince = time.Now()
		}
		if time.Since(t.missSince) < replayMissWait {
			// The recorded op is not here yet: on a loaded machine a
			// thread found starved may still reach it. Settle again (a
			// quiescent state settles at once) before calling the run
			// diverged.
			return tracer.Action{Wait: time.Millisecond}, true
		}
	}
	t.missSince = time.Time{}
	return tracer.Action{}, false
}

// apply carries out the chosen op: an advance holds the ready ops, a
// fault is applied, a program's op is released.
func (t *Trial) apply(op *sched.Op, ready []*sched.Op, now time.Duration) (tracer.Action, error) {
	switch {
	case op.Kind == sched.Advance:
		t.timing.chose(op, ready)
		t.record(*op, false)
		t.res.Records[len(t.res.Records)-1].Trigger = t.timing.trigger
		return tracer.Action{}, nil
	case op.Kind.IsFault():
		e, err := t.faults.Chose(op, now)
		if err != nil {
			return tracer.Action{}, err
		}
		if d := t.aimDiverged(op); d != "" {
			return t.stop(Diverged, "", "diverged at step %d: %s (%v)", len(t.res.Records)+1, d, op)
		}
		rec := *op
		if op.Kind == faults.Partition {
			// For show: the whole side cut off (a group), as its heal names it.
			rec.Peer = strings.Join(e.Cut, ",")
		}
		t.record(rec, false)
		t.res.Records[len(t.res.Records)-1].Trigger = t.faults.Trigger()
		return t.applyFault(e)
	}
	t.pending = op
	t.imm = t.p.immediate != nil && t.p.immediate()
	t.steps++
	t.live.step(op, now)
	return tracer.Action{Release: op.ID}, nil
}

// wait moves the clock when nothing can run: to the next deadline, or ends
// the trial when there is none (deadlock) or it lies past the limit.
func (t *Trial) wait(st *tracer.State) (tracer.Action, error) {
	next, ok := t.nextWake(st)
	if !ok {
		// Nothing can run and nothing will wake: a deadlock, unless a
		// thread is still on its way to a gated syscall (starting, or
		// runnable on a loaded machine) or asleep in the kernel where
		// something lockstep does not track may wake it. Watch it for the
		// grace period, settling again with doubling pauses, before saying
		// so; when lockstep itself holds every thread nothing can change.
		if !st.AllHeld && t.graceSpent < t.spec.Limits.DeadlockGrace {
			pause := min(max(t.graceSpent, time.Millisecond), t.spec.Limits.DeadlockGrace-t.graceSpent)
			t.graceSpent += pause
			return tracer.Action{Wait: pause}, nil
		}
		if len(st.Unsettled) > 0 {
			// Some thread may still be on its way: lockstep cannot tell a
			// deadlock from a machine too busy to run it.
			return t.stop(Error, "", "no deadlock verdict: nothing enabled and no deadline, but after the %v grace period these threads were not known to be blocked: %s",
				t.spec.Limits.DeadlockGrace, strings.Join(st.Unsettled, "; "))
		}
		why := fmt.Sprintf("threads still blocked after the %v grace period", t.spec.Limits.DeadlockGrace)
		if st.AllHeld {
			why = "every thread is stopped by lockstep"
		}
		if node, m := t.starts.misdeclared(); m != "" {
			return t.stop(Error, node, "nothing enabled and no deadline; %s; blocked: %s", m, describeOps(st.Pending))
		}
		if w := t.starts.describe(); w != "" {
			return t.stop(Deadlock, "", "nothing enabled and no deadline; %s; %s; blocked: %s", w, why, describeOps(st.Pending))
		}
		return t.stop(Deadlock, "", "nothing enabled and no deadline; %s; blocked: %s", why, describeOps(st.Pending))
	}
	if next > t.spec.Limits.VirtualTime {
		t.clk.AdvanceTo(t.spec.Limits.VirtualTime)
		return t.stop(VTimeLimit, "", "virtual time limit %v reached; blocked: %s", t.spec.Limits.VirtualTime, describeOps(st.Pending))
	}
	t.clk.AdvanceTo(next)
	t.graceSpent = 0
	return tracer.Action{}, nil
}

// nextWake is the virtual time the clock moves to when nothing can run:
// the earliest deadline of the tracer's one queue, which holds the trial's
// own wakes beside the tracer's deadlines (see wakes).
func (t *Trial) nextWake(st *tracer.State) (time.Duration, bool) {
	// The deadlines of held ops passed already (they were enabled); their
	// holds end at holdEnd. Any other passed deadline is a timed wait the
	// next settle wakes.
	return st.Queue.Next(st.Enabled)
}

// wakes are the trial's own virtual deadlines, queued in the tracer's one
// deadline queue (tracer.Options.Wakes) rather than merged here: the next
// node start, the end of a delay hold, the fault plan's next trigger or
// end of a pause, hold or slow link. Each is read from its owner's state
// whenever the queue is read, so none goes stale. The start wakes are
// listed (st.Queue.List), for the advance offer.
func (t *Trial) wakes() []tracer.Wake {
	return append(t.starts.wakes(),
		tracer.Wake{Next: func() (tracer.Deadline, bool) {
			end, ok := t.timing.holdEnd(t.clk.Now())
			return tracer.Deadline{At: end, What: "delay hold end"}, ok
		}},
		tracer.Wake{Next: func() (tracer.Deadline, bool) {
			if t.faults == nil {
				return tracer.Deadline{}, false
			}
			at, ok := t.faults.Deadline(t.clk.Now())
			return tracer.Deadline{At: at, What: "fault deadline"}, ok
		}},
	)
}

// quiet begins the fault plan's quiet period: heal, restart the crashed,
// set wall clocks back, no more faults. The recoveries are recorded as
// lockstep's own (Auto); their effects on the tracer go in one action.
func (t *Trial) quiet() (tracer.Action, error) {
	var all tracer.Action
	for _, e := range t.faults.Recover() {
		op := sched.Op{Node: e.Node, LPID: "fault", Kind: e.Kind, Object: "node:" + e.Node, Delay: int64(e.Shift) + e.Drift}
		t.record(op, true)
		a, err := t.applyFault(e)
		if err != nil || a.Stop {
			return a, err
		}
		for node, d := range a.Clocks {
			if all.Clocks == nil {
				all.Clocks = map[string]time.Duration{}
			}
			all.Clocks[node] += d
		}
		for node, ppm := range a.Drifts {
			if all.Drifts == nil {
				all.Drifts = map[string]int64{}
			}
			all.Drifts[node] = ppm
		}
		all.Cuts = append(all.Cuts, a.Cuts...)
	}
	return all, nil
}

// dumpThreads writes the tracees' states to threads.txt in the trial's
// directory; a failure to is logged, not the trial's.
func (j *job) dumpThreads(tr *tracer.Tracer, tf *trialFiles) {
	var b bytes.Buffer
	if err := tr.DumpThreads(&b); err != nil {
		j.log.Debug("dumping thread states", "err", err)
		return
	}
	if _, err := tf.writeFile("threads.txt", b.Bytes()); err != nil {
		j.log.Warn("writing thread states", "err", err)
	}
}

// finish tears the trial down, runs the checker and writes the trace.
func (j *job) finish(ctx context.Context, tr *tracer.Tracer, res *TrialResult, p trialParams, clk *vclock.Clock, start time.Time, t *Trial) (*TrialResult, error) {
	res.Stats = tr.Stats()
	switch res.Outcome.Kind {
	case Deadlock, VTimeLimit, StepLimit, Livelock, Error, Diverged:
		// Where every thread was when the trial stopped making progress,
		// or where a replay parted from its trace: whether it was the
		// system's stall or one of lockstep's shows here (see
		// tracer.DumpThreads).
		j.dumpThreads(tr, t.dir)
	}
	t0 := time.Now()
	if err := tr.KillAll(); err != nil {
		return nil, err
	}
	tr.Close()
	res.Teardown = time.Since(t0)
	res.NodesCPU += j.nodesCPU()
	// The nodes are gone: their output is final, their limits' counters too.
	t.outCaps.close()
	if err := t.finalProperties(res); err != nil {
		return nil, err
	}
	notes := j.limitNotes(t.limitBase, t.outCaps, oomTold(res.Outcome))
	if note := readOnlyNote(res); note != "" {
		notes = append(notes, note)
	}
	if len(notes) > 0 {
		if res.Outcome.Kind == Pass {
			j.log.Warn("nodes reached their limits in a passing trial", "trial", res.Index, "limits", strings.Join(notes, "; "))
		} else {
			res.Outcome.Detail = withNotes(res.Outcome.Detail, notes)
		}
	}
	if j.track != nil {
		evs, dropped, err := j.track.take(j)
		switch {
		case err != nil:
			return nil, fmt.Errorf("reading connection records: %w", err)
		case dropped:
			// lockstep's own accounting stands for this trial.
			j.log.Warn("the kernel dropped connection records (its ring was full); lockstep's accounting stands", "trial", res.Index)
		default:
			var detail string
			res.Conntrack, detail = joinConntrackDetail(res.Records, evs, os.Getpid())
			if detail != "" {
				// Rare and timing's: what the first disagreement's
				// connection held is kept to be looked into.
				if _, err := t.dir.writeFile("conntrack.txt", []byte(detail)); err != nil {
					j.log.Warn("writing conntrack.txt", "err", err)
				}
			}
		}
		if res.Conntrack.Disagreed > 0 {
			j.log.Warn("kernel records and lockstep's accounting differ", "trial", res.Index, "recvs", res.Conntrack.Recvs, "differ", res.Conntrack.Disagreed, "first", res.Conntrack.First, "detail", "conntrack.txt")
		}
	}
	t0 = time.Now()
	if err := j.cluster.Reset(ctx); err != nil {
		return nil, fmt.Errorf("resetting the network after trial %d: %w", res.Index, err)
	}
	res.Reset = time.Since(t0)
	if res.Outcome.Kind == Pass && len(j.spec.Checker.Command) > 0 {
		if err := j.runChecker(ctx, res, t.dir); err != nil {
			res.Outcome.Kind = CheckerFailed
			res.Outcome.Detail = err.Error()
		}
	}
	if err := checkTrialHistory(ctx, j.spec, j.spec.Checker.Model, res, t.dir, j.log); err != nil {
		return nil, err
	}
	if res.Outcome.Kind != Pass || p.traceAll {
		f, err := t.dir.create("trace.jsonl")
		if err != nil {
			return nil, fmt.Errorf("writing trace: %w", err)
		}
		// Where it went is part of the outcome the trace holds.
		res.Outcome.Detail = withNotes(res.Outcome.Detail, t.dir.notes)
		if err := writeTrace(f, j.spec, res, p, clk); err != nil {
			return nil, fmt.Errorf("writing trace %s: %w", f.Name(), err)
		}
		res.TracePath = f.Name()
	} else {
		res.Outcome.Detail = withNotes(res.Outcome.Detail, t.dir.notes)
	}
	// Everything that reads the nodes' files is done.
	keep := (res.Outcome.Kind != Pass || p.keepTmp) && !p.dropTmp
	if keep {
		why, err := t.tmps.noRoom()
		if err != nil {
			j.log.Warn("measuring the nodes' {{tmp}} directories", "trial", res.Index, "err", err)
		}
		if why != "" {
			keep, res.TmpNotKept = false, why
			j.log.Warn("not keeping the nodes' {{tmp}} directories", "trial", res.Index, "why", why)
		}
	}
	if err := t.tmps.release(keep); err != nil {
		j.log.Warn("releasing the nodes' {{tmp}} directories", "trial", res.Index, "err", err)
	}
	res.Duration = time.Since(start)
	return res, nil
}

func (j *job) runChecker(ctx context.Context, res *TrialResult, tf *trialFiles) error {
	argv, err := j.spec.ExpandChecker(spec.TemplateVars{TrialDir: res.Dir, NodeDir: res.Dir, Seed: res.Seed, Addrs: map[string]netip.Addr{}})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, j.spec.Checker.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = res.Dir
	out, err := cmd.CombinedOutput()
	if _, werr := tf.writeFile("checker.out", out); werr != nil {
		j.log.Warn("writing the checker's output", "err", werr)
	}
	if err != nil {
		what := checkerEnd(filepath.Base(argv[0]), err, ctx.Err(), j.spec.Checker.Timeout)
		if last := lastLine(out); last != "" {
			return fmt.Errorf("%s: %s", what, last)
		}
		return errors.New(what)
	}
	return nil
}

// checkerEnd words how a checker failed as a clause: "checker check.sh
// exited with code 1", "... did not finish within its 30s timeout".
func checkerEnd(name string, err, ctxErr error, timeout time.Duration) string {
	var ee *exec.ExitError
	switch {
	case errors.Is(ctxErr, context.DeadlineExceeded):
		return fmt.Sprintf("checker %s did not finish within its %v timeout (checker.timeout)", name, timeout)
	case errors.As(err, &ee):
		return "checker " + nativeExit(name, ee.ProcessState, nil).text
	}
	return fmt.Sprintf("checker %s could not run: %v", name, err)
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
