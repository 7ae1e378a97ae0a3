package engine

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/netcut"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/spec"
	"github.com/lockstep-dev/lockstep/tracer"
)

// applyCut is the engine's side of every cut of the network and of its
// heal (a partition, a one-way or link cut, a bipartition): the cut
// between the nodes' addresses, which the tracer puts up or takes down on
// the cluster's firewall (tracer.Options.Firewall) when it is safe to.
func applyCut(t *Trial, e faults.Effect) (tracer.Action, error) {
	c := tracer.Cut{
		Cut:  netcut.Cut[netip.Addr]{A: t.nodeAddrs(e.Cut), B: t.nodeAddrs(e.Rest), OneWay: e.OneWay},
		Heal: e.Act == faults.ActHeal,
	}
	return tracer.Action{Cuts: []tracer.Cut{c}}, nil
}

// probeTimeout bounds the real time a fault's probe may take.
const probeTimeout = 10 * time.Second

// aimer returns what aims a fault with the spec's probe: in a replay (or
// explain's forced runs), the answer the trace recorded for the fault the
// strategy just chose; otherwise the probe itself, run at the moment of
// the injection while every node is stopped.
func (t *Trial) aimer() func(o *sched.Op) (faults.Aiming, error) {
	return func(o *sched.Op) (faults.Aiming, error) {
		if rc, ok := t.p.strategy.(sched.Recaller); ok {
			if rec := rc.Recalled(); rec != nil {
				if !rec.ProbeAimed() || rec.Kind != o.Kind {
					return faults.Aiming{}, fmt.Errorf("the trace records no probe answer for this %v (it recorded %v)", o.Kind, rec)
				}
				return faults.Aiming{Answer: rec.Aim}, nil
			}
			if _, exact := t.p.strategy.(*sched.Replay); exact && !t.replayDone() {
				return faults.Aiming{}, fmt.Errorf("the replay chose a probe-aimed %v the trace does not record", o.Kind)
			}
		}
		ans, err := t.runProbe(o.Kind)
		return faults.Aiming{Answer: ans}, err
	}
}

// replayDone says whether the strategy is a replay whose records have run
// out: what it releases from there is its fallback's.
func (t *Trial) replayDone() bool {
	rp, ok := t.p.strategy.(*sched.Replay)
	return ok && rp.Done()
}

// aimDiverged says how a replay's probe-aimed fault, just chosen, differs
// from the one the trace recorded (sched.AimDiffers), or "": aimed with
// the recorded answer, it must hit the same node and target with the same
// draws, or the replay is another run. Only an exact replay is held to
// it; explain's forced runs take other paths on purpose.
func (t *Trial) aimDiverged(op *sched.Op) string {
	rp, ok := t.p.strategy.(*sched.Replay)
	if !ok || !op.Aimed {
		return ""
	}
	rec := rp.Recalled()
	if rec == nil {
		return ""
	}
	return sched.AimDiffers(rec, op)
}

// runProbe runs the spec's probe in the trial's directory, where the nodes'
// output files are (<node>.out, <node>.err, their {{tmp}} directories),
// and returns the node it names: the first word of its output, a node's
// name or address. Every node is stopped meanwhile, so a probe reads what
// the nodes wrote; one that asked a node over the network would wait for
// an answer that cannot come (and its connection would be an op of the
// node's).
func (t *Trial) runProbe(k sched.Kind) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	argv := t.spec.Faults.Probe
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = t.res.Dir
	var names, addrs []string
	for _, n := range t.spec.Nodes {
		names = append(names, n.Name)
		addrs = append(addrs, n.Name+"="+t.addrs[n.Name].String())
	}
	cmd.Env = append(baseEnv(), "LOCKSTEP_FAULT="+k.String(), "LOCKSTEP_NODES="+strings.Join(names, " "),
		"LOCKSTEP_ADDRS="+strings.Join(addrs, " "), "LOCKSTEP_TRIAL_DIR="+t.res.Dir)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		if last := lastLine(errb.Bytes()); last != "" {
			return "", fmt.Errorf("%v: %s", err, last)
		}
		return "", err
	}
	word := ""
	if f := strings.Fields(out.String()); len(f) > 0 {
		word = f[0]
	}
	if a := addrOf(word + ":0"); a.IsValid() {
		if n := t.nodeOf(a); n != "" {
			return n, nil
		}
	}
	return word, nil
}

// peers are, per node, the nodes its connected TCP sockets lead to, for
// groups that follow their node.
func (t *Trial) peers(socks []tracer.Sock) map[string][]string {
	out := map[string][]string{}
	for _, s := range socks {
		_, peer, _ := strings.Cut(s.Conn, ">")
		if n := t.nodeOf(addrOf(peer)); n != "" && !slices.Contains(out[s.Node], n) {
			out[s.Node] = append(out[s.Node], n)
		}
	}
	return out
}

// matchBytes is how many of each message's first bytes the tracer hands
// the faults (sched.Op.Msg): none unless the spec holds one kind of
// message, or allows holds or slow links, which an exploring campaign's
// branch may aim at one learned kind (sched.Aim; its replays need the
// bytes too), or grays, which let a node's commonest kind through, or
// drops, of one kind (faults.drop.match) or, aimed, of a learned kind. A
// copy of bytes the tracer captures anyway: no schedule changes.
func matchBytes(sp *spec.Spec) int {
	if len(sp.Faults.HoldMatch) > 0 || len(sp.Faults.DropMatch) > 0 {
		return faults.MatchBytes
	}
	for _, k := range []sched.Kind{faults.Hold, faults.Gray, faults.Slow, faults.Drop} {
		if slices.Contains(sp.Faults.Kinds, spec.FaultKind(k)) {
			return faults.MatchBytes
		}
	}
	return 0
}
