package faults

import (
	"slices"
	"time"

	"github.com/lockstep-dev/lockstep/sched"
)

// IsStorage reports whether k is a storage fault.
func IsStorage(k sched.Kind) bool { return kindDefs[k].storage }

// Storage reports whether the plan has storage faults: the engine then
// keeps the books of the nodes' data files (which makes their writes and
// syncs stops), for the nodes StorageNode names.
func (p Plan) Storage() bool { return slices.ContainsFunc(p.Kinds, IsStorage) }

// StorageNode reports whether a storage fault may hit node.
func (p Plan) StorageNode(node string) bool { return p.Storage() && slices.Contains(p.Nodes, node) }

// diskChose is a storage fault's chose: it spends the budget and hands
// the engine the fault's variant, then does after (when set).
func diskChose(after func(in *Injector, o *sched.Op, now time.Duration, e *Effect)) func(in *Injector, o *sched.Op, now time.Duration, e *Effect) error {
	return func(in *Injector, o *sched.Op, now time.Duration, e *Effect) error {
		in.budget--
		e.Disk, e.Pick, e.Call, e.File, e.Spot = o.Disk, o.Pick, o.Syscall, o.File, o.Spot
		if after != nil {
			after(in, o, now, e)
		}
		return nil
	}
}

// The storage faults.
const (
	// Power cuts a node's power: its processes die and what it wrote and
	// had not made durable is lost, all or part of it (Op.Disk says how
	// the part is drawn). Restart follows as after a crash.
	Power sched.Kind = "power"
	// Corrupt flips a bit in, or cuts the tail off, one of a down node's
	// data files (Op.Disk: "flip" or "tail").
	Corrupt sched.Kind = "corrupt"
	// IOError makes the node's next call of one kind (Op.Syscall: write,
	// fsync or read) on a data file fail with an error (Op.Disk: EIO or
	// ENOSPC) without running.
	IOError sched.Kind = "ioerror"
	// Stall makes the node's next fsync of a data file take virtual time
	// (Op.Delay).
	Stall sched.Kind = "stall"
)

func init() {
	// The engine's offer of a power cut or a corruption draws its variant
	// and pick afresh; a forced replay keeps the trace's.
	define(Power, kindDef{
		storage: true, act: ActPower, possible: possibleUp, detail: detailPower, keep: keepStorage, lasts: outageSpan,
		chose: diskChose(func(in *Injector, o *sched.Op, now time.Duration, _ *Effect) {
			in.crashed[o.Node] = true
			in.until["restart:"+o.Node] = now + time.Duration(o.Delay)
		}),
		replay: sched.FaultReplay{Remake: true, KeepDraw: true},
	})
	define(Corrupt, kindDef{
		storage: true, act: ActCorrupt, possible: possibleCorrupt, detail: detailCorrupt, chose: diskChose(nil), keep: keepStorage,
		needs: NeedDataFiles, replay: sched.FaultReplay{KeepDraw: true},
	})
	define(IOError, kindDef{
		storage: true, act: ActIOError, possible: possibleRunning, detail: detailIOError, chose: diskChose(nil), keep: keepStorage,
		replay: sched.FaultReplay{Remake: true},
	})
	define(Stall, kindDef{
		storage: true, act: ActStall, possible: possibleRunning, detail: detailStall, keep: keepStorage,
		chose:  diskChose(func(_ *Injector, o *sched.Op, _ time.Duration, e *Effect) { e.Stall = time.Duration(o.Delay) }),
		replay: sched.FaultReplay{Remake: true},
	})
}

func detailPower(in *Injector, o *sched.Op) {
	detailOutage(in, o)
	d := in.plan.Disk
	o.Disk = d.Persist[in.r.IntN(len(d.Persist))]
	o.Pick = in.r.Uint64()
}

// possibleCorrupt: the node is down with data files written.
func possibleCorrupt(in *Injector, o *sched.Op) bool {
	return in.crashed[o.Node] && in.dataFiles[o.Node] > 0
}

func detailCorrupt(in *Injector, o *sched.Op) {
	d := in.plan.Disk
	o.Disk = d.Corruptions[in.r.IntN(len(d.Corruptions))]
	o.Pick = in.r.Uint64()
}

func detailIOError(in *Injector, o *sched.Op) {
	d := in.plan.Disk
	o.Syscall = d.IOCalls[in.r.IntN(len(d.IOCalls))]
	o.Disk = d.IOErrors[in.r.IntN(len(d.IOErrors))]
}

func detailStall(in *Injector, o *sched.Op) {
	o.Syscall = "fsync"
	o.Delay = int64(in.upTo(in.plan.Disk.MaxStall))
}

// possibleRunning: the node is not down.
func possibleRunning(in *Injector, o *sched.Op) bool { return !in.crashed[o.Node] }

// corruptOffer is the corruption to offer beside the other ops at now, or
// nil: one of a node down after a crash or a power cut whose data files
// were written, as soon as it is down and before its restart, whatever the
// window's trigger (a trigger drawn over the window would mostly fall
// after the restart).
func (in *Injector) corruptOffer(now time.Duration) *sched.Op {
	if in.quiet || in.budget <= 0 || now >= in.plan.Until || !slices.Contains(in.plan.Kinds, Corrupt) {
		return nil
	}
	if in.offerCorrupt != nil && possibleCorrupt(in, in.offerCorrupt) {
		return in.offerCorrupt
	}
	in.offerCorrupt = nil
	for _, n := range in.plan.Nodes {
		c := &sched.Op{Kind: Corrupt, Node: n}
		if possibleCorrupt(in, c) {
			o := in.op(Corrupt, n, "node:"+n)
			detailCorrupt(in, o)
			in.offerCorrupt = o
			return o
		}
	}
	return nil
}
