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
