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
	frames int  // call-site frames used (1 = the return address only)
}

// Schemes from Morpheus's evaluation; DefaultScheme is "pid+pc".
var (
	SchemePC      = Scheme{pid: false, frames: 1}
	SchemePIDPC   = Scheme{pid: true, frames: 1}
	DefaultScheme = SchemePIDPC
)

// ParseScheme parses "pc", "pid+pc" or "pid+stack:K" (K from 1 to 16);
// "" is the default.
func ParseScheme(s string) (Scheme, error) {
	switch s {
	case "":
		return DefaultScheme, nil
	case "pc":
		return SchemePC, nil
	case "pid+pc":
		return SchemePIDPC, nil
	}
	if k, ok := strings.CutPrefix(s, "pid+stack:"); ok {
		n, err := strconv.Atoi(k)
		if err != nil || n < 1 || n > 16 {
			return Scheme{}, fmt.Errorf("signature scheme %q: K must be an integer from 1 to 16", s)
		}
		return Scheme{pid: true, frames: n}, nil
	}
	return Scheme{}, fmt.Errorf("unknown signature scheme %q (want pc, pid+pc or pid+stack:K)", s)
}

func (s Scheme) String() string {
	switch {
	case !s.pid:
		return "pc"
	case s.frames <= 1:
		return "pid+pc"
	}
	return fmt.Sprintf("pid+stack:%d", s.frames)
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
	return sig.LPID + "@" + site
}
