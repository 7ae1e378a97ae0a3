package explain

import (
	"bytes"
	"context"
	"fmt"
	"slices"

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
//
// A power cut also names what it lost: the requests the node had
// answered before the cut whose bytes were in a write the cut took back
// (sched.Record.Lost). The match is by bytes, as a log that records each
// request as it came (Redis's append-only file, a write-ahead log of
// client commands) holds them: a request delivered to the node since it
// last started whose bytes (as far as the trace kept them) are in a lost
// write was written but not synced, and its answer was the
// acknowledgement that the cut made a lie. A log that re-encodes what it
// is sent (a protobuf record of a gRPC call) names nothing this way.

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
	// Lost are, for a power cut, the acknowledged writes it took back
	// (at most maxEffects, oldest first); LostWrites counts the writes
	// it took back, and LostAcked those that carried an answered request.
	Lost       []LostWrite `json:"lost,omitempty"`
	LostWrites int         `json:"lost_writes,omitempty"`
	LostAcked  int         `json:"lost_acked,omitempty"`
}

// LostWrite is a request the node answered before a power cut, whose
// bytes were in a write the cut took back.
type LostWrite struct {
	// Request is the request's delivery to the node, Answer the node's
	// first delivery back to its sender after it, before the cut.
	Request Event `json:"request"`
	Answer  Event `json:"answer"`
	// File, Off and Len are the write that carried it.
	File string `json:"file"`
	Off  int64  `json:"off"`
	Len  int64  `json:"len"`
}

func (l LostWrite) String() string {
	return fmt.Sprintf("%s; answered at step %d %s; written to %s at %d (%d bytes), not synced", l.Request, l.Answer.Step, l.Answer.Data, l.File, l.Off, l.Len)
}

// minRequest is the fewest bytes a request must have to be matched with
// a lost write: a shorter one ("PING\r\n") could be in any write.
const minRequest = 12

// lostWrites are the requests the node of power cut recs[at] answered
// before it whose bytes a write the cut took back held, oldest first.
func lostWrites(recs []sched.Record, at int, syms *symbolizer) []LostWrite {
	cut := &recs[at]
	node := cut.Op.Node
	// Requests since the node last started: earlier ones a restart read
	// back from what had been synced then.
	start := 0
	for j := at - 1; j >= 0; j-- {
		if o := &recs[j].Op; o.Node == node && (o.Kind == faults.Restart || o.Kind == faults.Power || o.Kind == faults.Crash) {
			start = j + 1
			break
		}
	}
	var out []LostWrite
	for j := start; j < at; j++ {
		o := &recs[j].Op
		req := recs[j].Data
		if o.Kind != sched.Deliver || receiver(o) != node || o.Node == node || len(req) < minRequest {
			continue
		}
		// The whole of what the trace kept of the request, not a run of
		// it: two requests of one protocol share their framing, a key
		// and the start of a value.
		in := slices.IndexFunc(cut.Lost, func(w sched.LostWrite) bool { return bytes.Contains(w.Data, req) })
		if in < 0 {
			continue
		}
		a := answer(recs, j, at)
		if a < 0 {
			continue // never acknowledged: its loss breaks no promise
		}
		w := cut.Lost[in]
		out = append(out, LostWrite{Request: event(&recs[j], syms), Answer: event(&recs[a], syms), File: w.File, Off: w.Off, Len: w.Len})
	}
	return out
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
		st.LostWrites = len(recs[at].Lost)
		lost := lostWrites(recs, at, syms)
		st.LostAcked = len(lost)
		st.Lost = lost[:min(len(lost), maxEffects)]
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
	if len(st.Lost) > 0 {
		l := st.Lost[0]
		s += fmt.Sprintf("; it loses what %s had acknowledged: %s, answered %s, written to %s but not synced", l.Request.To, message(l.Request), l.Answer.message(), l.File)
		if more := st.LostAcked - 1; more > 0 {
			s += fmt.Sprintf(", and %d more %s", more, plural(more, "acknowledged write", "acknowledged writes"))
		}
	}
	for n, ev := range st.Trusts {
		if n == 0 {
			s += "; the restarted " + ev.Node + " trusts the damaged files: it sends "
		} else {
			s += ", and later "
		}
		s += ev.message()
		if ev.To != "" {
			s += " to " + ev.To
		}
	}
	return s
}
