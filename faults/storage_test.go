package faults

import (
	"slices"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/disk"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/spec"
)

// defaultDisk is the spec's default storage plan.
var defaultDisk = spec.DefaultDiskPlan()

func diskPlan(kinds ...sched.Kind) Plan {
	p := plan(kinds...)
	p.Disk = defaultDisk
	p.MaxOutage = time.Second
	return p
}

// A power cut takes a node down as a crash does (its restart follows),
// with a persistence and a pick drawn from the seed; an ioerror names its
// call and error, a stall its length within max_stall.
func TestDiskInjections(t *testing.T) {
	seen := map[string]bool{}
	for seed := range int64(40) {
		in := newEager(diskPlan(Power, IOError, Stall), nodes, seed)
		o := in.Offer(0, Targets{})[0]
		again := newEager(diskPlan(Power, IOError, Stall), nodes, seed).Offer(0, Targets{})[0]
		if *again != *o {
			t.Fatalf("seed %d: %v then %v", seed, o, again)
		}
		e, err := in.Chose(o, 0)
		if err != nil {
			t.Fatal(err)
		}
		switch o.Kind {
		case Power:
			if !slices.Contains(defaultDisk.Persist, o.Disk) || !in.Crashed(o.Node) || e.Disk != o.Disk || e.Pick != o.Pick {
				t.Fatalf("power %+v, effect %+v", o, e)
			}
			if rs := in.Offer(time.Duration(o.Delay), Targets{}); len(rs) != 1 || rs[0].Kind != Restart {
				t.Fatalf("after the outage, offered %v", rs)
			}
			seen[o.Disk] = true
		case IOError:
			if !slices.Contains([]string{"write", "fsync", "read"}, o.Syscall) || (o.Disk != "EIO" && o.Disk != "ENOSPC") || e.Call != o.Syscall {
				t.Fatalf("ioerror %+v", o)
			}
			seen[o.Syscall] = true
		case Stall:
			if e.Stall < 100*ms || e.Stall > time.Second || o.Syscall != "fsync" {
				t.Fatalf("stall %+v, effect %+v", o, e)
			}
			seen["stall"] = true
		default:
			t.Fatalf("drew %v", o)
		}
	}
	for _, k := range []string{"none", "prefix", "subset", "write", "fsync", "read", "stall"} {
		if !seen[k] {
			t.Errorf("40 seeds never drew %s (drew %v)", k, seen)
		}
	}
}

// A corruption is offered only while a node is down with data files
// written, at once (whatever the trigger), within the budget, and never
// drawn as the regular injection.
func TestCorruptOffer(t *testing.T) {
	p := diskPlan(Crash, Corrupt)
	p.Budget = 2
	in := newEager(p, nodes, 3)
	o := in.Offer(0, Targets{})
	if len(o) != 1 || o[0].Kind != Crash {
		t.Fatalf("offered %v before any node is down", o)
	}
	if _, err := in.Chose(o[0], 0); err != nil {
		t.Fatal(err)
	}
	down := o[0].Node
	if got := in.Offer(0, Targets{DataFiles: map[string]int{down: 0}}); slices.ContainsFunc(got, func(o *sched.Op) bool { return o.Kind == Corrupt }) {
		t.Fatalf("corruption offered with no data file: %v", got)
	}
	got := in.Offer(0, Targets{DataFiles: map[string]int{down: 2}})
	i := slices.IndexFunc(got, func(o *sched.Op) bool { return o.Kind == Corrupt })
	if i < 0 || got[i].Node != down || (got[i].Disk != disk.CorruptFlip && got[i].Disk != disk.CorruptTail) {
		t.Fatalf("offered %v with %s down", got, down)
	}
	if _, err := in.Chose(got[i], 0); err != nil {
		t.Fatal(err)
	}
	if got := in.Offer(0, Targets{DataFiles: map[string]int{down: 2}}); slices.ContainsFunc(got, func(o *sched.Op) bool { return o.Kind == Corrupt }) {
		t.Fatalf("budget spent, still offered %v", got)
	}
}
