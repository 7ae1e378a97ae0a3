package coverage

import "testing"

// Real lines: etcd 3.4's zap JSON, hashicorp/raft's hclog (raftex),
// Redis 7 and Sentinel, ZooKeeper 3.8's log4j, and Go panics, from the
// nodes' .out and .err of trials of examples/ and of small Go programs
// that panic.
func TestTemplate(t *testing.T) {
	for _, tc := range []struct{ name, line, want string }{
		{"etcd zap", `{"level":"info","ts":"2024-01-01T00:00:00.000Z","caller":"etcdmain/etcd.go:110","msg":"failed to detect default host","error":"could not find default route"}`,
			`{level="info" ts caller="etcdmain/etcd.go:·" msg="failed to detect default host" error="could not find default route"}`},
		{"etcd zap, values", `{"level":"info","ts":"2024-01-01T00:00:00.000Z","caller":"embed/etcd.go:117","msg":"configuring peer listeners","listen-peer-urls":["http://10.77.0.1:2380"]}`,
			`{level="info" ts caller="embed/etcd.go:·" msg="configuring peer listeners" listen-peer-urls}`},
		{"etcd zap, ids", `{"level":"info","ts":"2024-01-01T00:00:05.200Z","caller":"raft/raft.go:771","msg":"c42b555306f2b9d4 became leader at term 3"}`,
			`{level="info" ts caller="raft/raft.go:·" msg="· became leader at term ·"}`},
		{"hclog", `2024-01-01T00:00:00.400Z [INFO]  raft-n1: entering candidate state: node="Node at 10.77.0.1:7000 [Candidate]" term=3`,
			`<ts> [INFO] ·: entering candidate state: node="Node at ·:· [Candidate]" term=·`},
		{"hclog, error", `2024-01-01T00:00:04.647Z [ERROR] raft-n2: failed to make requestVote RPC: target="{Voter n1 10.77.0.1:7000}" error="dial tcp 10.77.0.1:7000: connect: software caused connection abort" term=9`,
			`<ts> [ERROR] ·: failed to make requestVote RPC: target="{Voter · ·:·}" error="dial tcp ·:·: connect: software caused connection abort" term=·`},
		{"hclog, snapshot id", `2024-01-01T00:00:04.426Z [INFO]  raft-n1: installing snapshot on: peer=n3 id=7-73-1704067204227 size=3832`,
			`<ts> [INFO] ·: installing snapshot on: peer=· id=· size=·`},
		{"redis", `1:M 01 Jan 2024 00:00:00.008 * Ready to accept connections`,
			`·:M <ts> * Ready to accept connections`},
		{"redis, version", `4:X 01 Jan 2024 00:00:00.006 # Redis version=7.0.15, bits=64, commit=00000000, modified=0, pid=4, just started`,
			`·:X <ts> # Redis version=·, bits=·, commit=·, modified=·, pid=·, just started`},
		{"redis sentinel", `4:X 01 Jan 2024 00:00:12.454 # +sdown slave 10.77.0.2:6379 10.77.0.2 6379 @ mymaster 10.77.0.1 6379`,
			`·:X <ts> # +sdown slave ·:· · · @ mymaster · ·`},
		{"redis sentinel, run id", `4:X 01 Jan 2024 00:00:12.374 # +sdown sentinel b24d689e996196642e82744d9b839ad090748324 10.77.0.1 26379 @ mymaster 10.77.0.1 6379`,
			`·:X <ts> # +sdown sentinel · · · @ mymaster · ·`},
		{"zookeeper log4j", `0 [main] INFO org.apache.zookeeper.server.quorum.QuorumPeerConfig - Reading configuration from: /run/lockstep/trial/zk1/zoo.cfg`,
			`· [main] INFO org.apache.zookeeper.server.quorum.QuorumPeerConfig - Reading configuration from: /run/lockstep/trial/·/zoo.cfg`},
		{"zookeeper, thread", `1200 [QuorumPeer[myid=1](plain=0.0.0.0:2181)(secure=disabled)] INFO org.apache.zookeeper.server.quorum.Learner - FOLLOWING - LEADER ELECTION TOOK - 1200 MS`,
			`· [QuorumPeer[myid=·](plain=·:·)(secure=disabled)] INFO org.apache.zookeeper.server.quorum.Learner - FOLLOWING - LEADER ELECTION TOOK - · MS`},
		{"go panic", `panic: runtime error: index out of range [5] with length 3`,
			`panic: runtime error: index out of range [·] with length ·`},
		{"go panic, signal", `[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x47b223]`,
			`[signal SIGSEGV: segmentation violation code=· addr=· pc=·]`},
		{"go goroutine", `goroutine 17 [running]:`, `goroutine · [running]:`},
		{"go frame", `main.(*T).get(0x0?, 0x0?, 0x0?)`, `main.(*T).get(·?, ·?, ·?)`},
		{"go frame's file", "\t/tmp/panicprog/main.go:8 +0x3", `/tmp/panicprog/main.go:· +·`},
		{"go created by", `created by main.main in goroutine 1`, `created by main.main in goroutine ·`},
		// Constructed, for what the trials above did not print:
		// ZooKeeper's packaged log4j layout, a UUID, IPv6.
		{"log4j with a date", `2024-01-01 00:00:02,236 [myid:2] - INFO  [main:o.a.z.s.q.QuorumPeerConfig@177] - Reading configuration`,
			`<ts> [myid:·] - INFO [main:o.a.z.s.q.QuorumPeerConfig@·] - Reading configuration`},
		{"uuid", `session 123e4567-e89b-12d3-a456-426614174000 expired`, `session · expired`},
		{"ipv6", `listening on [fe80::1]:7000 and [::1]:7001`, `listening on [·::·]:· and [::·]:·`},
		{"blank", "   ", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := TemplateOf(tc.line); got != tc.want {
				t.Errorf("TemplateOf(%q)\n = %q\nwant %q", tc.line, got, tc.want)
			}
		})
	}
}

