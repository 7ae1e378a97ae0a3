package explain

import (
	"context"
	"fmt"

	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/sched"
)

// A storage fault is named by more than its window. A power cut's draw
// (which of the node's unsynced changes reached the disk) is a decision
// of its own: the same cut keeping every change is a crash, and the
// explanation says whether that would have failed too. A corruption
// strikes a node that is down: it is named between the crash or cut that
// took the node down and the restart that brought it back, with what the
// restarted node made of the damaged files (its first message out, and
// its last answer).

// Storage is what explain adds for a power cut or a corruption.
type Storage struct {
	// Draw is the fault's variant as drawn ("persist none", "tail").
	Draw string `json:"draw"`
	// Hit is what it did in the minimized run ("kept 0 of 5 unsynced
	// changes", "cut b/log from 38 to 26 bytes").
	Hit string `json:"hit,omitempty"`
	// AllOutcome is, for a power cut that did not keep every change, how
	// the run ended with the same cut keeping them all (persist all).
	AllOutcome string `json:"all_outcome,omitempty"`
	// DrawDecides says AllOutcome is not the failure: what was lost, not
	// the cut alone, makes it.
	DrawDecides bool `json:"draw_decides,omitempty"`
	// Down and Up are, for a corruption, the crash or power cut that took
	// the node down and the restart that brought it back.
	Down *Event `json:"down,omitempty"`
	Up   *Event `json:"up,omitempty"`
	// Trusts are the restarted node's first message and its last one:
	// what it made of what it read back.
	Trusts []Event `json:"trusts,omitempty"`
}

// storage names decision i's storage fault (a power cut or a corruption
// at record at of the minimized run recs), running the power cut once
// more with every change kept.
func (e *explainer) storage(ctx context.Context, i int, set []sched.Decision, at int, recs []sched.Record, syms *symbolizer) (*Storage, error) {
	d := set[i]
	st := &Storage{Draw: d.Op.Disk, Hit: recs[at].Op.Hit}
	switch d.Op.Kind {
	case faults.Power:
		st.Draw = "persist " + d.Op.Disk
		if d.Op.Disk == "all" {
			return st, nil
		}
		nd := d
		nd.Op.Disk = "all"
		res, err := e.run(ctx, replace(set, i, nd), false, nil)
		if err != nil {
			return st, err
		}
		got := failureOf(res)
		st.AllOutcome, st.DrawDecides = got.String(), got.undoes(e.want)
	case faults.Corrupt:
		node := d.Op.Node
		for j := at - 1; j >= 0; j-- {
			if o := &recs[j].Op; o.Node == node && (o.Kind == faults.Crash || o.Kind == faults.Power) {
				ev := event(&recs[j], syms)
				st.Down = &ev
				break
			}
		}
		up := -1
		for j := at + 1; j < len(recs); j++ {
			if o := &recs[j].Op; o.Node == node && o.Kind == faults.Restart {
				ev := event(&recs[j], syms)
				st.Up, up = &ev, j
				break
			}
		}
		if up < 0 {
			return st, nil
		}
		first, last := -1, -1
		for j := up + 1; j < len(recs); j++ {
			if o := &recs[j].Op; o.Node == node && o.Kind == sched.Deliver && len(recs[j].Data) > 0 {
				if first < 0 {
					first = j
				}
				last = j
			}
		}
		for _, j := range []int{first, last} {
			if j >= 0 && (len(st.Trusts) == 0 || st.Trusts[0].Step != recs[j].Step) {
				st.Trusts = append(st.Trusts, event(&recs[j], syms))
			}
		}
	}
	return st, nil
}

// downText is a corruption's window: the node's time down.
func downText(st *Storage) string {
	s := fmt.Sprintf("while %s is down, after its %s (step %d)", st.Down.Node, st.Down.Op, st.Down.Step)
	if st.Up != nil {
		s += fmt.Sprintf(" and before its restart (step %d)", st.Up.Step)
	}
	return s
}

// storageText is the clause a storage fault adds to its race's sentence.
func storageText(st *Storage) string {
	if st == nil {
		return ""
	}
	var s string
	switch {
	case st.AllOutcome != "" && st.DrawDecides:
		s = fmt.Sprintf("; it fails only because unsynced changes were lost (%s): the same cut with persist all passes", st.Draw)
	case st.AllOutcome != "":
		s = fmt.Sprintf("; the same cut with persist all (a crash) fails too (%s)", st.AllOutcome)
	}
	for n, ev := range st.Trusts {
		if n == 0 {
			s += "; the restarted " + ev.Node + " trusts the damaged files: it sends "
		} else {
			s += ", and later "
		}
		s += ev.Data
		if ev.To != "" {
			s += " to " + ev.To
		}
	}
	return s
}
