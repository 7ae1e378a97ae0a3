package coverage

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/sched"
)

func readFixture(t *testing.T, name string) *sched.Trace {
	t.Helper()
	tr, err := ReadTrace(filepath.Join("testdata", name+".trace.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// kindsOf classifies a fixture's messages and returns, for each message
// whose first bytes match, the kinds it got.
func kindsOf(t *testing.T, ks *Kinds, tr *sched.Trace, match func([]byte) bool) []*Kind {
	t.Helper()
	msgs, _ := ks.Messages(tr)
	var out []*Kind
	for _, m := range msgs {
		if match(tr.Records[m.Record].Data) && !slices.Contains(out, m.Kind) {
			out = append(out, m.Kind)
		}
	}
	return out
}

func prefix(p string) func([]byte) bool {
	return func(b []byte) bool { return bytes.HasPrefix(b, []byte(p)) }
}

func contains(p string) func([]byte) bool {
	return func(b []byte) bool { return bytes.Contains(b, []byte(p)) }
}

// TestFixtureKinds reads real traces (coverage/testdata) and checks that
// their kinds separate what they should: each protocol's messages of one
// statement are one kind whatever their values, different statements'
// messages are different kinds.
func TestFixtureKinds(t *testing.T) {
	t.Run("raft", func(t *testing.T) {
		tr := readFixture(t, "raft")
		one := map[string]func([]byte) bool{
			"RequestVote":         prefix("\x01"),
			"RequestPreVote":      prefix("\x04"),
			"TimeoutNow":          prefix("\x03"),
			"heartbeat":           contains("\xa7Entries\xc0"),
			"AppendEntries, none": contains("\xa7Entries\x90"),
			"vote answer":         contains("\xa5Peers"),
			"pre-vote answer": func(b []byte) bool {
				return bytes.Contains(b, []byte("\xa7Granted")) && !bytes.Contains(b, []byte("\xa5Peers"))
			},
			"append answer": contains("\xaeNoRetryBackoff"),
		}
		ks := NewKinds()
		got := map[string]*Kind{}
		for name, match := range one {
			k := kindsOf(t, ks, tr, match)
			if len(k) != 1 {
				t.Errorf("%s: %d kinds, want 1: %v", name, len(k), labels(k))
				continue
			}
			got[name] = k[0]
			if k[0].Proto != ":7000" {
				t.Errorf("%s: protocol %q, want :7000 (the members' port)", name, k[0].Proto)
			}
		}
		appends := kindsOf(t, ks, tr, func(b []byte) bool {
			return bytes.HasPrefix(b, []byte("\x00")) && bytes.Contains(b, []byte("\xa7Entries")) &&
				!bytes.Contains(b, []byte("\xa7Entries\xc0")) && !bytes.Contains(b, []byte("\xa7Entries\x90"))
		})
		if len(appends) == 0 || len(appends) > 3 {
			t.Errorf("AppendEntries with entries: %d kinds, want 1 to 3: %v", len(appends), labels(appends))
		}
		for name, k := range got {
			if slices.Contains(appends, k) {
				t.Errorf("%s and AppendEntries with entries share kind %s", name, k.Label())
			}
			for other, k2 := range got {
				if other != name && k == k2 {
					t.Errorf("%s and %s share kind %s", name, other, k.Label())
				}
			}
		}
		if k := kindsOf(t, ks, tr, prefix("GET /state ")); len(k) != 1 || k[0].Proto != ":8000" || k[0].Shape != "GET /state" {
			t.Errorf("admin GET /state: %v", labels(k))
		}
	})

	t.Run("etcd", func(t *testing.T) {
		tr := readFixture(t, "etcd")
		ks := NewKinds()
		put := kindsOf(t, ks, tr, prefix("POST /v3/kv/put "))
		rng := kindsOf(t, ks, tr, prefix("POST /v3/kv/range "))
		streams := kindsOf(t, ks, tr, prefix("GET /raft/stream/msgapp/"))
		if len(put) != 1 || len(rng) != 1 || put[0] == rng[0] || put[0].Proto != ":2379" {
			t.Errorf("gateway put %v and range %v: want one kind each, on :2379", labels(put), labels(rng))
		}
		if len(streams) != 1 || streams[0].Proto != ":2380" {
			t.Errorf("msgapp streams to different members: %v, want one kind on :2380", labels(streams))
		}
	})

	t.Run("redis", func(t *testing.T) {
		tr := readFixture(t, "redis")
		ks := NewKinds()
		set := kindsOf(t, ks, tr, prefix("*3\r\n$3\r\nSET\r\n"))
		get := kindsOf(t, ks, tr, prefix("*2\r\n$3\r\nGET\r\n"))
		if len(set) != 1 || len(get) != 1 || set[0] == get[0] {
			t.Errorf("SET %v and GET %v: want one kind each, apart", labels(set), labels(get))
		}
		// PING to Redis and to Sentinel: one shape, two protocols.
		ping := kindsOf(t, ks, tr, prefix("*1\r\n$4\r\nPING\r\n"))
		var protos []string
		for _, k := range ping {
			protos = append(protos, k.Proto)
		}
		slices.Sort(protos)
		if !slices.Equal(protos, []string{":26379", ":6379"}) {
			t.Errorf("PING: %v, want one kind on :6379 and one on :26379", labels(ping))
		}
	})

	t.Run("locks-1", func(t *testing.T) {
		tr := readFixture(t, "locks-1")
		ks := NewKinds()
		ks.Messages(tr)
		var got []string
		for _, k := range ks.List() {
			got = append(got, k.Proto+" "+k.Shape)
		}
		want := []string{":7001 RESET", ":7000 ACQUIRE", ":7000 GRANT", ":7001 HOLD", ":7001 HELD", ":7001 FREE", ":7000 RELEASE", ":7000 RELEASED"}
		if !slices.Equal(got, want) {
			t.Errorf("kinds %q, want %q", got, want)
		}
	})

	// How many kinds each fixture has: a change here is a change in what
	// the shapes tell apart, to be looked at.
	for name, want := range map[string]int{"raft": 18, "etcd": 26, "redis": 27, "zookeeper": 15, "locks-1": 8, "lease-1": 10} {
		ks := NewKinds()
		ks.Messages(readFixture(t, name))
		if len(ks.List()) != want {
			t.Errorf("%s: %d kinds, want %d:\n%s", name, len(ks.List()), want, strings.Join(labels(ks.List()), "\n"))
		}
	}
}

func labels(ks []*Kind) []string {
	var out []string
	for _, k := range ks {
		out = append(out, k.Proto+" "+k.Label())
	}
	return out
}

// TestKindsDeterministic: the same traces in the same order give the same
// kinds with the same IDs; another order, the same kinds numbered
// otherwise.
func TestKindsDeterministic(t *testing.T) {
	names := []string{"raft", "etcd", "redis", "zookeeper", "locks-1", "lease-1"}
	run := func(order []string) []string {
		ks := NewKinds()
		for _, n := range order {
			ks.Messages(readFixture(t, n))
		}
		var out []string
		for _, k := range ks.List() {
			out = append(out, k.Label()+" "+k.Proto)
		}
		return out
	}
	a, b := run(names), run(names)
	if !slices.Equal(a, b) {
		t.Fatalf("two runs differ:\n%v\n%v", a, b)
	}
	rev := slices.Clone(names)
	slices.Reverse(rev)
	c := run(rev)
	if len(c) != len(a) {
		t.Fatalf("%d kinds one way, %d the other", len(a), len(c))
	}
	if slices.Equal(a, c) {
		t.Error("the reverse order numbered the kinds alike: IDs do not follow the order seen")
	}
}

func TestKindLabel(t *testing.T) {
	ks := NewKinds()
	k := ks.Classify(":7000", []byte(raftVote), len(raftVote))
	if want := `k1 "\x01{Addr:s Candidate:s ID:s LastLogIndex:i LastLo…"`; k.Label() != want {
		t.Errorf("label %s, want %s", k.Label(), want)
	}
	// A tag byte that is no UTF-8 stays one escaped byte.
	k = ks.Classify(":7000", []byte(raftVoteGranted), len(raftVoteGranted))
	if want := `k2 "\xa0{Addr:s Granted:b ID:s Peers:n ProtocolVersion…"`; k.Label() != want {
		t.Errorf("label %s, want %s", k.Label(), want)
	}
	if k := ks.Classify(":7000", nil, 10); k != nil {
		t.Errorf("a message with no bytes has kind %s", k.Label())
	}
}

// TestKindsCutShort: a message cut before its last keys joins the kind
// whose messages showed them.
func TestKindsCutShort(t *testing.T) {
	ks := NewKinds()
	whole := ks.Classify(":7000", []byte(raftHeartbeat), len(raftHeartbeat))
	cut := ks.Classify(":7000", []byte(raftHeartbeat[:60]), len(raftHeartbeat))
	if cut != whole || whole.Count != 2 {
		t.Errorf("cut short: %s, whole: %s (count %d)", cut.Label(), whole.Label(), whole.Count)
	}
	// A map cut after a key, with more keys to come, is not one that
	// ended there: hashicorp/raft's answers to a TimeoutNow (29 bytes)
	// and to an InstallSnapshot (44 bytes, cut at 32).
	ended := ks.Classify(":7000", []byte("\xa0\x83\xa4Addr\xc0\xa2ID\xc0\xafProtocolVersion\x00"), 29)
	more := "\xa0\x85\xa4Addr\xc0\xa2ID\xc0\xafProtocolVersion\x00\xa7Success\xc3\xa4Term\x05"
	if k := ks.Classify(":7000", []byte(more[:32]), len(more)); k == ended {
		t.Errorf("a map with more keys, cut, joined %s", ended.Label())
	}
	// Seen cut short first, it stays apart.
	ks = NewKinds()
	first := ks.Classify(":7000", []byte(raftHeartbeat[:60]), len(raftHeartbeat))
	if k := ks.Classify(":7000", []byte(raftHeartbeat), len(raftHeartbeat)); k == first {
		t.Errorf("the whole message joined the kind seen cut short, %s", k.Label())
	}
}

// TestProtocols: the serving side's port names a connection's protocol,
// whichever way the bytes go.
func TestProtocols(t *testing.T) {
	tr := &sched.Trace{Records: []sched.Record{
		{Op: sched.Op{Kind: sched.Accept, Node: "n1", Object: "listen:10.77.0.1:7000"}},
		{Op: sched.Op{Kind: sched.Connect, Node: "db", Object: "listen:10.77.0.9:50051"}},
	}}
	p := newProtocols(tr)
	for conn, want := range map[string]string{
		"10.77.0.2:32768>10.77.0.1:7000":  ":7000",
		"10.77.0.1:7000>10.77.0.2:32768":  ":7000",
		"10.77.0.3:41000>10.77.0.9:50051": ":50051", // a server port above the client's
		"10.77.0.1:7000>10.77.0.5:7000":   ":7000",
		"10.77.0.4:5353>10.77.0.5:40000":  ":5353", // no listener: the lower port
		"garbage":                         "?",
	} {
		if got := p.of(conn); got != want {
			t.Errorf("%s: %s, want %s", conn, got, want)
		}
	}
	if got := p.nodeOf("10.77.0.2:32768>10.77.0.1:7000"); got != "n1" {
		t.Errorf("node of 10.77.0.1: %q, want n1", got)
	}
}

// TestMessagesLostSend: a send no delivery carried (its node crashed with
// it in flight) is a message of its own; a carried send is counted by its
// delivery only, and shares its kind.
func TestMessagesLostSend(t *testing.T) {
	const conn = "10.77.0.3:32768>10.77.0.2:7000"
	tr := &sched.Trace{Records: []sched.Record{
		{Step: 1, Op: sched.Op{ID: 1, Node: "lockd", Kind: sched.Accept, Object: "listen:10.77.0.2:7000"}},
		{Step: 2, Op: sched.Op{ID: 2, Node: "app", Kind: sched.Send, Conn: conn, Bytes: 10}, Data: []byte("ACQUIRE x\n")},
		{Step: 3, Op: sched.Op{ID: 3, Node: "app", Kind: sched.Deliver, Conn: conn, Object: "inbox:lockd/0", Bytes: 10}, Data: []byte("ACQUIRE x\n"), Causes: []uint64{2}},
		{Step: 4, Op: sched.Op{ID: 4, Node: "app", Kind: sched.Send, Conn: conn, Bytes: 10}, Data: []byte("RELEASE x\n")},
		{Step: 5, Op: sched.Op{ID: 5, Node: "app", LPID: "fault", Kind: "crash", Object: "node:app"}},
	}}
	ks := NewKinds()
	msgs, sendKinds := ks.Messages(tr)
	if len(msgs) != 2 || msgs[0].Record != 2 || msgs[1].Record != 3 {
		t.Fatalf("messages %+v: want the delivery (record 2) and the lost send (record 3)", msgs)
	}
	acquire, release := msgs[0].Kind, msgs[1].Kind
	if acquire.Shape != "ACQUIRE" || acquire.Count != 1 || release.Shape != "RELEASE" || release.Count != 1 {
		t.Errorf("kinds %s (%d), %s (%d): want ACQUIRE and RELEASE once each", acquire.Label(), acquire.Count, release.Label(), release.Count)
	}
	if sendKinds[2] != acquire || sendKinds[4] != release {
		t.Errorf("send kinds %v: want the carried send's its delivery's, the lost one's its own", sendKinds)
	}
	if m := msgs[0]; m.From != "app" || m.To != "lockd" || msgs[1].From != "app" || msgs[1].To != "lockd" {
		t.Errorf("messages %+v: want app to lockd", msgs)
	}
	if acquire.Proto != ":7000" {
		t.Errorf("protocol %s, want :7000", acquire.Proto)
	}
}

// TestOfShape: a message is of a kind's shape when its own is that shape,
// or goes on where a shape cut short stops.
func TestOfShape(t *testing.T) {
	for _, tc := range []struct {
		msg, shape string
		want       bool
	}{
		{"APPEND 12", "APPEND", true},
		{"APPENDIX 12", "APPEND", false},
		{"HB", "APPEND", false},
		{`{"a":1,"b":"x","c":[1]}`, `{a:i b:s c:[i]}`, true},
		{`{"a":1,"b":"x","c":[1]}`, `{a:i b:s …`, true},
		{`{"a":1,"b":"x"}`, `{a:i b:s c:[i]}`, false},
		{"", "APPEND", false},
	} {
		if got := OfShape([]byte(tc.msg), len(tc.msg), tc.shape); got != tc.want {
			t.Errorf("OfShape(%q, %q) = %v, want %v (its shape %q)", tc.msg, tc.shape, got, tc.want, Shape([]byte(tc.msg), len(tc.msg)))
		}
	}
}

// TestMessagesLongWrites: the writes a long message is cut into are one
// message of one kind, however their payload bytes look, until the other
// side answers; a datagram is a message whole.
func TestMessagesLongWrites(t *testing.T) {
	const ab, ba = "10.77.0.3:32768>10.77.0.2:7000", "10.77.0.2:7000>10.77.0.3:32768"
	payload := func(from byte, n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = from + byte(i)
		}
		return b
	}
	deliver := func(id uint64, conn string, data []byte, n int) sched.Record {
		to := "inbox:db/0"
		if conn == ba {
			to = "inbox:app/0"
		}
		return sched.Record{Step: int(id), Op: sched.Op{ID: id, Node: "app", Kind: sched.Deliver, Conn: conn, Object: to, Bytes: n},
			Data: data[:min(len(data), 64)], Causes: []uint64{100 + id}}
	}
	put := append([]byte("PUT blob 20000\n"), payload(0, 64)...)
	tr := &sched.Trace{Records: []sched.Record{
		{Step: 0, Op: sched.Op{ID: 50, Node: "db", Kind: sched.Accept, Object: "listen:10.77.0.2:7000"}},
		deliver(1, ab, put, 8192),
		deliver(2, ab, payload(0x19, 64), 8192), // goes on: bytes that would shape as anything
		deliver(3, ab, payload('K', 64), 3616),  // the message's last write
		deliver(4, ab, []byte("GET blob\n"), 9), // after a short write: a message again
		deliver(5, ab, payload(0x80, 64), 5000), // a long write of its own: a message
		deliver(6, ba, []byte("OK\n"), 3),       // an answer closes it
		deliver(7, ab, payload(0x90, 64), 100),  // so this one is a message
	}}
	dg := deliver(8, ab, payload(0xa0, 64), 6000)
	dg.Op.Syscall = sched.DatagramSyscall
	dg2 := deliver(9, ab, payload(0xb0, 64), 6000)
	dg2.Op.Syscall = sched.DatagramSyscall
	tr.Records = append(tr.Records, dg, dg2)

	ks := NewKinds()
	msgs, sendKinds := ks.Messages(tr)
	var records []int
	for _, m := range msgs {
		records = append(records, m.Record)
	}
	if want := []int{1, 4, 5, 6, 7, 8, 9}; !slices.Equal(records, want) {
		t.Fatalf("messages at records %v, want %v", records, want)
	}
	if k := msgs[0].Kind; k.Shape != "PUT" || k.Count != 1 || sendKinds[102] != k || sendKinds[103] != k {
		t.Errorf("the long PUT: kind %s counted %d, its writes' kinds %v %v: want PUT once, for every write", k.Label(), k.Count, sendKinds[102], sendKinds[103])
	}
	if len(ks.List()) != 7 {
		t.Errorf("%d kinds, want 7: %v", len(ks.List()), labels(ks.List()))
	}
}

// TestNamer: a record of another run of the trial is named by the kind the
// trace gave its message, numbered as the trace's; a shape the trace did
// not show is numbered after its kinds; other ops have none.
func TestNamer(t *testing.T) {
	tr := readFixture(t, "raft")
	ks := NewKinds()
	msgs, _ := ks.Messages(tr)
	n := NewNamer(tr)
	for _, m := range msgs {
		r := tr.Records[m.Record]
		if got := n.Kind(&r); got == nil || got.ID != m.Kind.ID {
			t.Fatalf("step %d: the namer gives %v, the trace's kinds %s", r.Step, got, m.Kind.Label())
		}
	}
	var conn string
	for _, r := range tr.Records {
		if r.Op.Kind == sched.Deliver && len(r.Data) > 0 {
			conn = r.Op.Conn
			break
		}
	}
	fresh := sched.Record{Op: sched.Op{Kind: sched.Deliver, Conn: conn}, Data: []byte("HELLO there\n"), Result: 12}
	if got := n.Kind(&fresh); got == nil || got.ID != len(ks.List())+1 || got.Shape != "HELLO" {
		t.Errorf("a message the trace did not show: %v, want k%d \"HELLO\"", got, len(ks.List())+1)
	}
	for _, r := range []sched.Record{
		{Op: sched.Op{Kind: sched.Recv, Conn: conn}, Data: []byte("HELLO there\n")},
		{Op: sched.Op{Kind: sched.Deliver, Conn: conn}},
	} {
		if got := n.Kind(&r); got != nil {
			t.Errorf("%v with %d bytes kept: kind %s, want none", r.Op.Kind, len(r.Data), got.Label())
		}
	}
	if got := (*Namer)(nil).Kind(&fresh); got != nil {
		t.Errorf("a nil namer gave %s", got.Label())
	}
}

func TestText(t *testing.T) {
	for _, tc := range []struct {
		b    string
		want bool
	}{
		{"LOCK 1\n", true},
		{"GET /v3/kv HTTP/1.1\r\nHost: a\r\n", true},
		{"{\"k\":\t1}", true},
		{"", true},
		{"\x00\x00\x00)\x83D", false},
		{"PUT k\x00", false},
		{"caf\xc3\xa9", false},
	} {
		if got := Text([]byte(tc.b)); got != tc.want {
			t.Errorf("Text(%q) = %v, want %v", tc.b, got, tc.want)
		}
	}
}
