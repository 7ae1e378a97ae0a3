package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/spec"
)

// A hold of one kind of message (hold-kind.yaml: data messages, each on a
// connection of its own beside the beats): no data message goes to (or
// from) the held server before the hold's end, while its beats do, and so
// does everything the other way; the held data come after.
func checkHoldKind(t *testing.T, nt netTrial) []string {
	return checkDataHeld(t, nt, "hold-kind.yaml", "messages ", func(b []byte) bool { return strings.Contains(string(b), " data ") })
}

// A gray (gray.yaml: beats every 100 ms, data every third time, each kind
// on a connection of its own): while it lasts, no data message goes to (or
// from) the gray server, while the kind it has had most, its beats, do, and
// everything the other way flows; the held data come after. The trace says
// which kind it let through.
func checkGray(t *testing.T, nt netTrial) []string {
	if f := nt.recs[nt.fault].Op; !strings.Contains(f.Peer, `but "beat"`) {
		t.Errorf("gray %s: %q, want the beats let through", f.Conn, f.Peer)
	}
	return checkDataHeld(t, nt, "gray.yaml", "gray ", func(b []byte) bool { return strings.HasPrefix(string(b), "data ") })
}

// checkDataHeld checks a fault that holds the data messages to or from one
// server (its Conn: prefix, then "to NODE" or "from NODE") until its end
// or the quiet period of the spec named, while the rest flows; it reports
// what the trial showed.
func checkDataHeld(t *testing.T, nt netTrial, specName, prefix string, isData func([]byte) bool) []string {
	f := nt.recs[nt.fault]
	sp, err := spec.Load(repoPath("testdata", "specs", "faults", specName))
	if err != nil {
		t.Fatal(err)
	}
	end := min(f.VTime+f.Op.Delay, int64(sp.Faults.Until))
	to, node := false, ""
	if n, ok := strings.CutPrefix(f.Op.Conn, prefix+"to "); ok {
		to, node = true, n
	} else if n, ok := strings.CutPrefix(f.Op.Conn, prefix+"from "); ok {
		node = n
	} else {
		t.Fatalf("%v %q names no node's messages", f.Op.Kind, f.Op.Conn)
	}
	var out []string
	for _, rec := range nt.recs[nt.fault:] {
		if rec.Op.Kind != sched.Deliver {
			continue
		}
		src, dst := rec.Op.Node, nt.nodes[addrOf(rec.Op.Peer).String()]
		held := to && dst == node || !to && src == node
		data := isData(rec.Data)
		switch {
		case held && data && rec.VTime < end:
			t.Fatalf("step %d: %s>%s %q delivered at %v, held until %v", rec.Step, src, dst, rec.Data, time.Duration(rec.VTime), time.Duration(end))
		case held && data:
			out = append(out, "data released at the end")
		case held && rec.VTime < end:
			out = append(out, "beats flow")
		case rec.VTime < end:
			out = append(out, "other way flows")
		}
	}
	return out
}
