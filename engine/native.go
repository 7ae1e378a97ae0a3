package engine

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lockstep-dev/lockstep/netns"
	"github.com/lockstep-dev/lockstep/spec"
	"golang.org/x/sys/unix"
)

// Hang is a native trial's clients still running when its time limit
// passed: the nearest a plain run comes to lockstep's deadlock verdict.
const Hang OutcomeKind = "hang"

// runNative runs one trial the way a user would without lockstep: the same
// namespaces, host names, cgroups and commands, but no tracer, real time
// and the kernel's own scheduling. It gives the baseline hit ratio.
func (j *job) runNative(ctx context.Context, index int, seed int64, limit time.Duration) (*TrialResult, error) {
	for i, n := range j.spec.Nodes {
		if n.Image != nil {
			return nil, fmt.Errorf("nodes[%d].image: a native run starts host programs; node %s runs from an image", i, n.Name)
		}
	}
	nt, err := j.openNative(index, seed, limit)
	if err != nil {
		return nil, err
	}
	defer nt.close()
	v, clients, err := nt.startNodes(ctx)
	if err != nil {
		return nil, err
	}
	if v == nil {
		// Every node started: their exits are collected once the trial
		// is over (finish's Reset killed the rest).
		defer nt.collectExits()
		if v, err = nt.waitClients(ctx, clients); err != nil {
			return nil, err
		}
	}
	return nt.finish(ctx, v)
}

// nativeTrial is a native trial under way.
type nativeTrial struct {
	j     *job
	index int
	seed  int64
	limit time.Duration
	start time.Time
	res   *TrialResult
	tf    *trialFiles
	addrs map[string]netip.Addr
	// base are the nodes' limit events before the trial, caps the watch
	// of their output: the same limits as under lockstep (see limits.go).
	base map[string]netns.LimitEvents
	caps *outputCaps
	// files are the nodes' cgroup directories and output files, open
	// until the trial's end.
	files []*os.File
	// exits reports the nodes' exits; running counts those not yet
	// received, once every node started.
	exits    chan nativeExitOf
	running  int
	deadline *time.Timer
	// ready holds the nodes found listening on their ready port.
	ready map[string]bool
}

// nativeExitOf is a native node's exit, as its waiting goroutine saw it.
type nativeExitOf struct {
	node  string
	state *os.ProcessState
	err   error
}

// nativeVerdict is how a native trial ended, before the checks that
// follow (finish).
type nativeVerdict struct {
	kind   OutcomeKind
	node   string
	detail string
}

func verdictf(k OutcomeKind, node, format string, args ...any) *nativeVerdict {
	return &nativeVerdict{kind: k, node: node, detail: fmt.Sprintf(format, args...)}
}

