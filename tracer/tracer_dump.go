package tracer

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

// DumpThreads writes one line per traced thread: its LPID and TID, the
// program, what lockstep holds it at (or that it runs) and what the kernel
// says it is doing (state, wait channel, syscall). A trial that ends
// without the nodes doing what they should (a deadlock, a virtual-time
// limit) leaves this beside its trace: whether a stall is the system's or
// a thread lockstep misjudged shows here and nowhere else.
func (t *Tracer) DumpThreads(w io.Writer) error {
	var lines []string
	if err := t.do(func() {
		for _, th := range t.pt.threads {
			lines = append(lines, th.describe(syscallName))
		}
	}); err != nil {
		return err
	}
	sort.Strings(lines)
	for _, l := range lines {
		if _, err := io.WriteString(w, l+"\n"); err != nil {
			return err
		}
	}
	return nil
}

var stateNames = [...]string{
	tsNew: "new", tsRunning: "running", tsGated: "gated", tsTimedWait: "timed-wait",
	tsGroupStop: "group-stop", tsHeld: "held", tsAlone: "alone",
}

func (th *thread) describe(syscallName func(int) string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s tid %d", th.lpid, th.tid)
	base := "/proc/" + strconv.Itoa(th.tid)
	if comm, err := os.ReadFile(base + "/comm"); err == nil {
		fmt.Fprintf(&b, " (%s)", bytes.TrimSpace(comm))
	}
	name := "?"
	if int(th.state) < len(stateNames) {
		name = stateNames[th.state]
	}
	fmt.Fprintf(&b, ": lockstep %s", name)
	if th.pending != nil {
		fmt.Fprintf(&b, " at #%d %s(%s)", th.pending.op.ID, th.pending.op.Kind, th.pending.op.Syscall)
	}
	if th.state == tsTimedWait {
		fmt.Fprintf(&b, " until %d", th.waitDeadline)
	}
	if s, cpu, ok := th.kernelState(); ok {
		fmt.Fprintf(&b, "; kernel %c, cpu %dns", s, cpu)
	} else {
		b.WriteString("; gone")
		return b.String()
	}
	if wc, err := os.ReadFile(base + "/wchan"); err == nil && len(wc) > 0 && string(wc) != "0" {
		fmt.Fprintf(&b, ", in %s", wc)
	}
	if sc, err := os.ReadFile(base + "/syscall"); err == nil {
		f := strings.Fields(string(sc))
		if len(f) > 0 {
			if nr, err := strconv.Atoi(f[0]); err == nil {
				f[0] = syscallName(nr)
			}
			fmt.Fprintf(&b, ", syscall %s", strings.Join(f[:min(len(f), 4)], " "))
		}
	}
	return b.String()
}
