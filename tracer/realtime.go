package tracer

import (
	"fmt"
	"slices"
	"strings"
)

// realTime lists the points where real time, not a decision, settled what
// ran: threads let run beside a loop on the clock or past the grace
// period, bytes or a FIN lockstep stopped waiting for. These are the
// points lockstep knows it left to real time, so when a replay parts from
// its trace they are where to look first (State.Timed,
// sched.Record.Timed); threads that run together between two ops can
// still part it elsewhere.
type realTime struct {
	noted []string
}

// note adds one point. Its text names threads by LPID and connections by
// address, never a count or a duration, so that a run and its replay that
// met the same point write the same words.
func (r *realTime) note(format string, args ...any) {
	r.noted = append(r.noted, fmt.Sprintf(format, args...))
}

// take returns the points noted since the last take.
func (r *realTime) take() []string {
	n := r.noted
	r.noted = nil
	return n
}

// heldAlone names the threads held until nothing else runs (a clone or a
// disk call: onCreate, onAlone), for a note.
func (pt *procTable) heldAlone() string {
	var names []string
	for _, th := range pt.threads {
		if th.state == tsAlone {
			names = append(names, th.lpid)
		}
	}
	return sortedList(names)
}

// sortedList joins names in order, or says there are none.
func sortedList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	names = append([]string(nil), names...)
	slices.Sort(names)
	return strings.Join(names, ", ")
}
