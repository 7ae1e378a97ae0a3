package engine

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/spec"
	"github.com/lockstep-dev/lockstep/tracer"
)

// cutAction is the action that puts up, or takes down, a one-way cut, the
// cut of a link or a bipartition: the firewall between e.Cut and e.Rest
// (what Cut sends to Rest only, when e.OneWay), and the tracer's books
// that hold deliveries and FINs in the cut directions.
func (t *Trial) cutAction(e faults.Effect) tracer.Action {
	c := tracer.Cut{A: t.nodeAddrs(e.Cut), B: t.nodeAddrs(e.Rest), OneWay: e.OneWay, Heal: e.Act == faults.ActHeal}
	if c.Heal {
		c.Open = func() error {
			if err := t.j.cluster.Heal(e.Cut, e.Rest); err != nil {
				return fmt.Errorf("healing %v from %v: %w", e.Cut, e.Rest, err)
			}
			return nil
		}
		return tracer.Action{Cuts: []tracer.Cut{c}}
	}
	c.Close = func() error {
		cut := t.j.cluster.Partition
		if e.OneWay {
			cut = t.j.cluster.CutOneWay
		}
		if err := cut(e.Cut, e.Rest); err != nil {
			return fmt.Errorf("cutting %v from %v: %w", e.Cut, e.Rest, err)
		}
		return nil
	}
	return tracer.Action{Cuts: []tracer.Cut{c}}
}

// probeTimeout bounds the real time a fault's probe may take.
const probeTimeout = 10 * time.Second

// aimer returns what aims a fault with the spec's probe: in a replay, the
// answers the trace recorded, in order; otherwise the probe itself, run
// at the moment of the injection while every node is stopped.
func (t *Trial) aimer() func(o *sched.Op) (string, error) {
	if rp, ok := t.p.strategy.(*sched.Replay); ok {
		var answers []string
		for _, r := range rp.Records() {
			if r.Op.LPID == "fault" && r.Op.Object == "probe" && !r.Auto {
				answers = append(answers, r.Op.Aim)
			}
		}
		return func(o *sched.Op) (string, error) {
			if len(answers) == 0 {
				return "", fmt.Errorf("the trace records no more probe answers")
			}
			a := answers[0]
			answers = answers[1:]
			return a, nil
		}
	}
	return func(o *sched.Op) (string, error) { return t.runProbe(o.Kind) }
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
// message.
func matchBytes(sp *spec.Spec) int {
	if len(sp.Faults.HoldMatch) == 0 {
		return 0
	}
	return faults.MatchBytes
}
