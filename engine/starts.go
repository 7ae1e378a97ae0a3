package engine

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/spec"
	"github.com/lockstep-dev/lockstep/tracer"
)

// starts tracks the nodes of a trial that have not started yet. A node
// starts once its start_delay has passed in virtual time and every node
// before it in the spec that has a readiness condition (ready: {listen:
// PORT}) meets it. Readiness is checked only at quiescent points, where
// whether a listen has happened depends on the schedule alone.
type starts struct {
	nodes   []spec.Node
	waiting []int // indices into nodes not started, by start_delay, then spec order
	started map[string]bool
	ready   map[string]bool
	// listening checks a node's readiness condition; ports lists the
	// ports a node listens on, and whether it has a connection.
	listening func(node string, port uint16) (bool, error)
	ports     func(node string) ([]uint16, bool, error)
}

func newStarts(nodes []spec.Node, listening func(string, uint16) (bool, error), ports func(string) ([]uint16, bool, error)) *starts {
	s := &starts{nodes: nodes, started: map[string]bool{}, ready: map[string]bool{}, listening: listening, ports: ports}
	for i := range nodes {
		s.waiting = append(s.waiting, i)
	}
	sort.SliceStable(s.waiting, func(a, b int) bool { return nodes[s.waiting[a]].StartDelay < nodes[s.waiting[b]].StartDelay })
	return s
}

func (s *starts) empty() bool { return len(s.waiting) == 0 }

// gate returns the first node before nodes[i] whose readiness condition is
// not met yet, or -1.
func (s *starts) gate(i int) int {
	for k := 0; k < i; k++ {
		if s.nodes[k].ReadyPort != 0 && !s.ready[s.nodes[k].Name] {
			return k
		}
	}
	return -1
}

// refresh checks the readiness of started nodes that hold others back.
func (s *starts) refresh() error {
	for _, i := range s.waiting {
		k := s.gate(i)
		if k < 0 || !s.started[s.nodes[k].Name] {
			continue
		}
		n := s.nodes[k]
		ok, err := s.listening(n.Name, n.ReadyPort)
		if err != nil {
			return fmt.Errorf("checking whether node %s listens on port %d: %w", n.Name, n.ReadyPort, err)
		}
		if ok {
			s.ready[n.Name] = true
		}
	}
	return nil
}

// due returns the next node that may start at now.
func (s *starts) due(now time.Duration) (spec.Node, bool) {
	for _, i := range s.waiting {
		if s.nodes[i].StartDelay <= now && s.gate(i) < 0 {
			return s.nodes[i], true
		}
	}
	return spec.Node{}, false
}

// take marks a node started.
func (s *starts) take(name string) {
	for w, i := range s.waiting {
		if s.nodes[i].Name == name {
			s.waiting = append(s.waiting[:w:w], s.waiting[w+1:]...)
			break
		}
	}
	s.started[name] = true
}

// wakes are the start deadlines of the nodes, one per node, for the
// tracer's deadline queue: a node's while it waits and only time holds it
// back (the nodes before it are ready). They are listed: the engine offers
// them as advance targets.
func (s *starts) wakes() []tracer.Wake {
	ws := make([]tracer.Wake, len(s.nodes))
	for i := range s.nodes {
		ws[i] = tracer.Wake{Listed: true, Next: func() (tracer.Deadline, bool) {
			n := s.nodes[i]
			if s.started[n.Name] || s.gate(i) >= 0 {
				return tracer.Deadline{}, false
			}
			return tracer.Deadline{At: n.StartDelay, Node: n.Name, LPID: n.Name, What: "start", Kind: sched.Sleep}, true
		}}
	}
	return ws
}

// describe says which nodes wait for which, for a deadlock's detail.
func (s *starts) describe() string {
	var b []string
	for _, i := range s.waiting {
		if k := s.gate(i); k >= 0 {
			b = append(b, fmt.Sprintf("%s waits for %s to listen on port %d", s.nodes[i].Name, s.nodes[k].Name, s.nodes[k].ReadyPort))
		}
	}
	return strings.Join(b, "; ")
}

// misdeclared names a node that holds others back, is started, listens,
// but not on the port its readiness condition names, and has no
// connection: a server idle on its ports. The wait is then the spec's (a
// ready.listen of another port than the server opens, or peers listed
// after it), not the system's. A node with a connection may be stuck in
// its own start (a peer's election that never ends), which is the
// system's: not named. "" when none is.
func (s *starts) misdeclared() (node, why string) {
	for _, i := range s.waiting {
		k := s.gate(i)
		if k < 0 || !s.started[s.nodes[k].Name] || s.ports == nil {
			continue
		}
		n := s.nodes[k]
		ports, connected, err := s.ports(n.Name)
		if err != nil || len(ports) == 0 || connected || slices.Contains(ports, n.ReadyPort) {
			continue
		}
		var ps []string
		for _, p := range ports {
			ps = append(ps, strconv.Itoa(int(p)))
		}
		return n.Name, fmt.Sprintf("%s waits for %s to listen on port %d (its ready.listen), but %s listens on %s and not there: lockstep holds %s back until it does, which natively nothing would", s.nodes[i].Name, n.Name, n.ReadyPort, n.Name, strings.Join(ps, ", "), s.nodes[i].Name)
	}
	return "", ""
}
