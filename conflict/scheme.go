package conflict

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/lockstep-dev/lockstep/sched"
)

// Scheme says which parts of an op make its signature.
type Scheme struct {
	pid    bool // include the logical process id
	thread bool // with pid: also the thread ("n/0/t3", not "n/0")
	frames int  // call-site frames used (1 = the return address only)
}

// Schemes: "pc" and "pid+pc" are Morpheus's, whose logical processes
// are Erlang processes; lockstep's threads are not as stable. Go runs a
// goroutine's syscalls on whichever OS thread is free, and a JVM numbers
// its threads in the order they race to be created, so "n/0/t3" names
// another thread in the next trial and a history keyed by it learns
// little. DefaultScheme, "proc+pc", keys by process and call site.
var (
	SchemePC       = Scheme{frames: 1}
	SchemePIDPC    = Scheme{pid: true, thread: true, frames: 1}
	SchemeProcPC   = Scheme{pid: true, frames: 1}
	DefaultScheme  = SchemeProcPC
	schemeSyntaxes = "pc, proc+pc, pid+pc, proc+stack:K or pid+stack:K"
)

// ParseScheme parses "pc", "proc+pc", "pid+pc", "proc+stack:K" or
// "pid+stack:K" (K from 1 to 16); "" is the default.
func ParseScheme(s string) (Scheme, error) {
	switch s {
	case "":
		return DefaultScheme, nil
	case "pc":
		return SchemePC, nil
	case "pid+pc":
		return SchemePIDPC, nil
	case "proc+pc":
		return SchemeProcPC, nil
	}
	for _, p := range []struct {
		prefix string
		thread bool
	}{{"pid+stack:", true}, {"proc+stack:", false}} {
		if k, ok := strings.CutPrefix(s, p.prefix); ok {
			n, err := strconv.Atoi(k)
			if err != nil || n < 1 || n > 16 {
				return Scheme{}, fmt.Errorf("signature scheme %q: K must be an integer from 1 to 16", s)
			}
			return Scheme{pid: true, thread: p.thread, frames: n}, nil
		}
	}
	return Scheme{}, fmt.Errorf("unknown signature scheme %q (want %s)", s, schemeSyntaxes)
}

func (s Scheme) String() string {
	who := "proc"
	if s.thread {
		who = "pid"
	}
	switch {
	case !s.pid:
		return "pc"
	case s.frames <= 1:
		return who + "+pc"
	}
	return fmt.Sprintf("%s+stack:%d", who, s.frames)
}

// Frames is how many call-site frames the tracer must collect.
func (s Scheme) Frames() int { return max(s.frames, 1) }

// Key is the history key of a signature under this scheme. Sites with
// several frames are joined with ';' by the tracer; a scheme uses at most
// its own number of them.
func (s Scheme) Key(sig sched.Signature) string {
	site := sig.Site
	if s.frames >= 1 {
		parts := strings.SplitN(site, ";", s.frames+1)
		if len(parts) > s.frames {
			parts = parts[:s.frames]
		}
		site = strings.Join(parts, ";")
	}
	if !s.pid {
		return site
	}
	if !s.thread {
		return sig.Process() + "@" + site
	}
	return sig.LPID + "@" + site
}
