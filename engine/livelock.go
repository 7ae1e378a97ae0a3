package engine

import (
	"fmt"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/sched"
)

// livelockRing is how many of the latest released ops a trial keeps to
// name the cycle a livelock repeats.
const livelockRing = 256

// livelockRealSteps is how many ops must have run with virtual time still
// for the real-time limit to be the system's livelock rather than
// lockstep's own stall.
const livelockRealSteps = 1000

// livelock watches for ops flowing while virtual time stands still: a
// system that bounces messages forever without a timer never finishes, and
// since ops take no virtual time, no virtual-time limit ends it.
type livelock struct {
	at    time.Duration // virtual time of the latest step
	still int           // steps since virtual time last moved
	ring  []string      // the latest ops, "lpid kind@site", oldest first
}

// step notes an op released (or a decision made) at virtual time now.
func (l *livelock) step(op *sched.Op, now time.Duration) {
	if now != l.at {
		l.at, l.still = now, 0
		l.ring = l.ring[:0]
	}
	l.still++
	name := op.LPID + " " + op.Kind.String()
	if op.Site != "" {
		name += "@" + op.Site
	}
	if len(l.ring) == livelockRing {
		copy(l.ring, l.ring[1:])
		l.ring = l.ring[:livelockRing-1]
	}
	l.ring = append(l.ring, name)
}

// describe says how long time stood still and which cycle of ops repeats.
func (l *livelock) describe() string {
	s := fmt.Sprintf("%d ops ran while virtual time stood at %v", l.still, l.at)
	if c := cycle(l.ring); len(c) > 0 {
		s += fmt.Sprintf("; they repeat a cycle of %d: %s", len(c), strings.Join(c, " → "))
	}
	return s
}

// cycle is the shortest sequence that the end of ops repeats at least
// three times over, nil when there is none.
func cycle(ops []string) []string {
	for p := 1; 3*p <= len(ops) && p <= 64; p++ {
		ok := true
		for i := len(ops) - 3*p; i < len(ops)-p; i++ {
			if ops[i] != ops[i+p] {
				ok = false
				break
			}
		}
		if ok {
			return ops[len(ops)-p:]
		}
	}
	return nil
}
