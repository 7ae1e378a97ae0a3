package report

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/conflict"
	"github.com/lockstep-dev/lockstep/result"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/spec"
)

// maxListed is how many failing traces the summary lists.
const maxListed = 10

// WriteSummary prints a campaign's summary: trials, failures by kind, the
// first failure and the failing traces, the first lockstep error and, with
// stats, the conflict-prediction accuracy and where real time went.
func WriteSummary(w io.Writer, s *result.Summary, stats bool) {
	if s.Interrupted {
		fmt.Fprintf(w, "interrupted: the summary covers the %d trials finished before\n", s.Trials)
	}
	fmt.Fprintf(w, "spec %s, strategy %s: %d trials in %v (%.1f trials/min)\n",
		s.Spec.Name, s.Strategy, s.Trials, s.Duration.Round(time.Millisecond), float64(s.Trials)/s.Duration.Minutes())
	fmt.Fprintf(w, "failures: %d (hit ratio %.4f)\n", s.Failures, s.HitRatio())
	for _, k := range sortedKinds(s.ByKind) {
		fmt.Fprintf(w, "  %-20s %d\n", k, s.ByKind[sched.OutcomeKind(k)])
	}
	if s.First != nil {
		fmt.Fprintf(w, "first failure: trial %d: %v\n", s.First.Index, s.First.Outcome)
		fmt.Fprintf(w, "  trace: %s\n  node output: %s\n", s.First.TracePath, s.First.Dir)
		writeUnique(w, s.First.Unique)
	}
	if s.Failures > 1 {
		fmt.Fprintln(w, "failing traces:")
		listed := 0
		for _, r := range s.Results {
			if !r.Outcome.Kind.IsFailure() {
				continue
			}
			if listed == maxListed {
				fmt.Fprintf(w, "  and %d more\n", s.Failures-listed)
				break
			}
			fmt.Fprintf(w, "  trial %d %s: %s\n", r.Index, r.Outcome.Kind, r.TracePath)
			listed++
		}
	}
	if c := s.Coverage; c != nil && c.Features > 0 {
		last := min(100, len(c.Curve))
		corpus := ""
		if c.Corpus > 0 {
			corpus = fmt.Sprintf("; corpus of %d trials", c.Corpus)
		}
		if c.Packed > 0 {
			corpus += fmt.Sprintf(" (%d with their records packed)", c.Packed)
		}
		fmt.Fprintf(w, "coverage: %d features (%d message kinds, %d log templates, %d orderings); the last %d trials added %d%s\n",
			c.Features, c.Kinds, c.Templates, c.Orderings, last, c.AddedSince(last), corpus)
	}
	writeSometimes(w, s)
	writeUniqueProperties(w, s)
	if sy := s.Symptom; sy != nil {
		switch {
		case sy.Reproduced >= 0:
			fmt.Fprintf(w, "symptom: reproduced by trial %d (matched %d of %d lines in order at best, trial %d)\n", sy.Reproduced, sy.Best, sy.Lines, sy.BestTrial)
		case sy.Best > 0:
			fmt.Fprintf(w, "symptom: not reproduced; matched %d of %d lines in order at best, trial %d\n", sy.Best, sy.Lines, sy.BestTrial)
		default:
			fmt.Fprintf(w, "symptom: not reproduced; no trial printed any of its %d lines\n", sy.Lines)
		}
	}
	writeTmpNotKept(w, s)
	if s.Verified > 0 || s.Unreplayable > 0 {
		fmt.Fprintf(w, "replayed: %d of %d failing traces gave the same failure again\n", s.Verified, s.Verified+s.Unreplayable)
	}
	if s.Unreplayable > 0 {
		// lockstep's own problem: the trial failed, but nothing can
		// reproduce, explain or share it.
		fmt.Fprintf(w, "unreplayable: %d failing trial(s) whose trace diverged when replayed (counted as lockstep errors):\n", s.Unreplayable)
		listed := 0
		for _, r := range s.Results {
			if r.Outcome.Kind != sched.Unreplayable {
				continue
			}
			if listed == maxListed {
				fmt.Fprintf(w, "  and %d more\n", s.Unreplayable-listed)
				break
			}
			fmt.Fprintf(w, "  trial %d: %s\n", r.Index, r.Outcome.Detail)
			listed++
		}
	}
	if e := s.FirstError; e != nil {
		// A lockstep error is no finding, but its cause must not hide in
		// the trace.
		fmt.Fprintf(w, "lockstep errors: %d; first: trial %d", s.Errors, e.Index)
		if e.Outcome.Node != "" {
			fmt.Fprintf(w, ", node %s", e.Outcome.Node)
		}
		fmt.Fprintf(w, ": %s\n", e.Outcome.Detail)
		if e.TracePath != "" {
			fmt.Fprintf(w, "  trace: %s\n", e.TracePath)
		}
		fmt.Fprintf(w, "  node output: %s\n", e.Dir)
	}
	if stats {
		writeStats(w, s)
	}
}

