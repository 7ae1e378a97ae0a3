package explain

import (
	"fmt"
	"io"
	"time"

	"github.com/lockstep-dev/lockstep/sched"
)

// WriteText prints an explanation for a terminal.
func WriteText(w io.Writer, ex *Explanation) {
	fmt.Fprintf(w, "Explanation of %s\n", ex.Trace)
	fmt.Fprintf(w, "Failure: %s\n", ex.Failure)
	fmt.Fprintf(w, "Decisions: %d of the trace's %d ops depart from the default order (oldest op first, no delay, no fault);", ex.Decisions, ex.Ops)
	switch {
	case ex.Default:
		fmt.Fprintf(w, " none is needed: the default order fails too.\n")
	case ex.OneMinimal:
		fmt.Fprintf(w, " %d of them keep the failure, and removing any one loses it (checked: each flipped alone to the default order, %d %s%s).\n",
			len(ex.Races), ex.Checked, plural(ex.Checked, "run", "runs"), droppedText(ex.Dropped))
	default:
		fmt.Fprintf(w, " %d of them keep the failure (not shown to be 1-minimal).\n", len(ex.Races))
	}
	writeFaults(w, ex.Faults)
	writeChance(w, ex.Chance)
	writeRaces(w, ex)
	fmt.Fprintln(w)
	writeMinimized(w, ex)
	if len(ex.Slice) > 0 {
		fmt.Fprintf(w, "Causal slice: %d of its %d ops lead to the failure (show --slice)\n", len(ex.Slice), ex.MinimizedOps)
	}
	writeCurve(w, ex)
	for _, n := range ex.Notes {
		fmt.Fprintf(w, "Note: %s\n", n)
	}
	fmt.Fprintf(w, "%d runs in %v (one replay of the trace: %v)\n", ex.Runs, ex.Elapsed.Round(time.Millisecond), ex.TrialTime.Round(time.Millisecond))
}

// writeFaults prints what taking each fault out alone said.
func writeFaults(w io.Writer, vs []FaultVerdict) {
	if len(vs) == 0 {
		return
	}
	fmt.Fprintf(w, "Faults, each taken out alone with every other decision kept (%d %s):\n", len(vs), plural(len(vs), "run", "runs"))
	for _, v := range vs {
		if v.Needed {
			fmt.Fprintf(w, "   needed:     step %d %s; without it: %s\n", v.Step, v.Fault, v.Without)
		} else {
			fmt.Fprintf(w, "   not needed: step %d %s\n", v.Step, v.Fault)
		}
	}
}

// writeChance prints what the faults alone did with the order left to
// chance.
func writeChance(w io.Writer, c *Chance) {
	if c == nil || c.With.Runs == 0 {
		return
	}
	fmt.Fprintln(w, c.Summary())
	for _, f := range c.Without {
		fmt.Fprintf(w, "   %s\n", f)
	}
	if c.None != nil {
		fmt.Fprintf(w, "   %s\n", c.NoneSaid())
	}
	if c.Bare != nil {
		fmt.Fprintf(w, "   %s\n", c.BareSaid())
	}
	if c.Trace != "" {
		fmt.Fprintf(w, "   a run that failed: %s\n", c.Trace)
	}
	if c.NoneTrace != "" {
		fmt.Fprintf(w, "   a run with no fault that failed: %s\n", c.NoneTrace)
	}
}

// textRaces is how many races the text lists of a minimization that is
// not 1-minimal: hundreds of decisions kept are a course of the run, not
// races to read one by one (the JSON and the HTML list them all).
const textRaces = 25

