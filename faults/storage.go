package faults

import (
	"slices"
	"time"

	"github.com/lockstep-dev/lockstep/sched"
)

// DiskPlan is what a spec allows of storage faults (power, corrupt,
// ioerror, stall); package disk keeps the books they act on.
type DiskPlan struct {
	// Data are the nodes' data paths, as the spec writes them (templates
	// such as {{tmp}} expanded per node by the engine): the files and
	// directories under them are what a power cut, a corruption or a
	// failing disk acts on.
	Data []string
	// Persist are the ways a power cut may treat a node's unsynced
	// changes, one drawn per cut: package disk's Persist words
	// (disk.PersistNone, PersistAll, PersistPrefix, PersistSubset,
	// PersistTorn; what each keeps is documented there).
	Persist []string
	// MaxStall bounds how long a stalled fsync takes, in virtual time.
	MaxStall time.Duration
	// IOErrors are the errors an ioerror returns ("EIO", "ENOSPC").
	IOErrors []string
	// IOCalls are the calls an ioerror may fail ("write", "fsync", "read").
	IOCalls []string
	// Corruptions are how a corruption damages a file: package disk's
	// disk.CorruptFlip (one bit flipped) and disk.CorruptTail (its tail
	// cut off).
	Corruptions []string
	// Names says what makes a change of a name (a creation, a rename, an
	// unlink) durable: NamesPOSIX, an fsync of its directory;
	// NamesJournal, also an fsync of any data file after it (a journaling
	// file system such as ext4 commits every name change with it).
	Names string
}

// What makes a name change durable (DiskPlan.Names).
const (
	NamesPOSIX   = "posix"
	NamesJournal = "journal"
)

// IsStorage reports whether k is a storage fault.
func IsStorage(k sched.Kind) bool {
	switch k {
	case sched.Power, sched.Corrupt, sched.IOError, sched.Stall:
		return true
	}
	return false
}

// Storage reports whether the plan has storage faults: the engine then
// keeps the books of the nodes' data files (which makes their writes and
// syncs stops), for the nodes StorageNode names.
func (p Plan) Storage() bool { return slices.ContainsFunc(p.Kinds, IsStorage) }

// StorageNode reports whether a storage fault may hit node.
func (p Plan) StorageNode(node string) bool { return p.Storage() && slices.Contains(p.Nodes, node) }

// possibleDisk says whether a storage injection still makes sense.
func (in *Injector) possibleDisk(o *sched.Op) bool {
	switch o.Kind {
	case sched.Power:
		_, p := in.paused[o.Node]
		return !in.crashed[o.Node] && !p
	case sched.Corrupt:
		return in.crashed[o.Node] && in.dataFiles[o.Node] > 0
	case sched.IOError, sched.Stall:
		return !in.crashed[o.Node]
	}
	return false
}

// detailDisk draws a storage injection's variant.
func (in *Injector) detailDisk(o *sched.Op) {
	d := in.plan.Disk
	switch o.Kind {
	case sched.Power:
		if in.plan.MaxOutage > 0 {
			o.Delay = int64(in.upTo(in.plan.MaxOutage))
		}
		o.Disk = d.Persist[in.r.IntN(len(d.Persist))]
		o.Pick = in.r.Uint64()
	case sched.Corrupt:
		o.Disk = d.Corruptions[in.r.IntN(len(d.Corruptions))]
		o.Pick = in.r.Uint64()
	case sched.IOError:
		o.Syscall = d.IOCalls[in.r.IntN(len(d.IOCalls))]
		o.Disk = d.IOErrors[in.r.IntN(len(d.IOErrors))]
	case sched.Stall:
		o.Syscall = "fsync"
		o.Delay = int64(in.upTo(d.MaxStall))
	}
}

// choseDisk applies a chosen storage injection.
func (in *Injector) choseDisk(o *sched.Op, now time.Duration, e *Effect) {
	in.budget--
	e.Disk, e.Pick, e.Call = o.Disk, o.Pick, o.Syscall
	switch o.Kind {
	case sched.Power:
		in.crashed[o.Node] = true
		in.until["restart:"+o.Node] = now + time.Duration(o.Delay)
	case sched.Stall:
		e.Stall = time.Duration(o.Delay)
	}
}

// corruptOffer is the corruption to offer beside the other ops at now, or
// nil: one of a node down after a crash or a power cut whose data files
// were written, as soon as it is down and before its restart, whatever the
// window's trigger (a trigger drawn over the window would mostly fall
// after the restart).
func (in *Injector) corruptOffer(now time.Duration) *sched.Op {
	if in.quiet || in.budget <= 0 || now >= in.plan.Until || !slices.Contains(in.plan.Kinds, sched.Corrupt) {
		return nil
	}
	if in.offerCorrupt != nil && in.possibleDisk(in.offerCorrupt) {
		return in.offerCorrupt
	}
	in.offerCorrupt = nil
	for _, n := range in.plan.Nodes {
		c := &sched.Op{Kind: sched.Corrupt, Node: n}
		if in.possibleDisk(c) {
			o := in.op(sched.Corrupt, n, "node:"+n)
			in.detailDisk(o)
			in.offerCorrupt = o
			return o
		}
	}
	return nil
}