// openNative makes the trial's directory and opens its files; the time
// limit runs from here.
func (j *job) openNative(index int, seed int64, limit time.Duration) (*nativeTrial, error) {
	nt := &nativeTrial{j: j, index: index, seed: seed, limit: limit, start: time.Now()}
	nt.res = &TrialResult{Index: index, Seed: seed}
	nt.res.Dir = trialDir(j.outDir, index)
	if err := clearTrial(nt.res.Dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(nt.res.Dir, 0o755); err != nil {
		return nil, err
	}
	tf, err := openTrialFiles(nt.res.Dir)
	if err != nil {
		return nil, err
	}
	nt.tf = tf
	nt.addrs = map[string]netip.Addr{}
	for _, n := range j.spec.Nodes {
		nt.addrs[n.Name] = j.cluster.Node(n.Name).Addr
	}
	nt.exits = make(chan nativeExitOf, len(j.spec.Nodes))
	nt.base = j.limitEvents()
	nt.caps = newOutputCaps(nil) // a native node's /tmp is the host's
	nt.deadline = time.NewTimer(limit)
	nt.ready = map[string]bool{}
	return nt, nil
}

// close releases what the trial holds, its processes gone.
func (nt *nativeTrial) close() {
	nt.deadline.Stop()
	nt.caps.close()
	for _, f := range nt.files {
		f.Close()
	}
	nt.tf.close()
}

// startNodes starts the nodes in the spec's order. It returns a verdict
// when the trial ended before they all started, else the number of
// clients started.
func (nt *nativeTrial) startNodes(ctx context.Context) (*nativeVerdict, int, error) {
	nodes := nt.j.spec.Nodes
	clients := 0
	for i := range nodes {
		n := &nodes[i]
		if v, err := nt.awaitReady(ctx, nodes[:i]); v != nil || err != nil {
			return v, 0, err
		}
		if n.StartDelay > 0 {
			select {
			case <-time.After(n.StartDelay):
			case <-ctx.Done():
				return nil, 0, ctx.Err()
			}
		}
		if v, err := nt.startNode(n); v != nil || err != nil {
			return v, 0, err
		}
		if n.Role == spec.RoleClient {
			clients++
		}
	}
	nt.running = len(nodes)
	return nil, clients, nil
}

// awaitReady waits until the nodes before the next one (prev) that have
// a readiness condition meet it, as they do under lockstep.
func (nt *nativeTrial) awaitReady(ctx context.Context, prev []spec.Node) (*nativeVerdict, error) {
	for _, p := range prev {
		if p.ReadyPort == 0 || nt.ready[p.Name] {
			continue
		}
		if err := waitListening(ctx, nt.j.cluster.Node(p.Name), p.ReadyPort, nt.deadline.C); err != nil {
			if errors.Is(err, errNotReady) {
				return verdictf(Hang, p.Name, "node %s did not listen on port %d within %v", p.Name, p.ReadyPort, nt.limit), nil
			}
			return nil, err
		}
		nt.ready[p.Name] = true
	}
	return nil, nil
}

// startNode starts node n's command in its network namespace and cgroup,
// its output into the trial's directory, and a goroutine that reports its
// exit.
func (nt *nativeTrial) startNode(n *spec.Node) (*nativeVerdict, error) {
	j, res := nt.j, nt.res
	nodeDir := filepath.Join(res.Dir, n.Name)
	if err := os.MkdirAll(nodeDir, 0o755); err != nil {
		return nil, err
	}
	argv, env, wd, err := j.spec.Expand(n.Name, spec.TemplateVars{TrialDir: res.Dir, NodeDir: nodeDir, Seed: nt.seed, Addrs: nt.addrs})
	if err != nil {
		return nil, err
	}
	cn := j.cluster.Node(n.Name)
	cg, err := os.Open(cn.CgroupDir)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", n.Name, err)
	}
	nt.files = append(nt.files, cg)
	// Appended to, so that outputCaps can cut them back (see there).
	out, err := nt.tf.output(n.Name + ".out")
	if err != nil {
		return nil, err
	}
	errf, err := nt.tf.output(n.Name + ".err")
	if err != nil {
		out.Close()
		return nil, err
	}
	nt.files = append(nt.files, out, errf)
	lim := j.limits.nodes[n.Name]
	nt.caps.add(out, n.Name, "stdout", lim.output)
	nt.caps.add(errf, n.Name, "stderr", lim.output)
	// ip netns exec enters the namespace and bind-mounts its hosts file,
	// as the tracer's helper does; the child is born in the node's cgroup
	// so Reset kills all it leaves behind.
	// In a UTS namespace of its own whose host name is the node's, with
	// its private directories mounted (in the mount namespace `ip netns
	// exec` makes), as under lockstep: the shell does both, then becomes
	// the command.
	prelude := `printf %s "$0" >/proc/sys/kernel/hostname`
	private, err := privateDirs(nodeDir, n.PrivateDirs)
	if err != nil {
		return nil, err
	}
	for _, p := range private {
		prelude += fmt.Sprintf(" && mount -t overlay overlay -o %s %s", shellQuote("lowerdir="+p.Dir+",upperdir="+p.Upper+",workdir="+p.Work), shellQuote(p.Dir))
	}
	if len(private) > 0 {
		// A working directory in one of them was the host's until now.
		prelude += ` && cd "$(pwd)"`
	}
	cmd := exec.Command("ip", append([]string{"netns", "exec", filepath.Base(cn.NetnsPath),
		"/bin/sh", "-c", prelude + ` && exec "$@"`, n.Name}, argv...)...)
	cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = nodeEnv(env), wd, out, errf
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(cg.Fd()), Pdeathsig: syscall.SIGKILL, Cloneflags: syscall.CLONE_NEWUTS}
	if err := cmd.Start(); err != nil {
		return verdictf(Error, n.Name, "starting node %s: %v", n.Name, err), nil
	}
	// Where the host keeps memory and pids in cgroup v1, the node joins
	// those just after it starts (`ip netns exec` forks nothing before
	// it execs the program).
	for _, cg := range cn.LimitCgroups {
		if err := os.WriteFile(filepath.Join(cg, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0); err != nil {
			return verdictf(Error, n.Name, "moving node %s into cgroup %s: %v", n.Name, cg, err), nil
		}
	}
	go func(name string, init bool) {
		err := cmd.Wait()
		if init && err == nil {
			// Under init: true the command may have left its server in
			// the background, as natively it runs on: the node ends when
			// its cgroup is empty (a Reset empties it at the trial's end).
			err = awaitEmpty(cn.CgroupDir)
			nt.exits <- nativeExitOf{node: name, err: err}
			return
		}
		nt.exits <- nativeExitOf{node: name, state: cmd.ProcessState, err: err}
	}(n.Name, n.Init)
	return nil, nil
}