// writeRaces prints the races, all of a 1-minimal set, else the first
// textRaces and the one the curve's jump names.
func writeRaces(w io.Writer, ex *Explanation) {
	jump := 0
	if ex.Jump != nil {
		jump = ex.Jump.Race
	}
	left := 0
	for i, r := range ex.Races {
		if ex.OneMinimal || i < textRaces || i+1 == jump {
			writeRace(w, i, r)
		} else {
			left++
		}
	}
	if left > 0 {
		fmt.Fprintf(w, "\n… and %d more decisions the failure kept, not listed here (--json and --html list every one)\n", left)
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// droppedText says how many decisions the 1-minimality check dropped.
func droppedText(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; it dropped %d %s whose run without it still failed", n, plural(n, "decision", "decisions"))
}

// writeRace prints race i: its sentence, its ops, and how its flip went.
func writeRace(w io.Writer, i int, r Race) {
	fmt.Fprintf(w, "\n%d. %s\n", i+1, r.Summary)
	if r.First.Op != "" {
		fmt.Fprintf(w, "   first:  %s\n", r.First)
	}
	if r.Read != nil {
		fmt.Fprintf(w, "   read:   %s\n", *r.Read)
	}
	if r.Second.Op != "" {
		fmt.Fprintf(w, "   then:   %s\n", r.Second)
	}
	if r.Before != nil {
		fmt.Fprintf(w, "   before: %s\n", *r.Before)
	}
	writeEffects(w, r)
	if p := r.Reorders; p != nil {
		fmt.Fprintf(w, "   reorders: %s\n   before:   %s\n", p.First, p.Second)
	}
	if r.Note != "" {
		fmt.Fprintf(w, "   note: %s\n", r.Note)
	}
	rel := "causally related (one happens before the other)"
	if r.Concurrent {
		rel = "causally unrelated: only the schedule ordered them"
	}
	fmt.Fprintf(w, "   %s\n", rel)
	if r.EarlyOutcome != "" {
		fmt.Fprintf(w, "   flipped (the fault moved before first): %s\n", r.EarlyOutcome)
	}
	switch {
	case r.Reversed:
		fmt.Fprintf(w, "   without this decision the two come the other way round and the run ends %s\n", r.FlipOutcome)
	case r.Before != nil && r.Confirmed:
		fmt.Fprintf(w, "   flipped (the fault moved after before): %s\n", r.FlipOutcome)
	case r.Confirmed && r.FlipOutcome == string(sched.Pass):
		fmt.Fprintf(w, "   flipped (the other way round): no failure (pass)\n")
	case r.Confirmed:
		fmt.Fprintf(w, "   flipped (the other way round): not this failure, but %s\n", r.FlipOutcome)
	case r.Flipped:
		fmt.Fprintf(w, "   flipped (the other way round): still %s\n", r.FlipOutcome)
	}
}

// writeEffects prints what a fault did while it lasted, and a storage
// fault's draw.
func writeEffects(w io.Writer, r Race) {
	if ef := r.Effects; ef != nil {
		for _, ev := range ef.Inside {
			fmt.Fprintf(w, "   inside: %s\n", ev)
		}
		for _, ev := range ef.Held {
			fmt.Fprintf(w, "   held:   %s\n", ev)
		}
		for _, ev := range ef.New {
			fmt.Fprintf(w, "   new:    %s\n", ev)
		}
	}
	if st := r.Storage; st != nil {
		if st.Down != nil {
			fmt.Fprintf(w, "   down:   %s\n", *st.Down)
		}
		if st.Up != nil {
			fmt.Fprintf(w, "   up:     %s\n", *st.Up)
		}
		for _, ev := range st.Trusts {
			fmt.Fprintf(w, "   trusts: %s\n", ev)
		}
		for _, l := range st.Lost {
			fmt.Fprintf(w, "   lost:   %s\n", l)
		}
		if st.LostWrites > 0 {
			fmt.Fprintf(w, "   the cut took back %d %s, %d of them acknowledged\n", st.LostWrites, plural(st.LostWrites, "write", "writes"), st.LostAcked)
		}
		if st.AllOutcome != "" {
			fmt.Fprintf(w, "   drawn %s; with persist all: %s\n", st.Draw, st.AllOutcome)
		}
	}
}

// writeCurve prints the probability curve, its points, and its jump.
func writeCurve(w io.Writer, ex *Explanation) {
	if len(ex.Curve) == 0 {
		return
	}
	fmt.Fprintf(w, "Failure probability after each prefix (faults and delays after it drawn afresh): %s\n", Sparkline(ex.Curve))
	j := ex.Jump
	for _, p := range ex.Curve {
		mark := ""
		if j != nil && j.Clear && p.Step == j.Step {
			mark = "  <- the jump"
		}
		fmt.Fprintf(w, "  after step %5d: %d/%d%s\n", p.Step, p.Failed, p.Runs, mark)
	}
	if j == nil {
		return
	}
	where := fmt.Sprintf("at step %d", j.Step)
	if j.Ops > 1 {
		where = fmt.Sprintf("over the %d ops after step %d, up to step %d", j.Ops, j.FromStep, j.Step)
	}
	race := ""
	if j.Race > 0 {
		race = fmt.Sprintf(" (race %d's decision)", j.Race)
	}
	rise := fmt.Sprintf("%d/%d to %d/%d %s, %s%s", j.From.Failed, j.From.Runs, j.To.Failed, j.To.Runs, where, j.Op, race)
	if j.Clear {
		fmt.Fprintf(w, "The jump: %s\n", rise)
	} else {
		fmt.Fprintf(w, "No clear jump: the largest rise, %s, is within the noise of the runs\n", rise)
	}
}

// writeMinimized says where the minimized trace is and whether replay runs
// it: only when explain's own replay of it gave the failure again.
func writeMinimized(w io.Writer, ex *Explanation) {
	switch {
	case ex.MinimizedReplays:
		fmt.Fprintf(w, "Minimized trace: %s (%d ops; lockstep replay runs it)\n", ex.MinimizedTrace, ex.MinimizedOps)
	case ex.MinimizedTrace != "" && ex.MinimizedDiverged != "":
		fmt.Fprintf(w, "Minimized trace: %s (%d ops; its replay did not give the failure again: %s)\n", ex.MinimizedTrace, ex.MinimizedOps, ex.MinimizedDiverged)
	case ex.MinimizedTrace != "":
		fmt.Fprintf(w, "Minimized trace: %s (%d ops; not replayed)\n", ex.MinimizedTrace, ex.MinimizedOps)
	}
}
