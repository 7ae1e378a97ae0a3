package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/sched"
)

// TestWriteTraceKinds: show ends each send and delivery whose bytes the
// trace kept with its message's kind, a send and its delivery alike.
func TestWriteTraceKinds(t *testing.T) {
	rec := func(step int, kind sched.Kind, id uint64, conn, data string, causes ...uint64) sched.Record {
		return sched.Record{Step: step, Op: sched.Op{ID: id, Node: "c1", LPID: "c1/0/t0", Kind: kind, Conn: conn, Bytes: len(data)},
			Data: []byte(data), Causes: causes, Result: int64(len(data))}
	}
	const (
		out  = "10.77.0.4:32768>10.77.0.1:6379"
		back = "10.77.0.1:6379>10.77.0.4:32768"
	)
	tr := &sched.Trace{Header: sched.Header{Spec: "redis.yaml", Strategy: "pos"}, Records: []sched.Record{
		{Step: 1, Op: sched.Op{ID: 1, Node: "c1", LPID: "c1/0/t0", Kind: sched.Connect, Object: "listen:10.77.0.1:6379"}},
		rec(2, sched.Send, 2, out, "*3\r\n$3\r\nSET\r\n$2\r\nk1\r\n$6\r\nc1-0-0\r\n"),
		rec(3, sched.Deliver, 3, out, "*3\r\n$3\r\nSET\r\n$2\r\nk1\r\n$6\r\nc1-0-0\r\n", 2),
		rec(4, sched.Deliver, 4, back, "+OK\r\n"),
		rec(5, sched.Deliver, 5, out, "*3\r\n$3\r\nSET\r\n$2\r\nk0\r\n$6\r\nc1-0-1\r\n"),
		rec(6, sched.Deliver, 6, out, "*2\r\n$3\r\nGET\r\n$2\r\nk1\r\n"),
		rec(7, sched.Recv, 7, back, "+OK\r\n"),
	}}
	var b bytes.Buffer
	WriteTrace(&b, tr)
	lines := strings.Split(b.String(), "\n")[3:] // after the header, "Event trace:" and the columns
	for i, want := range []string{"", `  k1 "SET"`, `  k1 "SET"`, `  k2 "+OK"`, `  k1 "SET"`, `  k3 "GET"`, `"+OK\r\n"`} {
		if !strings.HasSuffix(lines[i], want) {
			t.Errorf("line %q, want it to end with %q", lines[i], want)
		}
	}
}

// TestWriteTraceTimed: show puts each point where real time settled what
// ran on a line of its own, before the op decided after it, and counts
// them at the end.
func TestWriteTraceTimed(t *testing.T) {
	loop := "clock loop: n1/0/t0.1 read the stopped clock while n1/0/t0 waited to run alone"
	tr := &sched.Trace{Header: sched.Header{Spec: "s.yaml", Strategy: "pos"}, Records: []sched.Record{
		{Step: 1, Op: sched.Op{ID: 1, Node: "n1", LPID: "n1/0/t0", Kind: sched.Sleep}},
		{Step: 2, Op: sched.Op{ID: 2, Node: "n1", LPID: "n1/0/t0.1", Kind: sched.Sleep}, Timed: []string{loop}},
	}}
	var b bytes.Buffer
	WriteTrace(&b, tr)
	lines := strings.Split(b.String(), "\n")[3:]
	if len(lines) < 4 || !strings.HasSuffix(lines[1], "real time: "+loop) || !strings.Contains(lines[2], "n1/0/t0.1") {
		t.Fatalf("the point is not on its own line before step 2:\n%s", b.String())
	}
	if !strings.HasSuffix(lines[3], "2 ops; real time settled what ran at 1 point") {
		t.Errorf("last line %q does not count the points", lines[3])
	}
}