// writeTmpNotKept says which trials' {{tmp}} directories were not kept
// for want of room, and why the first was not: what a user looking for a
// node's data there must know.
func writeTmpNotKept(w io.Writer, s *result.Summary) {
	var first *result.TrialResult
	n := 0
	for _, r := range s.Results {
		if r.TmpNotKept == "" {
			continue
		}
		if n++; first == nil {
			first = r
		}
	}
	if first == nil {
		return
	}
	fmt.Fprintf(w, "{{tmp}} not kept for %d trial(s), the first trial %d: %s (their traces and outputs are)\n", n, first.Index, first.TmpNotKept)
}

// writeSometimes prints the spec's sometimes properties: in how many
// trials each was reached, and those no trial reached, plainly.
func writeSometimes(w io.Writer, s *result.Summary) {
	ps := propertiesOf(s, spec.Sometimes)
	if len(ps) == 0 {
		return
	}
	fmt.Fprintln(w, "sometimes:")
	for _, p := range ps {
		req := ""
		if p.Required {
			req = " (required)"
		}
		if c := s.Reached[p.Name]; c > 0 {
			fmt.Fprintf(w, "  %q%s reached in %d of %d trials\n", p.Name, req, c, s.Trials)
		} else {
			fmt.Fprintf(w, "  %q%s NEVER REACHED in %d trials%s\n", p.Name, req, s.Trials, closest(s, p.Name))
		}
	}
	if u := s.Unreached(); len(u) > 0 {
		fmt.Fprintf(w, "%d of %d sometimes properties were never reached", len(u), len(ps))
		if s.RequiredUnreached() {
			fmt.Fprint(w, ", a required one among them: the campaign fails")
		}
		fmt.Fprintln(w)
	}
}

// writeUniqueProperties prints the spec's unique properties with the
// trials in which a line matched each: one no line ever matched checked
// nothing, which a user should hear (its pattern may not fit the nodes'
// lines).
func writeUniqueProperties(w io.Writer, s *result.Summary) {
	for i, p := range propertiesOf(s, spec.Unique) {
		if i == 0 {
			fmt.Fprintln(w, "unique:")
		}
		if c := s.Reached[p.Name]; c > 0 {
			fmt.Fprintf(w, "  %q matched in %d of %d trials\n", p.Name, c, s.Trials)
		} else {
			fmt.Fprintf(w, "  %q NO LINE MATCHED in %d trials: it checked nothing (does its pattern, %s, fit the nodes' lines?)\n", p.Name, s.Trials, p.Pattern)
		}
	}
}

// propertiesOf are the campaign's spec's properties of kind k, in spec
// order.
func propertiesOf(s *result.Summary, k spec.PropertyKind) []spec.Property {
	if s.Spec == nil {
		return nil
	}
	var out []spec.Property
	for _, p := range s.Spec.Properties {
		if p.Kind == k {
			out = append(out, p)
		}
	}
	return out
}

// closest says which trial came closest to an unreached sometimes, and
// how: the words of its pattern a line held in order.
func closest(s *result.Summary, name string) string {
	c, ok := s.Closest[name]
	if !ok {
		return ""
	}
	return fmt.Sprintf("; closest: trial %d printed %s (%d of its %d words)", c.Trial, c.Line, c.Words, c.Of)
}

// sortedKinds lists a by-kind count's kinds in name order, for output that
// does not depend on map order.
func sortedKinds(m map[sched.OutcomeKind]int) []string {
	kinds := make([]string, 0, len(m))
	for k := range m {
		kinds = append(kinds, string(k))
	}
	sort.Strings(kinds)
	return kinds
}

