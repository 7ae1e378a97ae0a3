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
	f := nt.recs[nt.fault]
	sp, err := spec.Load(repoPath("testdata", "specs", "faults", "hold-kind.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	end := min(f.VTime+f.Op.Delay, int64(sp.Faults.Until))
	to, node := false, ""
	if n, ok := strings.CutPrefix(f.Op.Conn, "messages to "); ok {
		to, node = true, n
	} else if n, ok := strings.CutPrefix(f.Op.Conn, "messages from "); ok {
		node = n
	} else {
		t.Fatalf("hold %q names no node's messages", f.Op.Conn)
	}
	var out []string
	for _, rec := range nt.recs[nt.fault:] {
		if rec.Op.Kind != sched.Deliver {
			continue
		}
		src, dst := rec.Op.Node, nt.nodes[addrOf(rec.Op.Peer).String()]
		held := to && dst == node || !to && src == node
		data := strings.Contains(string(rec.Data), " data ")
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

// A gray (gray.yaml: beats every 100 ms, data every third time, each kind
// on a connection of its own): while it lasts, no data message goes to (or
// from) the gray server, while the kind it has had most, its beats, do, and
// everything the other way flows; the held data come after. The trace says
// which kind it let through.
func checkGray(t *testing.T, nt netTrial) []string {
	f := nt.recs[nt.fault]
	sp, err := spec.Load(repoPath("testdata", "specs", "faults", "gray.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	end := min(f.VTime+f.Op.Delay, int64(sp.Faults.Until))
	to, node := false, ""
	if n, ok := strings.CutPrefix(f.Op.Conn, "gray to "); ok {
		to, node = true, n
	} else if n, ok := strings.CutPrefix(f.Op.Conn, "gray from "); ok {
		node = n
	} else {
		t.Fatalf("gray %q names no node's messages", f.Op.Conn)
	}
	if !strings.Contains(f.Op.Peer, `but "beat"`) {
		t.Errorf("gray %s: %q, want the beats let through", f.Op.Conn, f.Op.Peer)
	}
	var out []string
	for _, rec := range nt.recs[nt.fault:] {
		if rec.Op.Kind != sched.Deliver {
			continue
		}
		src, dst := rec.Op.Node, nt.nodes[addrOf(rec.Op.Peer).String()]
		gray := to && dst == node || !to && src == node
		data := strings.HasPrefix(string(rec.Data), "data ")
		switch {
		case gray && data && rec.VTime < end:
			t.Fatalf("step %d: %s>%s %q delivered at %v, gray until %v", rec.Step, src, dst, rec.Data, time.Duration(rec.VTime), time.Duration(end))
		case gray && data:
			out = append(out, "data released at the end")
		case gray && rec.VTime < end:
			out = append(out, "beats flow")
		case rec.VTime < end:
			out = append(out, "other way flows")
		}
	}
	return out
}
