package report

import (
	"fmt"
	"io"

	"github.com/lockstep-dev/lockstep/coverage"
	"github.com/lockstep-dev/lockstep/sched"
)

// WriteTrace prints a trace's interleaving for `lockstep show`: a header,
// the outcome, then one line per released op. A send or delivery whose
// bytes the trace kept ends with its message's kind, numbered as
// `lockstep kinds` numbers this trace's. The points where real time, not
// a decision, settled what ran (sched.Record.Timed) come before the op
// decided after them, each on a line of its own.
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
	kinds := messageKinds(tr)
	fmt.Fprintln(w, "Event trace:")
	width := 16
	for _, r := range tr.Records {
		width = max(width, len(r.Op.LPID))
	}
	fmt.Fprintf(w, "  %5s  %9s  %-10s %-*s %-22s %-22s %s\n", "step", "vtime", "node", width, "lpid", "op", "peer", "bytes")
	timed := 0
	for i, r := range tr.Records {
		for _, n := range r.Timed {
			fmt.Fprintf(w, "  %5s  real time: %s\n", "", n)
		}
		timed += len(r.Timed)
		line := sched.FormatRecordWide(r, width)
		if k := kinds[i]; k != nil {
			line += "  " + k.Label()
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintf(w, "%d ops", len(tr.Records))
	if timed > 0 {
		fmt.Fprintf(w, "; real time settled what ran at %s", plural(timed, "point"))
	}
	fmt.Fprintln(w)
}

// messageKinds is the kind of each record's message, by the record's
// index: a delivery's, and a send's (its delivery's when one carried it).
func messageKinds(tr *sched.Trace) map[int]*coverage.Kind {
	msgs, sendKinds := coverage.NewKinds().Messages(tr)
	out := map[int]*coverage.Kind{}
	for _, m := range msgs {
		out[m.Record] = m.Kind
	}
	for i, r := range tr.Records {
		if k := sendKinds[r.Op.ID]; k != nil && r.Op.Kind == sched.Send {
			out[i] = k
		}
	}
	return out
}

// WriteKinds lists the kinds of messages of a campaign for `lockstep
// kinds`, by protocol (the serving port) then number: each kind's label,
// how many messages had it, and the first one's bytes.
func WriteKinds(w io.Writer, ks []*coverage.Kind, traces int) {
	messages := 0
	protos := map[string][]*coverage.Kind{}
	var order []string
	for _, k := range ks {
		messages += k.Count
		if _, ok := protos[k.Proto]; !ok {
			order = append(order, k.Proto)
		}
		protos[k.Proto] = append(protos[k.Proto], k)
	}
	fmt.Fprintf(w, "%d kinds of %d messages in %s\n", len(ks), messages, plural(traces, "trace"))
	for _, p := range order {
		n := 0
		for _, k := range protos[p] {
			n += k.Count
		}
		fmt.Fprintf(w, "\nport %s: %s, %s\n", p, plural(len(protos[p]), "kind"), plural(n, "message"))
		for _, k := range protos[p] {
			ex := k.Example[:min(len(k.Example), exampleLen)]
			fmt.Fprintf(w, "  %-56s %7d  %s\n", k.Label(), k.Count, sched.FormatData(ex, k.ExampleLen))
		}
	}
}

// exampleLen is how many bytes of a kind's example WriteKinds shows.
const exampleLen = 40

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
