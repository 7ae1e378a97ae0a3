package engine

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/bpf"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/spec"
	"golang.org/x/sys/unix"
)

// TestJoinConntrack: recvs get the deliveries whose bytes they consumed
// from kernel sequence numbers, whether a recv spans two deliveries, a
// delivery is split over two recvs, or lockstep wrote one delivery in two
// sends, or a delivery found the send buffer full and wrote only part of
// its bytes (the rest is a delivery of its own); other causes stay, and a
// timed-out recv is left alone.
func TestJoinConntrack(t *testing.T) {
	const self = 100
	src := netip.MustParseAddrPort("10.77.0.2:40000")
	dst := netip.MustParseAddrPort("10.77.0.1:7000")
	conn := src.String() + ">" + dst.String()
	const isn = 0xfffffff0 // the ranges wrap around 2^32
	send := func(off, n int) bpf.Event {
		return bpf.Event{Kind: bpf.EvSend, Proto: unix.IPPROTO_TCP, PID: self, Local: src, Remote: dst, Seq: uint32(isn + 1 + off), Len: n}
	}
	recv := func(off, n int) bpf.Event {
		return bpf.Event{Kind: bpf.EvRecv, Proto: unix.IPPROTO_TCP, PID: 7, Local: dst, Remote: src, Seq: uint32(isn + 1 + off), Len: n}
	}
	rec := func(id uint64, k sched.Kind, bytes int, causes ...uint64) sched.Record {
		r := sched.Record{Op: sched.Op{ID: id, Kind: k, Conn: conn, Bytes: bytes, LPID: "n1/0/t0", Syscall: "read"}, Causes: causes}
		if k == sched.Deliver {
			r.Result = int64(bytes) // what it wrote
		}
		return r
	}
	records := []sched.Record{
		rec(1, sched.Deliver, 4),
		rec(2, sched.Deliver, 6),
		rec(3, sched.Recv, 4096, 1, 2, 99), // spans both; 99 is a thread-creation cause
		rec(4, sched.Deliver, 8),           // written in two sends
		rec(5, sched.Recv, 3, 4),
		rec(6, sched.Recv, 4096),      // lockstep's accounting missed it
		rec(7, sched.Recv, 4096, 123), // timed out: untouched
		rec(8, sched.Deliver, 6),      // wrote 2 of its 6 bytes
		rec(9, sched.Deliver, 4),      // the other 4
		rec(10, sched.Recv, 4096, 8),
		rec(11, sched.Recv, 4096, 8, 9),
	}
	records[6].Result = -int64(unix.EAGAIN)
	records[7].Result = 2
	evs := []bpf.Event{
		send(0, 4), send(4, 6), recv(0, 10),
		send(10, 5), send(15, 3), recv(10, 3), recv(13, 5),
		send(18, 2), recv(18, 2), send(20, 4), recv(20, 4),
		{Kind: bpf.EvSend, Proto: unix.IPPROTO_TCP, PID: 7, Local: src, Remote: dst, Seq: 1, Len: 1}, // a tracee's own send: ignored
	}
	st, detail := joinConntrackDetail(records, evs, self)
	want := map[uint64]string{3: "[99 1 2]", 5: "[4]", 6: "[4]", 7: "[123]", 10: "[8]", 11: "[9]"}
	results := map[uint64]int64{3: 10, 5: 3, 6: 5, 7: -int64(unix.EAGAIN), 10: 2, 11: 4}
	for _, r := range records {
		if w, ok := want[r.Op.ID]; ok && fmt.Sprint(r.Causes) != w {
			t.Errorf("recv #%d causes %v, want %s", r.Op.ID, r.Causes, w)
		}
		if w, ok := results[r.Op.ID]; ok && r.Result != w {
			t.Errorf("recv #%d result %d, want %d", r.Op.ID, r.Result, w)
		}
	}
	first := st.First
	st.First = ""
	if st != (ConntrackStats{Recvs: 5, Matched: 5, Disagreed: 2}) {
		t.Errorf("stats %+v", st)
	}
	if !strings.Contains(first, "recv #6 ") || !strings.Contains(first, "deliveries [4], lockstep's accounting []") {
		t.Errorf("first disagreement %q, want recv #6's: kernel [4], lockstep none", first)
	}
	// What the disagreeing connection held, before and after the join.
	for _, w := range []string{
		"connection " + conn + ": lockstep's records",
		"#6 recv n1/0/t0 read asked 4096 nonblocking=false: result 0 causes [] -> result 5 causes [4]\n",
		"#3 recv n1/0/t0 read asked 4096 nonblocking=false: result 0 causes [1 2 99] -> result 10 causes [99 1 2]\n",
		"#7 recv n1/0/t0 read asked 4096 nonblocking=false: result -11 causes [123] (no kernel record)\n",
		"#8 deliver 6 bytes, wrote 2\n",
		"  lockstep wrote 4 bytes at seq 4294967281\n",
		"  pid 7 tid 0 read 5 bytes at seq 4294967294\n",
	} {
		if !strings.Contains(detail, w) {
			t.Errorf("detail lacks %q:\n%s", w, detail)
		}
	}
	if strings.Contains(detail, "seq 1\n") {
		t.Errorf("detail lists a tracee's own send:\n%s", detail)
	}
	// Where they agree, nothing is kept.
	agree := []sched.Record{rec(1, sched.Deliver, 4), rec(2, sched.Recv, 4096, 1)}
	if st, detail := joinConntrackDetail(agree, []bpf.Event{send(0, 4), recv(0, 4)}, self); st.Disagreed != 0 || detail != "" {
		t.Errorf("agreeing records: %+v, detail %q", st, detail)
	}
}

// TestPipelineAccounting runs a client that pipelines its commands in
// consecutive writes against a server that answers each in a write of its
// own, both reading a few bytes at a time (the server with read, readv,
// recvmsg or recv with MSG_WAITALL), under every strategy: each recv with
// data finds its kernel record, and the kernel's byte ranges name the same
// deliveries as lockstep's own accounting. With readv and recvmsg lockstep
// once counted every byte waiting as read, whatever the buffers' size
// (about 44 of 100 recvs a trial differed); a recv with MSG_WAITALL that
// slept for more bytes missed the deliveries that brought them (5 to 41).
func TestPipelineAccounting(t *testing.T) {
	requireTrials(t)
	for _, tc := range []struct{ read, strategy string }{
		{"read", "random"}, {"read", "pct"}, {"read", "pos"},
		{"readv", "random"}, {"recvmsg", "random"}, {"recvmsg", "pos"},
		{"waitall", "random"}, {"waitall", "pos"},
	} {
		t.Run(tc.read+"/"+tc.strategy, func(t *testing.T) {
			sp, err := spec.Load(repoPath("testdata", "specs", "pipeline.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			sp.Nodes[0].Command = append(sp.Nodes[0].Command, tc.read)
			strategy := tc.strategy
			seed := int64(1)
			sum, err := Run(context.Background(), sp, RunOptions{Trials: 5, Strategy: strategy, Seed: &seed, OutDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range sum.Results {
				if r.Outcome.Kind != Pass {
					t.Fatalf("trial %d: %v", r.Index, r.Outcome)
				}
				ct := r.Conntrack
				if ct.Recvs == 0 {
					t.Skip("skipping: no eBPF connection records (needs BPF)")
				}
				if ct.Matched != ct.Recvs || ct.Disagreed != 0 {
					t.Errorf("trial %d: conntrack %+v, first disagreement: %s", r.Index, ct, ct.First)
				}
			}
		})
	}
}