// waitClients waits until the clients, all started, have exited: a client
// failing, a server exiting, or the time limit passing ends the trial
// first.
func (nt *nativeTrial) waitClients(ctx context.Context, clients int) (*nativeVerdict, error) {
	j := nt.j
	for clients > 0 {
		select {
		case e := <-nt.exits:
			nt.running--
			role := nt.roleOf(e.node)
			failed := e.state == nil || !e.state.Success()
			ed := nativeExit(e.node, e.state, e.err)
			text := j.exitText(role, ed, j.limitsSince(nt.base, e.node))
			switch {
			case role == spec.RoleClient && failed:
				return verdictf(ClientFailed, e.node, "%s", text), nil
			case role == spec.RoleClient:
				clients--
			default:
				return verdictf(NodeCrashed, e.node, "%s", text), nil
			}
		case <-nt.deadline.C:
			return verdictf(Hang, "", "clients still running after %v", nt.limit), nil
		case <-ctx.Done():
			return nil, errors.Join(ctx.Err(), j.cluster.Reset(context.Background()))
		}
	}
	return verdictf(Pass, "", ""), nil
}

// roleOf is the role of the node named name (a server's if none is).
func (nt *nativeTrial) roleOf(name string) spec.Role {
	role := spec.RoleServer
	for _, n := range nt.j.spec.Nodes {
		if n.Name == name {
			role = n.Role
		}
	}
	return role
}

// collectExits waits for the exits of the nodes still running, which
// the network's Reset killed.
func (nt *nativeTrial) collectExits() {
	for ; nt.running > 0; nt.running-- {
		<-nt.exits
	}
}

// finish records the verdict as the trial's outcome once the network is
// reset, with the notes on limits the nodes hit, and runs the checker on
// a pass and the history check.
func (nt *nativeTrial) finish(ctx context.Context, v *nativeVerdict) (*TrialResult, error) {
	j, sp, res := nt.j, nt.j.spec, nt.res
	res.Outcome = Outcome{Kind: v.kind, Node: v.node, Detail: v.detail}
	if err := j.cluster.Reset(ctx); err != nil {
		return nil, fmt.Errorf("resetting the network after trial %d: %w", nt.index, err)
	}
	nt.caps.close()
	if notes := j.limitNotes(nt.base, nt.caps, oomTold(res.Outcome)); len(notes) > 0 && v.kind != Pass {
		res.Outcome.Detail = withNotes(res.Outcome.Detail, notes)
	}
	if res.Outcome.Kind == Pass && len(sp.Checker.Command) > 0 {
		if err := j.runChecker(ctx, res, nt.tf); err != nil {
			res.Outcome.Kind, res.Outcome.Detail = CheckerFailed, err.Error()
		}
	}
	if err := checkTrialHistory(ctx, sp, sp.Checker.Model, res, nt.tf, j.log); err != nil {
		return nil, err
	}
	res.Outcome.Detail = withNotes(res.Outcome.Detail, nt.tf.notes)
	res.Duration = time.Since(nt.start)
	return res, nil
}

// nativeExit words a native node's exit as a clause, as tracer.Exit does:
// "db1 exited with code 1", "db1 was killed by SIGKILL".
func nativeExit(node string, st *os.ProcessState, err error) exitDesc {
	ed := exitDesc{node: node, lpid: node}
	switch {
	case errors.Is(err, errDaemonGone):
		ed.text = fmt.Sprintf("%s: %v (its command had returned, under init: true; natively how it exited is not known)", node, err)
	case st == nil && err != nil:
		ed.text = fmt.Sprintf("%s could not be waited for: %v", node, err)
	case st == nil:
		ed.text = node + " exited"
	default:
		ws, _ := st.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			ed.signal = ws.Signal()
			name := unix.SignalName(ed.signal)
			if name == "" {
				name = fmt.Sprintf("signal %d", int(ed.signal))
			}
			ed.text = fmt.Sprintf("%s was killed by %s", node, name)
		} else {
			ed.text = fmt.Sprintf("%s exited with code %d", node, st.ExitCode())
		}
	}
	return ed
}

var errNotReady = errors.New("not ready in time")

// errDaemonGone is the end of a native node under init: true whose command
// returned: its processes are not lockstep's children, so how the last one
// exited is not known.
var errDaemonGone = errors.New("its last process exited")

// awaitEmpty waits until cgroup dir holds no process, and says so with
// errDaemonGone.
func awaitEmpty(dir string) error {
	for {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
		if err != nil {
			return fmt.Errorf("watching %s for the node's end: %w", dir, err)
		}
		if strings.Contains(string(b), "populated 0") {
			return errDaemonGone
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitListening polls until a socket in the node's namespace listens on
// port.
func waitListening(ctx context.Context, n *netns.Node, port uint16, giveUp <-chan time.Time) error {
	for {
		ok, err := n.Listens(port)
		if err != nil || ok {
			return err
		}
		select {
		case <-time.After(time.Millisecond):
		case <-giveUp:
			return errNotReady
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// shellQuote quotes s for /bin/sh as one word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
