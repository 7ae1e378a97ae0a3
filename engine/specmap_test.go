package engine

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/conflict"
	"github.com/lockstep-dev/lockstep/disk"
	"github.com/lockstep-dev/lockstep/explore"
	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/history"
	"github.com/lockstep-dev/lockstep/netns"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/spec"
)

// TestSpecVocabulary: every word package spec accepts without importing
// the runtime packages is one those packages take, so a spec that loads
// never fails later in the engine.
func TestSpecVocabulary(t *testing.T) {
	for _, name := range spec.Strategies() {
		for _, n := range []string{name, name + "+"} {
			if _, err := sched.New(n, sched.Params{}); err != nil {
				t.Errorf("strategy %q: %v", n, err)
			}
		}
	}
	schemes := []string{"pc", "pid+pc", "proc+pc"}
	for k := 1; k <= 16; k++ {
		schemes = append(schemes, fmt.Sprintf("pid+stack:%d", k), fmt.Sprintf("proc+stack:%d", k))
	}
	for _, s := range schemes {
		if _, err := conflict.ParseScheme(s); err != nil {
			t.Errorf("scheme %q: %v", s, err)
		}
	}
	if _, err := conflict.ParseScheme("pid+stack:17"); err == nil {
		t.Error("conflict takes pid+stack:17, which spec refuses")
	}
	if got, want := spec.ModelNames(), history.ModelNames(); !slices.Equal(got, want) {
		t.Errorf("spec's models %v, history's %v", got, want)
	}
	for _, m := range spec.ModelNames() {
		if _, err := history.NewModel(m); err != nil {
			t.Errorf("model %q: %v", m, err)
		}
	}
	for _, k := range spec.FaultKinds() {
		kind, err := faultKind(k)
		if err != nil {
			t.Error(err)
			continue
		}
		// spec's traitStorage (which loads the disk fields) and faults'
		// storage (which keeps the data files' books) must agree, else a
		// storage fault runs without its books or a spec without its
		// checks.
		if got, want := (spec.FaultPlan{Kinds: []spec.FaultKind{k}}).Storage(), faults.IsStorage(kind); got != want {
			t.Errorf("fault kind %v: spec says storage %v, package faults %v", k, got, want)
		}
	}
	for _, k := range faults.Kinds() {
		// Every injection package faults defines has its spec keyword;
		// recoveries follow them.
		if k != faults.Restart && k != faults.Heal && !slices.Contains(spec.FaultKinds(), spec.FaultKind(k)) {
			t.Errorf("fault kind %v: no spec keyword (spec/faults.go)", k)
		}
	}
	if _, err := faultKind(spec.FaultKind(faults.Restart)); err == nil {
		t.Error("a spec may name restart, a recovery")
	}
	for _, d := range []spec.ClockDirection{spec.ClockBoth, spec.ClockForward, spec.ClockBackward} {
		if got, ok := faults.ParseDirection(string(d)); !ok || got.String() != string(d) {
			t.Errorf("clock direction %q: %v, %v", d, got, ok)
		}
	}
	for _, s := range []spec.SpreadBy{spec.SpreadEither, spec.SpreadTime, spec.SpreadSteps} {
		if _, err := spreadBy(s); err != nil {
			t.Error(err)
		}
	}
	for _, d := range spec.HoldDirections() {
		if _, ok := faults.ParseHoldDir(d); !ok {
			t.Errorf("hold direction %q: package faults does not take it", d)
		}
	}
	if spec.HoldMatchBytes != faults.MatchBytes {
		t.Errorf("spec's patterns look at %d bytes, package faults' at %d", spec.HoldMatchBytes, faults.MatchBytes)
	}
	if spec.ShapeIsolate != faults.ShapeIsolate || spec.ShapeMinority != faults.ShapeMinority || spec.ShapeBridge != faults.ShapeBridge {
		t.Error("spec's bipartition shapes are not package faults'")
	}
	// The storage faults' words: spec repeats disk's (it imports no runtime package).
	for _, w := range [][2]string{
		{spec.PersistNone, disk.PersistNone}, {spec.PersistAll, disk.PersistAll}, {spec.PersistPrefix, disk.PersistPrefix},
		{spec.PersistSubset, disk.PersistSubset}, {spec.PersistTorn, disk.PersistTorn},
		{spec.CorruptFlip, disk.CorruptFlip}, {spec.CorruptTail, disk.CorruptTail},
	} {
		if w[0] != w[1] {
			t.Errorf("storage word %q of the spec is %q at run time", w[0], w[1])
		}
	}
	if spec.DefaultSubnet != netns.DefaultSubnet {
		t.Errorf("spec's default subnet %v, netns's %v", spec.DefaultSubnet, netns.DefaultSubnet)
	}
	for _, h := range []string{"s1", "Server-1", strings.Repeat("a", 63), strings.Repeat("a", 64), "s1-", "-s1", "s_1", "s1.local", ""} {
		if spec.ValidHostName(h) != netns.ValidHostName(h) {
			t.Errorf("host name %q: spec says %v, netns %v", h, spec.ValidHostName(h), netns.ValidHostName(h))
		}
	}
}

