package report

import (
	"fmt"
	"io"

	"github.com/lockstep-dev/lockstep/sched"
)

// WriteTrace prints a trace's interleaving for `lockstep show`: a header,
// the outcome, then one line per released op.
func WriteTrace(w io.Writer, tr *sched.Trace) {
	h := tr.Header
	fmt.Fprintf(w, "Trace of %s, trial %d, seed %d, strategy %s\n", h.Spec, h.Trial, h.Seed, h.Strategy)
	if tr.Outcome != nil {
		fmt.Fprintf(w, "Outcome: %s", tr.Outcome.Kind)
		if tr.Outcome.Detail != "" {
			fmt.Fprintf(w, ": %s", tr.Outcome.Detail)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "Event trace:")
	fmt.Fprintf(w, "  %5s  %9s  %-10s %-16s %-22s %-22s %s\n", "step", "vtime", "node", "lpid", "op", "peer", "bytes")
	for _, r := range tr.Records {
		fmt.Fprintln(w, sched.FormatRecord(r))
	}
	fmt.Fprintf(w, "%d ops\n", len(tr.Records))
}