// TestTemplateSameStatement: one statement's lines, printed at other times
// with other values by other nodes, have one template.
func TestTemplateSameStatement(t *testing.T) {
	for _, p := range [][2]string{
		{`2024-01-01T00:00:00.400Z [INFO]  raft-n1: election won: term=3 tally=2`,
			`2024-01-01T00:00:05.117Z [INFO]  raft-n3: election won: term=12 tally=3`},
		{`{"level":"warn","ts":"2024-01-01T00:00:04.231Z","caller":"rafthttp/stream.go:436","msg":"lost TCP streaming connection with remote peer","stream-reader-type":"stream Message","local-member-id":"c42b555306f2b9d4","remote-peer-id":"43f0d390a0a4190b","error":"unexpected EOF"}`,
			`{"level":"warn","ts":"2024-01-01T00:00:04.231Z","caller":"rafthttp/stream.go:436","msg":"lost TCP streaming connection with remote peer","stream-reader-type":"stream Message","local-member-id":"c50dfb028d124b4a","remote-peer-id":"43f0d390a0a4190b","error":"unexpected EOF"}`},
		{`4:X 01 Jan 2024 00:00:12.374 # +sdown sentinel b24d689e996196642e82744d9b839ad090748324 10.77.0.1 26379 @ mymaster 10.77.0.1 6379`,
			`4:X 01 Jan 2024 00:00:12.454 # +sdown sentinel d2f7c0d824f8d89ac4966283cfeafc1fb824f4f7 10.77.0.3 26379 @ mymaster 10.77.0.1 6379`},
		{"goroutine 1 [running]:", "goroutine 1234 [running]:"},
	} {
		if a, b := TemplateOf(p[0]), TemplateOf(p[1]); a != b {
			t.Errorf("%q\nand %q\ntemplates %q\nand %q, want one", p[0], p[1], a, b)
		}
	}
	if a, b := TemplateOf(`2024-01-01T00:00:00.400Z [INFO]  raft-n1: entering leader state: leader="Node at 10.77.0.1:7000 [Leader]"`),
		TemplateOf(`2024-01-01T00:00:00.000Z [INFO]  raft-n1: entering follower state: follower="Node at 10.77.0.1:7000 [Follower]" leader-address= leader-id=`); a == b {
		t.Errorf("two statements share template %q", a)
	}
}

func TestTemplates(t *testing.T) {
	ts := NewTemplates()
	a := ts.Classify(`2024-01-01T00:00:00.400Z [INFO]  raft-n1: election won: term=3 tally=2`)
	b := ts.Classify(`2024-01-01T00:00:02.000Z [INFO]  raft-n2: entering candidate state: node="Node at 10.77.0.2:7000 [Candidate]" term=4`)
	c := ts.Classify(`2024-01-01T00:00:05.117Z [INFO]  raft-n3: election won: term=12 tally=3`)
	if ts.Classify("") != nil {
		t.Error("a blank line has a template")
	}
	if a != c || a == b || a.Name() != "t1" || b.Name() != "t2" || a.Count != 2 || len(ts.List()) != 2 {
		t.Errorf("templates %+v, %+v, %+v: want t1 twice and t2", a, b, c)
	}
	if a.Example != `2024-01-01T00:00:00.400Z [INFO]  raft-n1: election won: term=3 tally=2` {
		t.Errorf("example %q, want the first line", a.Example)
	}
}