// TestFaultPlan: a spec's faults section becomes the same faults.Plan
// that package spec used to build itself.
func TestFaultPlan(t *testing.T) {
	const nodes = `name: t
nodes:
  - {name: s1, command: ["/bin/true"]}
  - {name: s2, command: ["/bin/true"]}
  - {name: s3, command: ["/bin/true"]}
  - {name: c1, role: client, command: ["/bin/true"]}
limits: {virtual_time: 60s}
`
	// The storage faults' settings have defaults even when no storage
	// fault is asked for (the plan is the same data either way).
	diskDefaults := spec.DiskPlan{Data: []string{"{{tmp}}"}, Persist: []string{"none", "prefix", "subset"}, MaxStall: time.Second,
		IOErrors: []string{"EIO", "ENOSPC"}, IOCalls: []string{"write", "fsync", "read"}, Corruptions: []string{"flip", "tail"}, Names: "posix"}
	defaults := faults.Plan{Nodes: []string{"s1", "s2", "s3"}, Budget: 1, Until: time.Minute, MaxPause: time.Second,
		MaxOutage: 2 * time.Second, MaxClockJump: 10 * time.Second, MaxHold: time.Second, MaxDrift: 100_000, Disk: diskDefaults}
	with := func(f func(*faults.Plan)) faults.Plan {
		p := defaults
		f(&p)
		return p
	}
	for _, tc := range []struct {
		name, faults string
		want         faults.Plan
	}{
		{"none", "", faults.Plan{}},
		{"defaults", "faults: {kinds: [crash]}", with(func(p *faults.Plan) { p.Kinds = []sched.Kind{faults.Crash} })},
		{"kinds in order, once", "faults: {kinds: [drift, clock, crash, bridge, bipartition, oneway, link, hold, pause, reset, drop, partition, crash]}",
			with(func(p *faults.Plan) {
				p.Kinds = []sched.Kind{faults.ClockDrift, faults.ClockJump, faults.Crash, faults.Bipartition, faults.OneWay, faults.Link,
					faults.Hold, faults.Pause, faults.Reset, faults.Drop, faults.Partition}
				p.Shapes = []string{faults.ShapeIsolate, faults.ShapeMinority, faults.ShapeBridge}
			})},
		{"bridge alone", "faults: {kinds: [bridge]}", with(func(p *faults.Plan) {
			p.Kinds, p.Shapes = []sched.Kind{faults.Bipartition}, []string{faults.ShapeBridge}
		})},
		{"every field", `faults:
  kinds: [clock, partition]
  nodes: [s1, s2]
  budget: 3
  from: 1s
  until: 20s
  max_pause: 2s
  min_pause: 1s
  max_outage: 4s
  min_outage: 3s
  max_clock_jump: 30s
  max_drift: 5%
  max_hold: 500ms
  clock_direction: backward
  undo_clock: false
  groups: [[s1, c1]]
  target: {probe: [/bin/echo, s1]}
`, faults.Plan{Kinds: []sched.Kind{faults.ClockJump, faults.Partition}, Nodes: []string{"s1", "s2"}, Budget: 3,
			From: time.Second, Until: 20 * time.Second, Spread: true, MaxPause: 2 * time.Second, MaxOutage: 4 * time.Second,
			MinPause: time.Second, MinOutage: 3 * time.Second,
			MaxClockJump: 30 * time.Second, MaxDrift: 50_000, MaxHold: 500 * time.Millisecond, ClockDirection: faults.Backward,
			KeepClock: true, Groups: [][]string{{"s1", "c1"}}, Probe: []string{"/bin/echo", "s1"}, Disk: diskDefaults}},
		{"follow, unspread", "faults: {kinds: [oneway], groups: follow, until: 9s, spread: false, clock_direction: forward}",
			with(func(p *faults.Plan) {
				p.Kinds, p.Follow, p.Until, p.ClockDirection = []sched.Kind{faults.OneWay}, true, 9*time.Second, faults.Forward
			})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp, err := spec.Parse("s.yaml", []byte(nodes+tc.faults+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := faultPlan(sp.Faults)
			if err != nil {
				t.Fatal(err)
			}
			if tc.name == "none" {
				if got.Enabled() {
					t.Fatalf("plan %+v is enabled", got)
				}
				return
			}
			// A plan's Shape and ShapeOf are the engine's message kinds
			// (funcs, which DeepEqual never finds equal): there, and set
			// aside.
			if got.Shape == nil || got.ShapeOf == nil {
				t.Fatal("the plan has no Shape check or no ShapeOf: holds of one kind could not match, grays never drawn")
			}
			got.Shape, got.ShapeOf = nil, nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("plan\n  got  %+v\n  want %+v", got, tc.want)
			}
		})
	}
	if _, err := faultPlan(spec.FaultPlan{Kinds: []spec.FaultKind{"restart"}}); err == nil {
		t.Error("restart, no fault a spec may name, made a plan")
	}
	if _, err := faultPlan(spec.FaultPlan{Kinds: []spec.FaultKind{"send"}}); err == nil {
		t.Error("send, an op kind that is no fault, made a plan")
	}
}

