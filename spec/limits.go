package spec

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"
)

// NodeLimits bound what one node may take of the host (docs/spec.md,
// "Resource limits"). A zero field is lockstep's default, which the
// engine derives from the host when a campaign starts.
type NodeLimits struct {
	Memory    int64 // bytes of memory, tmpfs pages included; no swap
	Pids      int   // processes and threads at once
	CPUWeight int   // cgroup v2 cpu.weight, 1 to 10000
	Tmpfs     int64 // bytes in each of its own /tmp, /var/tmp, /dev/shm
	Tmp       int64 // bytes in its {{tmp}} directory
	Output    int64 // bytes kept of each of its stdout and stderr
}

// Bounds on NodeLimits fields: the least a program can start with, and
// the most any host has.
const (
	minLimitMemory = 16 << 20
	minLimitTmpfs  = 1 << 20
	minLimitOutput = 4 << 10
	maxLimitBytes  = 1 << 50 // 1 PiB
	minLimitPids   = 8
	maxLimitPids   = 1 << 22 // the kernel's PID_MAX_LIMIT
	maxCPUWeight   = 10000
)

// NodeLimits are the limits the spec sets for node name: its own
// limits: over limits.node, field by field (zero: the default).
func (s *Spec) NodeLimits(name string) NodeLimits {
	l := s.Limits.Node
	if n := s.Node(name); n != nil {
		o := n.Limits
		if o.Memory != 0 {
			l.Memory = o.Memory
		}
		if o.Pids != 0 {
			l.Pids = o.Pids
		}
		if o.CPUWeight != 0 {
			l.CPUWeight = o.CPUWeight
		}
		if o.Tmpfs != 0 {
			l.Tmpfs = o.Tmpfs
		}
		if o.Tmp != 0 {
			l.Tmp = o.Tmp
		}
		if o.Output != 0 {
			l.Output = o.Output
		}
	}
	return l
}

// limitsFields are the limits section's.
var limitsFields = []field[*draft]{
	{"virtual_time", durationField(func(b *draft) *time.Duration { return &b.s.Limits.VirtualTime }, false, maxVirtualTime)},
	{"steps", intField(func(b *draft) *int { return &b.s.Limits.Steps }, 1, maxSteps)},
	{"real_time", durationField(func(b *draft) *time.Duration { return &b.s.Limits.RealTime }, false, maxRealTime)},
	{"deadlock_grace", durationField(func(b *draft) *time.Duration { return &b.s.Limits.DeadlockGrace }, true, time.Minute)},
	{"livelock_steps", intField(func(b *draft) *int { return &b.s.Limits.LivelockSteps }, 1, maxSteps)},
	{"node", func(d *decoder, v ast.Node, path string, b *draft) (err error) {
		b.s.Limits.Node, err = d.nodeLimits(v, path)
		return err
	}},
}

// nodeLimitFields are limits.node's and nodes[i].limits'.
var nodeLimitFields = []field[*NodeLimits]{
	{"memory", sizeField(func(l *NodeLimits) *int64 { return &l.Memory }, minLimitMemory)},
	{"pids", intField(func(l *NodeLimits) *int { return &l.Pids }, minLimitPids, maxLimitPids)},
	{"cpu_weight", intField(func(l *NodeLimits) *int { return &l.CPUWeight }, 1, maxCPUWeight)},
	{"tmpfs", sizeField(func(l *NodeLimits) *int64 { return &l.Tmpfs }, minLimitTmpfs)},
	{"tmp", sizeField(func(l *NodeLimits) *int64 { return &l.Tmp }, minLimitTmpfs)},
	{"output", sizeField(func(l *NodeLimits) *int64 { return &l.Output }, minLimitOutput)},
}

// sizeField sets the byte size at(t) points at to one of least bytes or
// more (see decoder.size).
func sizeField[T any](at func(T) *int64, least int64) setter[T] {
	return func(d *decoder, v ast.Node, path string, t T) (err error) {
		*at(t), err = d.size(v, path, least)
		return err
	}
}

// nodeLimits decodes limits.node or nodes[i].limits.
func (d *decoder) nodeLimits(n ast.Node, field string) (NodeLimits, error) {
	var l NodeLimits
	err := decodeMap(d, n, field, nodeLimitFields, &l)
	return l, err
}

// sizeUnits are the units a size may carry: binary multiples, as the
// kernel counts memory (a bare number is bytes).
var sizeUnits = []struct {
	suffix string
	mult   int64
}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"B", 1}}

// size decodes a byte size such as 2GiB, 256MiB or 65536, between least
// and maxLimitBytes.
func (d *decoder) size(n ast.Node, field string, least int64) (int64, error) {
	var v int64
	if _, ok := n.(*ast.IntegerNode); ok {
		i, err := d.integer(n, field)
		if err != nil {
			return 0, err
		}
		v = i
	} else {
		s, err := d.str(n, field)
		if err != nil {
			return 0, err
		}
		if v, err = ParseSize(s); err != nil {
			return 0, d.errf(n, field, "%v", err)
		}
	}
	if v < least || v > maxLimitBytes {
		return 0, d.errf(n, field, "must be between %s and %s, got %s", FormatSize(least), FormatSize(maxLimitBytes), FormatSize(v))
	}
	return v, nil
}

// ParseSize reads a byte size: a whole or decimal number with a unit
// (B, KiB, MiB, GiB, TiB), or a whole number of bytes.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range sizeUnits {
		if num, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(num), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || t == "" || strings.ContainsAny(t, "eExXpP_") || math.IsNaN(f) {
		return 0, fmt.Errorf("%q is not a size (want a number with a unit such as 512MiB or 2GiB)", s)
	}
	if f < 0 {
		return 0, fmt.Errorf("%q: a size cannot be negative", s)
	}
	b := f * float64(mult)
	if b >= math.MaxInt64 {
		return 0, fmt.Errorf("%q is out of range", s)
	}
	return int64(b), nil
}

// FormatSize writes a byte count in the largest binary unit that keeps it
// readable (2 GiB, 1.5 MiB, 300 B).
func FormatSize(b int64) string {
	for i := len(sizeUnits) - 2; i >= 0; i-- {
		u := sizeUnits[i]
		if b >= u.mult {
			v := float64(b) / float64(u.mult)
			if v == math.Trunc(v) {
				return fmt.Sprintf("%d %s", int64(v), u.suffix)
			}
			return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0") + " " + u.suffix
		}
	}
	return fmt.Sprintf("%d B", b)
}