// writeStats prints --stats: conflict-prediction accuracy, the real time
// per trial by phase, stops per trial and the eBPF connection records.
func writeStats(w io.Writer, s *result.Summary) {
	if len(s.Stats) > 0 {
		fmt.Fprintln(w, "conflict prediction (per trial, mean):")
		var ops, conf, fn, fp float64
		for _, st := range s.Stats {
			ops += float64(st.Ops)
			conf += float64(st.Conflicting)
			fn += float64(st.FalseNegatives)
			fp += float64(st.FalsePositives)
		}
		n := float64(len(s.Stats))
		fmt.Fprintf(w, "  ops %.1f  conflicting %.1f  false negatives %.2f  false positives %.1f\n", ops/n, conf/n, fn/n, fp/n)
	}
	if s.Census != nil {
		writeCensus(w, s.Census)
	}
	var ct result.ConntrackStats
	for _, r := range s.Results {
		ct.Recvs += r.Conntrack.Recvs
		ct.Matched += r.Conntrack.Matched
		ct.Disagreed += r.Conntrack.Disagreed
		if ct.First == "" && r.Conntrack.First != "" {
			ct.First = fmt.Sprintf("trial %d, %s", r.Index, r.Conntrack.First)
		}
	}
	if n := time.Duration(len(s.Results)); n > 0 {
		var all, launch, settle, handle, decide, release, teardown, reset, nodes, yield, confirm, blocked time.Duration
		var finw, late, starved, missed int
		var stops, freed, clocks, waits, skipped uint64
		for _, r := range s.Results {
			all += r.Duration
			launch += r.Launch
			settle += r.Stats.SettleTime
			handle += r.Stats.HandleTime
			decide += r.Stats.DecideTime
			release += r.Stats.ReleaseTime
			teardown += r.Teardown
			reset += r.Reset
			nodes += r.NodesCPU
			yield += r.Stats.SettleYield
			confirm += r.Stats.SettleConfirm
			blocked += r.Stats.SettleBlocked
			finw += r.Stats.FinWaitsExpired
			late += r.Stats.ArrivalsLate
			starved += r.Stats.Starved
			missed += r.Stats.BooksMissed
			stops += r.Stats.Stops
			freed += r.Stats.Released
			clocks += r.Stats.ClockReads
			waits += r.Stats.TimedWaits
			skipped += r.Stats.SleepersSkipped
		}
		ms := func(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d/n)/1e6) }
		fmt.Fprintf(w, "real time per trial (mean): %s = start nodes %s, wait for quiescence %s (stops handled %s), decide %s, release %s, teardown %s, network reset %s; FIN waits expired %.1f, deliveries late %.1f, starved states %.1f, readiness the books missed %.1f\n",
			ms(all), ms(launch), ms(settle), ms(handle), ms(decide), ms(release), ms(teardown), ms(reset), float64(finw)/float64(n), float64(late)/float64(n), float64(starved)/float64(n), float64(missed)/float64(n))
		fmt.Fprintf(w, "of the wait for quiescence (mean): yielding to running threads %s, confirming sleepers %s, blocked for events %s; the nodes' CPU time %s; sleepers not read again (their node had not run) %d\n",
			ms(yield), ms(confirm), ms(blocked), ms(nodes), skipped/uint64(n))
		fmt.Fprintf(w, "stops per trial (mean): %d, of which released at once %d, clock reads %d, timed waits %d\n",
			stops/uint64(n), freed/uint64(n), clocks/uint64(n), waits/uint64(n))
	}
	if ct.Recvs > 0 {
		fmt.Fprintf(w, "connection records (eBPF): %d recvs, %d matched to their bytes, %d named other deliveries than lockstep's accounting\n",
			ct.Recvs, ct.Matched, ct.Disagreed)
		if ct.First != "" {
			fmt.Fprintf(w, "  first: %s\n", ct.First)
		}
	}
}

// maxUnique is how many of a failing trial's features no passing trial had
// the summary names.
const maxUnique = 6

// writeUnique names what the first failing trial showed that no passing
// trial did: where to look first.
func writeUnique(w io.Writer, unique []string) {
	if len(unique) == 0 {
		return
	}
	shown := unique[:min(len(unique), maxUnique)]
	more := ""
	if n := len(unique) - len(shown); n > 0 {
		more = fmt.Sprintf("; and %d more", n)
	}
	fmt.Fprintf(w, "  features no passing trial showed (%d): %s%s\n", len(unique), strings.Join(shown, "; "), more)
}

// censusTop is how many signatures --stats lists.
const censusTop = 10

// writeCensus prints what decides whether conflict analysis pays: how many
// ops were released at once, how many share a signature with ops that
// conflicted, how the history grew, and the signatures with the most ops.
func writeCensus(w io.Writer, c *conflict.Census) {
	trials := c.Trials()
	if trials == 0 {
		return
	}
	sigs := c.Signatures()
	var ops, imm, fn int
	for _, s := range sigs {
		ops += s.Ops
		imm += s.Immediate
		fn += s.FalseNegatives
	}
	mixed, _ := c.Mixed()
	n := float64(trials)
	fmt.Fprintf(w, "  released at once %.1f of %.1f ops per trial (%s), of them conflicting %.2f; not conflicting but signed like ops that did %.1f\n",
		float64(imm)/n, float64(ops)/n, percent(imm, ops), float64(fn)/n, float64(mixed)/n)
	curve := c.Curve()
	var marks []string
	for _, t := range []int{1, 10, 100, 1000, 10000} {
		if t <= len(curve) {
			marks = append(marks, fmt.Sprintf("after %d trials %d (%d conflicted)", t, curve[t-1][0], curve[t-1][1]))
		}
	}
	last := curve[len(curve)-1]
	marks = append(marks, fmt.Sprintf("at the end %d (%d conflicted)", last[0], last[1]))
	fmt.Fprintf(w, "  signatures: %s\n", strings.Join(marks, ", "))
	fmt.Fprintf(w, "  the signatures with the most ops (ops per trial, conflicting, released at once):\n")
	for _, s := range sigs[:min(len(sigs), censusTop)] {
		fmt.Fprintf(w, "    %6.1f %4s %4s  %s\n", float64(s.Ops)/n, percent(s.Conflicting, s.Ops), percent(s.Immediate, s.Ops), s.Key)
	}
}

func percent(a, b int) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(a)/float64(b))
}