// TestPatternKind: a pattern naming a learned kind by its label holds
// that kind's messages whatever their values: raft's vote requests of any
// term, not its AppendEntries; a label copied with its "…" too. A hold sees
// a message's first bytes and its whole length (the votes here are the
// first bytes of 123-byte ones): told they were whole, the votes' maps
// would run off their ends, which no msgpack message does.
func TestPatternKind(t *testing.T) {
	vote := "\x01\x88\xa4Addr\xae10.77.0.3:7000\xa9Candidate\xae10.77.0.3:7000\xa2ID\xa2n3\xacLastLogIndex\x0c"
	vote2 := "\x01\x88\xa4Addr\xae10.77.0.1:7000\xa9Candidate\xae10.77.0.1:7000\xa2ID\xa2n1\xacLastLogIndex\xcd\x01\x00"
	appendEntries := "\x00\x89\xa4Addr\xae10.77.0.3:7000\xa7Entries\x90\xa2ID\xa2n3"
	for _, label := range []string{"\x01{Addr:s Candidate:s", "\x01{Addr:s Candidate:s ID:s…"} {
		match := ofKind([]byte(label))
		for _, tc := range []struct {
			msg  string
			n    int // the whole message's length
			want bool
		}{
			{vote, 123, true}, {vote2, 125, true}, {appendEntries, 200, false}, {"", 0, false}, {"PUT k1 v1\n", 10, false},
			{vote, len(vote), false},
		} {
			if got := match(tc.msg, tc.n); got != tc.want {
				t.Errorf("kind %q, %q of %d bytes: %v, want %v", label, tc.msg, tc.n, got, tc.want)
			}
		}
	}
}

// TestAimingFromPlan: the Aim change may do what the spec's fault plan
// allows, within its bounds, shortest outage included; nothing where it
// allows none of holds, slows, grays and drops.
func TestAimingFromPlan(t *testing.T) {
	slow := spec.FaultPlan{Kinds: []spec.FaultKind{spec.FaultKind(faults.Slow)}, Nodes: []string{"s1", "s2"}, Budget: 2,
		MaxHold: time.Second, MaxOutage: 4 * time.Second, MinOutage: 3 * time.Second}
	want := explore.Aiming{Nodes: []string{"s1", "s2"}, Slow: true, MaxHold: time.Second, MaxOutage: 4 * time.Second,
		MinOutage: 3 * time.Second, Budget: 2}
	if got := aiming(slow); !reflect.DeepEqual(got, want) {
		t.Errorf("aiming\n  got  %+v\n  want %+v", got, want)
	}
	crash := slow
	crash.Kinds = []spec.FaultKind{spec.FaultKind(faults.Crash)}
	if got := aiming(crash); got.On() {
		t.Errorf("a plan of crashes turns the Aim arm on: %+v", got)
	}
}

// The Longer change may lengthen the plan's kinds that have a length, up
// to its longest, and nothing without a plan.
func TestLastsFromPlan(t *testing.T) {
	p := spec.FaultPlan{Kinds: []spec.FaultKind{spec.FaultKind(faults.Crash), spec.FaultKind(faults.Pause), spec.FaultKind(faults.Hold)},
		Nodes: []string{"s1"}, Budget: 1, MaxOutage: 4 * time.Second, MaxPause: time.Second, MaxHold: time.Second}
	want := map[sched.Kind]time.Duration{faults.Crash: 4 * time.Second, faults.Pause: time.Second}
	if got, err := lasts(p); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("lasts: %v, %v; want %v", got, err, want)
	}
	p.Budget = 0
	if got, err := lasts(p); err != nil || got != nil {
		t.Errorf("lasts without a plan: %v, %v", got, err)
	}
}
