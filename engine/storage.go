package engine

import (
	"fmt"
	"slices"
	"syscall"

	"github.com/lockstep-dev/lockstep/disk"
	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/spec"
	"github.com/lockstep-dev/lockstep/tracer"
)

// storage is a trial's books of its nodes' data files, for the storage
// faults (power, corrupt, ioerror, stall; see package disk).
type storage struct {
	books map[string]*disk.Books
	// cut is the power cut chosen at the last step, whose undo waits for
	// the node's processes to be gone (the next step), and rec the index
	// of its record.
	cut *faults.Effect
	rec int
}

// diskFor is the books of a node a storage fault may hit, made at its
// first launch (a restart keeps them); nil for any other node.
func (t *Trial) diskFor(n spec.Node) (tracer.Disk, error) {
	if !t.j.faults.StorageNode(n.Name) {
		return nil, nil
	}
	if b := t.disk.books[n.Name]; b != nil {
		return b, nil
	}
	paths, err := t.spec.DataPaths(n.Name, spec.TemplateVars{TrialDir: tracer.TrialPath, NodeDir: tracer.TrialPath + "/" + n.Name, Seed: t.p.seed, Addrs: t.addrs})
	if err != nil {
		return nil, err
	}
	if t.disk.books == nil {
		t.disk.books = map[string]*disk.Books{}
	}
	b := disk.New(paths, tracer.TrialPath, t.j.faults.Disk.Names == spec.NamesJournal)
	b.SetReads(slices.Contains(t.j.faults.Kinds, faults.IOError) && slices.Contains(t.j.faults.Disk.IOCalls, "read"))
	t.disk.books[n.Name] = b
	return b, nil
}

// closeDisks releases the files the books hold, saying at debug level
// what they did.
func (t *Trial) closeDisks() {
	for n, b := range t.disk.books {
		st := b.Stats()
		t.j.log.Debug("disk books", "trial", t.p.index, "node", n, "calls", st.Calls, "changes", st.Changes, "kept_bytes", st.Kept, "unsynced", b.Pending())
		b.Close()
	}
}

// hit writes what a storage fault did into its record, for show.
func (t *Trial) hit(rec int) func(string) {
	return func(what string) {
		if rec < len(t.res.Records) {
			t.res.Records[rec].Op.Hit = what
		}
	}
}

// applyDisk carries out a storage fault: a power cut crashes the node now
// and undoes what was not durable at the next step, once its processes
// are gone; a corruption damages a file of the down node; an ioerror or a
// stall waits in the node's books for its call.
func (t *Trial) applyDisk(e faults.Effect) (tracer.Action, error) {
	rec := len(t.res.Records) - 1
	b := t.disk.books[e.Node]
	if b == nil {
		return tracer.Action{}, fmt.Errorf("storage fault %v on node %s, which keeps no books of its data", e.Kind, e.Node)
	}
	switch e.Act {
	case faults.ActPower:
		t.disk.cut, t.disk.rec = &e, rec
		return tracer.Action{Crash: e.Node}, nil
	case faults.ActCorrupt:
		what, spot, err := b.Corrupt(e.Disk, e.Pick, disk.Spot{File: e.File, At: e.Spot})
		if err != nil {
			return t.stop(Error, e.Node, "corrupting node %s's data: %v", e.Node, err)
		}
		t.hit(rec)(what)
		if rec < len(t.res.Records) {
			t.res.Records[rec].Op.File, t.res.Records[rec].Op.Spot = spot.File, spot.At
		}
	case faults.ActIOError:
		errno := syscall.EIO
		if e.Disk == "ENOSPC" {
			errno = syscall.ENOSPC
		}
		b.Arm(e.Call, errno, 0, t.hit(rec))
	case faults.ActStall:
		b.Arm("", 0, e.Stall, t.hit(rec))
	}
	return tracer.Action{}, nil
}

// finishCut undoes, after a power cut, what the node had not made durable
// (the books' Cut): its processes were reaped before this step.
func (t *Trial) finishCut() (tracer.Action, bool, error) {
	e := t.disk.cut
	if e == nil {
		return tracer.Action{}, false, nil
	}
	t.disk.cut = nil
	what, lost, err := t.disk.books[e.Node].Cut(e.Disk, e.Pick)
	t.hit(t.disk.rec)(what)
	if t.disk.rec < len(t.res.Records) {
		r := &t.res.Records[t.disk.rec]
		r.Lost = r.Lost[:0]
		for _, l := range lost {
			r.Lost = append(r.Lost, sched.LostWrite{File: l.Path, Off: l.Off, Len: l.Len, Data: l.Data})
		}
	}
	if err != nil {
		a, err := t.stop(Error, e.Node, "power cut of node %s: %v", e.Node, err)
		return a, true, err
	}
	return tracer.Action{}, false, nil
}

// dataFiles are, per node down, how many data files it wrote (for
// corruptions); nil unless the plan has them.
func (t *Trial) dataFiles() map[string]int {
	if !t.corrupts {
		return nil
	}
	var out map[string]int // most steps have no node down: no map
	for n, b := range t.disk.books {
		if t.faults.Crashed(n) {
			if out == nil {
				out = map[string]int{}
			}
			out[n] = b.Written()
		}
	}
	return out
}
