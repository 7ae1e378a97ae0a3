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
	sp := j.spec
	for i, n := range sp.Nodes {
		if n.Image != nil {
			return nil, fmt.Errorf("nodes[%d].image: a native run starts host programs; node %s runs from an image", i, n.Name)
		}
	}
	start := time.Now()
	res := &TrialResult{Index: index, Seed: seed}
	res.Dir = trialDir(j.outDir, index)
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
	addrs := map[string]netip.Addr{}
	for _, n := range sp.Nodes {
		addrs[n.Name] = j.cluster.Node(n.Name).Addr
	}
	type exit struct {
		node  string
		state *os.ProcessState
		err   error
	}
	exits := make(chan exit, len(sp.Nodes))
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	// The same limits as under lockstep (see limits.go).
	base := j.limitEvents()
	caps := newOutputCaps(nil) // a native node's /tmp is the host's
	defer caps.close()
	outcome := func(k OutcomeKind, node, format string, args ...any) (*TrialResult, error) {
		res.Outcome = Outcome{Kind: k, Node: node, Detail: fmt.Sprintf(format, args...)}
		if err := j.cluster.Reset(ctx); err != nil {
			return nil, fmt.Errorf("resetting the network after trial %d: %w", index, err)
		}
		caps.close()
		if notes := j.limitNotes(base, caps, oomTold(res.Outcome)); len(notes) > 0 && k != Pass {
			res.Outcome.Detail = withNotes(res.Outcome.Detail, notes)
		}
		if res.Outcome.Kind == Pass && len(sp.Checker.Command) > 0 {
			if err := j.runChecker(ctx, res, tf); err != nil {
				res.Outcome.Kind, res.Outcome.Detail = CheckerFailed, err.Error()
			}
		}
		if err := checkTrialHistory(ctx, sp, sp.Checker.Model, res, tf, j.log); err != nil {
			return nil, err
		}
		res.Outcome.Detail = withNotes(res.Outcome.Detail, tf.notes)
		res.Duration = time.Since(start)
		return res, nil
	}
	clients := 0
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	ready := map[string]bool{}
	for i, n := range sp.Nodes {
		// The nodes before this one that have a readiness condition must
		// meet it first, as they do under lockstep.
		for _, prev := range sp.Nodes[:i] {
			if prev.ReadyPort == 0 || ready[prev.Name] {
				continue
			}
			if err := waitListening(ctx, j.cluster.Node(prev.Name), prev.ReadyPort, deadline.C); err != nil {
				if errors.Is(err, errNotReady) {
					return outcome(Hang, prev.Name, "node %s did not listen on port %d within %v", prev.Name, prev.ReadyPort, limit)
				}
				return nil, err
			}
			ready[prev.Name] = true
		}
		if n.StartDelay > 0 {
			select {
			case <-time.After(n.StartDelay):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		nodeDir := filepath.Join(res.Dir, n.Name)
		if err := os.MkdirAll(nodeDir, 0o755); err != nil {
			return nil, err
		}
		argv, env, wd, err := sp.Expand(n.Name, spec.TemplateVars{TrialDir: res.Dir, NodeDir: nodeDir, Seed: seed, Addrs: addrs})
		if err != nil {
			return nil, err
		}
		cn := j.cluster.Node(n.Name)
		cg, err := os.Open(cn.CgroupDir)
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", n.Name, err)
		}
		files = append(files, cg)
		// Appended to, so that outputCaps can cut them back (see there).
		out, err := tf.output(n.Name + ".out")
		if err != nil {
			return nil, err
		}
		errf, err := tf.output(n.Name + ".err")
		if err != nil {
			out.Close()
			return nil, err
		}
		files = append(files, out, errf)
		lim := j.limits.nodes[n.Name]
		caps.add(out, n.Name, "stdout", lim.output)
		caps.add(errf, n.Name, "stderr", lim.output)
		// ip netns exec enters the namespace and bind-mounts its hosts file,
		// as the tracer's helper does; the child is born in the node's cgroup
		// so Reset kills all it leaves behind.
		cmd := exec.Command("ip", append([]string{"netns", "exec", filepath.Base(cn.NetnsPath)}, argv...)...)
		cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = nodeEnv(env), wd, out, errf
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(cg.Fd()), Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			return outcome(Error, n.Name, "starting node %s: %v", n.Name, err)
		}
		// Where the host keeps memory and pids in cgroup v1, the node joins
		// those just after it starts (`ip netns exec` forks nothing before
		// it execs the program).
		for _, cg := range cn.LimitCgroups {
			if err := os.WriteFile(filepath.Join(cg, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0); err != nil {
				return outcome(Error, n.Name, "moving node %s into cgroup %s: %v", n.Name, cg, err)
			}
		}
		if n.Role == spec.RoleClient {
			clients++
		}
		go func(name string) {
			err := cmd.Wait()
			exits <- exit{node: name, state: cmd.ProcessState, err: err}
		}(n.Name)
	}
	running := len(sp.Nodes)
	defer func() {
		// Reset (in outcome) killed the rest; collect their exits.
		for ; running > 0; running-- {
			<-exits
		}
	}()
	for clients > 0 {
		select {
		case e := <-exits:
			running--
			role := spec.RoleServer
			for _, n := range sp.Nodes {
				if n.Name == e.node {
					role = n.Role
				}
			}
			failed := e.state == nil || !e.state.Success()
			ed := nativeExit(e.node, e.state, e.err)
			text := j.exitText(role, ed, j.limitsSince(base, e.node))
			switch {
			case role == spec.RoleClient && failed:
				return outcome(ClientFailed, e.node, "%s", text)
			case role == spec.RoleClient:
				clients--
			default:
				return outcome(NodeCrashed, e.node, "%s", text)
			}
		case <-deadline.C:
			return outcome(Hang, "", "clients still running after %v", limit)
		case <-ctx.Done():
			return nil, errors.Join(ctx.Err(), j.cluster.Reset(context.Background()))
		}
	}
	return outcome(Pass, "", "")
}

// nativeExit words a native node's exit as a clause, as tracer.Exit does:
// "db1 exited with code 1", "db1 was killed by SIGKILL".
func nativeExit(node string, st *os.ProcessState, err error) exitDesc {
	ed := exitDesc{node: node, lpid: node}
	switch {
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
