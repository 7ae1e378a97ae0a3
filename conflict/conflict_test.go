package conflict

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/sched"
)

// trial builds records in step order from a compact description.
type trial struct {
	recs []sched.Record
	ids  map[string]uint64
}

func newTrial() *trial { return &trial{ids: map[string]uint64{}} }

// op appends an op named name; causes name earlier ops.
func (t *trial) op(name, lpid string, kind sched.Kind, object, conn string, causes ...string) *trial {
	id := uint64(len(t.recs) + 1)
	t.ids[name] = id
	r := sched.Record{Step: len(t.recs) + 1, Op: sched.Op{ID: id, LPID: lpid, Node: lpid[:1], Kind: kind, Object: object, Conn: conn, Site: "prog+0x" + name}}
	for _, c := range causes {
		cid, ok := t.ids[c]
		if !ok {
			panic("unknown cause " + c)
		}
		r.Causes = append(r.Causes, cid)
	}
	t.recs = append(t.recs, r)
	return t
}

// result sets the last op's return value (a recv's bytes).
func (t *trial) result(n int64) *trial {
	t.recs[len(t.recs)-1].Result = n
	return t
}

func (t *trial) conflicting(a *Analysis) map[string]bool {
	out := map[string]bool{}
	for name, id := range t.ids {
		if a.Conflicting[id-1] {
			out[name] = true
		}
	}
	return out
}

func TestAnalyze(t *testing.T) {
	for _, tc := range []struct {
		name  string
		trial *trial
		want  []string // ops in a conflict
	}{
		{
			// Two clients send to one server: the deliveries race for its
			// inbox; each recv reads its own connection, whose bytes came
			// before it, so neither races with anything.
			name: "two clients one server",
			trial: newTrial().
				op("ca", "a/0/t0", sched.Connect, "listen:s:1", "").
				op("cb", "b/0/t0", sched.Connect, "listen:s:1", "").
				op("acc1", "s/0/t0", sched.Accept, "listen:s:1", "", "ca").
				op("acc2", "s/0/t0", sched.Accept, "listen:s:1", "", "cb").
				op("sa", "a/0/t0", sched.Send, "", "a>s").
				op("sb", "b/0/t0", sched.Send, "", "b>s").
				op("da", "a/0/t0", sched.Deliver, "inbox:s", "a>s", "sa").
				op("db", "b/0/t0", sched.Deliver, "inbox:s", "b>s", "sb").
				op("r1", "s/0/t0", sched.Recv, "inbox:s", "a>s", "da").
				op("r2", "s/0/t0", sched.Recv, "inbox:s", "b>s", "db"),
			// acc2 follows acc1 (program order), which follows ca.
			want: []string{"ca", "cb", "acc1", "da", "db"},
		},
		{
			name: "two independent pairs",
			trial: newTrial().
				op("c1", "a/0/t0", sched.Connect, "listen:s:1", "").
				op("c2", "b/0/t0", sched.Connect, "listen:t:1", "").
				op("x1", "s/0/t0", sched.Accept, "listen:s:1", "", "c1").
				op("x2", "t/0/t0", sched.Accept, "listen:t:1", "", "c2").
				op("s1", "a/0/t0", sched.Send, "", "a>s").
				op("s2", "b/0/t0", sched.Send, "", "b>t").
				op("d1", "a/0/t0", sched.Deliver, "inbox:s", "a>s", "s1").
				op("d2", "b/0/t0", sched.Deliver, "inbox:t", "b>t", "s2").
				op("r1", "s/0/t0", sched.Recv, "inbox:s", "a>s", "d1").
				op("r2", "t/0/t0", sched.Recv, "inbox:t", "b>t", "d2"),
		},
		{
			// A relay: a -> c, c -> b, b -> c. c's two deliveries are
			// ordered by the chain through b, so nothing conflicts.
			name: "relay chain",
			trial: newTrial().
				op("s1", "a/0/t0", sched.Send, "", "a>c").
				op("d1", "a/0/t0", sched.Deliver, "inbox:c", "a>c", "s1").
				op("r1", "c/0/t0", sched.Recv, "inbox:c", "a>c", "d1").
				op("s2", "c/0/t0", sched.Send, "", "c>b").
				op("d2", "c/0/t0", sched.Deliver, "inbox:b", "c>b", "s2").
				op("r2", "b/0/t0", sched.Recv, "inbox:b", "c>b", "d2").
				op("s3", "b/0/t0", sched.Send, "", "b>c").
				op("d3", "b/0/t0", sched.Deliver, "inbox:c", "b>c", "s3").
				op("r3", "c/0/t0", sched.Recv, "inbox:c", "b>c", "d3"),
		},
		{
			// Two chunks of one connection are FIFO: never a conflict
			// between them, even though the sender went on in between.
			name: "fifo per connection",
			trial: newTrial().
				op("s1", "a/0/t0", sched.Send, "", "a>s").
				op("s2", "a/0/t0", sched.Send, "", "a>s").
				op("d1", "a/0/t0", sched.Deliver, "inbox:s", "a>s", "s1").
				op("d2", "a/0/t0", sched.Deliver, "inbox:s", "a>s", "s2").
				op("r1", "s/0/t0", sched.Recv, "inbox:s", "a>s", "d1", "d2"),
		},
		{
			// A recv races with bytes arriving on its own connection,
			// not with those of another.
			name: "recv races on its connection",
			trial: newTrial().
				op("sa", "a/0/t0", sched.Send, "", "a>s").
				op("sb", "b/0/t0", sched.Send, "", "b>s").
				op("r1", "s/0/t0", sched.Recv, "inbox:s", "a>s").
				op("da", "a/0/t0", sched.Deliver, "inbox:s", "a>s", "sa").
				op("db", "b/0/t0", sched.Deliver, "inbox:s", "b>s", "sb").
				op("r2", "s/0/t0", sched.Recv, "inbox:s", "a>s", "da"),
			want: []string{"r1", "da", "db"},
		},
		{
			// A close sends a FIN: it races with the peer's poll, not with
			// the recv that read the bytes before it, nor with the recv
			// that read the end it made.
			name: "close is a message",
			trial: newTrial().
				op("s1", "a/0/t0", sched.Send, "", "a>s").
				op("d1", "a/0/t0", sched.Deliver, "inbox:s", "a>s", "s1").
				op("r1", "s/0/t0", sched.Recv, "inbox:s", "a>s", "d1").
				result(5).
				op("c1", "a/0/t0", sched.Close, "", "a>s").
				op("p1", "s/0/t0", sched.Poll, "inbox:s", "").
				op("r2", "s/0/t0", sched.Recv, "inbox:s", "a>s"),
			want: []string{"c1", "p1"},
		},
		{
			// Polls only observe: two threads polling one inbox do not
			// conflict with each other, but a delivery races with both.
			name: "polls observe",
			trial: newTrial().
				op("p1", "s/0/t0", sched.Poll, "inbox:s", "").
				op("p2", "s/0/t1", sched.Poll, "inbox:s", "").
				op("s1", "a/0/t0", sched.Send, "", "a>s").
				op("d1", "a/0/t0", sched.Deliver, "inbox:s", "a>s", "s1"),
			want: []string{"p1", "p2", "d1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := Analyze(tc.trial.recs, DefaultScheme)
			got := tc.trial.conflicting(a)
			want := map[string]bool{}
			for _, w := range tc.want {
				want[w] = true
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("conflicting ops %v, want %v", keys(got), tc.want)
			}
		})
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestSchemes(t *testing.T) {
	sig := sched.Signature{LPID: "n/0/t1", Site: "prog+0x10;prog+0x20;prog+0x30", Kind: sched.Send}
	for _, tc := range []struct{ scheme, key string }{
		{"pc", "prog+0x10"},
		{"pid+pc", "n/0/t1@prog+0x10"},
		{"proc+pc", "n/0@prog+0x10"},
		{"", "n/0@prog+0x10 send #0"},
		{"proc+pc+msg", "n/0@prog+0x10 send"},
		{"proc+stack:2+kind", "n/0@prog+0x10;prog+0x20 send"},
		{"pid+stack:2", "n/0/t1@prog+0x10;prog+0x20"},
		{"pid+stack:8", "n/0/t1@prog+0x10;prog+0x20;prog+0x30"},
		{"proc+stack:2", "n/0@prog+0x10;prog+0x20"},
	} {
		s, err := ParseScheme(tc.scheme)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Key(sig); got != tc.key {
			t.Errorf("%s: key %q, want %q", tc.scheme, got, tc.key)
		}
	}
	for _, bad := range []string{"stack", "pid+stack:0", "pid+stack:x", "pid+stack:17", "proc+stack:0", "thread+pc", "pc+msg+kind", "+msg"} {
		if _, err := ParseScheme(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// checkKeys checks that the pairs in same share a key under s and the
// pairs in differ do not.
func checkKeys(t *testing.T, name string, s Scheme, same, differ [][2]sched.Signature) {
	t.Helper()
	for _, p := range same {
		if a, b := s.Key(p[0]), s.Key(p[1]); a != b {
			t.Errorf("%s: keys %q and %q differ", name, a, b)
		}
	}
	for _, p := range differ {
		if a, b := s.Key(p[0]), s.Key(p[1]); a == b {
			t.Errorf("%s: %v and %v share key %q", name, p[0], p[1], a)
		}
	}
}

// TestSchemePeerNth: "+peer" tells ops on connections to different ends
// apart (an ephemeral port is not part of it: the kernel may pick another
// next time), "+nth" the first ops of a signature from the steady traffic
// after them, counted in ranges that double.
func TestSchemePeerNth(t *testing.T) {
	base := sched.Signature{LPID: "n/0/t1", Site: "prog+0x10", Kind: sched.Recv}
	with := func(peer string, nth int) sched.Signature {
		s := base
		s.Peer, s.Nth = peer, nth
		return s
	}
	for _, tc := range []struct {
		scheme string
		key    string
		same   [][2]sched.Signature
		differ [][2]sched.Signature
	}{
		{"proc+pc+msg", "n/0@prog+0x10 recv",
			[][2]sched.Signature{{with("10.0.0.1:7000", 0), with("10.0.0.2:7000", 5)}}, nil},
		{"proc+pc+msg+peer", "n/0@prog+0x10 recv @10.0.0.1:7000",
			[][2]sched.Signature{{with("10.0.0.3:32768", 0), with("10.0.0.3:40001", 9)}},
			[][2]sched.Signature{{with("10.0.0.1:7000", 0), with("10.0.0.2:7000", 0)}, {with("10.0.0.1:7000", 0), with("10.0.0.1:7001", 0)}}},
		{"proc+pc+msg+nth", "n/0@prog+0x10 recv #0",
			[][2]sched.Signature{{with("10.0.0.1:7000", 3), with("10.0.0.2:7000", 7)}, {with("", 40), with("", 400)}},
			[][2]sched.Signature{{with("", 0), with("", 1)}, {with("", 2), with("", 3)}, {with("", 7), with("", 8)}}},
		{"proc+pc+msg+peer+nth", "n/0@prog+0x10 recv @10.0.0.1:7000 #0", nil,
			[][2]sched.Signature{{with("10.0.0.1:7000", 0), with("10.0.0.2:7000", 0)}, {with("10.0.0.1:7000", 0), with("10.0.0.1:7000", 1)}}},
	} {
		s, err := ParseScheme(tc.scheme)
		if err != nil {
			t.Fatal(err)
		}
		if s.String() != tc.scheme {
			t.Errorf("%s reads back as %s", tc.scheme, s)
		}
		if got := s.Key(with("10.0.0.1:7000", 0)); got != tc.key {
			t.Errorf("%s: key %q, want %q", tc.scheme, got, tc.key)
		}
		if got := s.CountKey(with("10.0.0.1:7000", 9)); strings.Contains(got, "#") {
			t.Errorf("%s: the count key %q holds the count", tc.scheme, got)
		}
		checkKeys(t, tc.scheme, s, tc.same, tc.differ)
	}
	if s, _ := ParseScheme("proc+pc+nth+peer"); s.String() != "proc+pc+peer+nth" {
		t.Errorf("proc+pc+nth+peer reads back as %s", s)
	}
	for _, bad := range []string{"+nth", "+peer+nth", "proc+pc+nth+nth", "nth"} {
		if _, err := ParseScheme(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestSchemeKinds: "+kind" tells a send from the delivery of its bytes and
// names the program's frame above a library site (a Java method, whatever
// its line); "+msg" tells deliveries
// of different shapes apart, but not two of one shape that carry other
// values.
func TestSchemeKinds(t *testing.T) {
	send := sched.Signature{LPID: "n/0/t1", Site: "prog+0x10", Kind: sched.Send}
	vote := sched.Signature{LPID: "n/0/t1", Site: "prog+0x10", Kind: sched.Deliver, Msg: "VOTE 3 n2\n", Bytes: 10}
	vote2 := sched.Signature{LPID: "n/0/t2", Site: "prog+0x10", Kind: sched.Deliver, Msg: "VOTE 14 n3\n", Bytes: 11}
	beat := sched.Signature{LPID: "n/0/t1", Site: "prog+0x10", Kind: sched.Deliver, Msg: "BEAT 7\n", Bytes: 7}
	std := sched.Signature{LPID: "n/0/t1", Site: "prog+0x10", Kind: sched.Send, Caller: "prog::peer::gossip"}
	// A JVM's send through one JDK site, from two methods of the
	// program; one of them interpreted (its line known) or compiled.
	javaA := sched.Signature{LPID: "j/0/t1", Site: "libnio.so+0x72eb", Kind: sched.Send, Caller: "Jvm2.app(Jvm2.java:250)"}
	javaA2 := sched.Signature{LPID: "j/0/t1", Site: "libnio.so+0x72eb", Kind: sched.Send, Caller: "Jvm2.app(Jvm2.java)"}
	javaB := sched.Signature{LPID: "j/0/t1", Site: "libnio.so+0x72eb", Kind: sched.Send, Caller: "Jvm2$Pipe.call(Jvm2.java:216)"}
	for _, tc := range []struct {
		scheme string
		same   [][2]sched.Signature
		differ [][2]sched.Signature
	}{
		{"proc+pc", [][2]sched.Signature{{send, vote}, {vote, beat}, {send, std}, {javaA, javaB}}, nil},
		{"proc+pc+kind", [][2]sched.Signature{{vote, beat}, {vote, vote2}, {javaA, javaA2}}, [][2]sched.Signature{{send, vote}, {send, std}, {javaA, javaB}}},
		{"proc+pc+msg", [][2]sched.Signature{{vote, vote2}}, [][2]sched.Signature{{send, vote}, {vote, beat}, {send, std}}},
	} {
		s, err := ParseScheme(tc.scheme)
		if err != nil {
			t.Fatal(err)
		}
		if s.String() != tc.scheme {
			t.Errorf("%s reads back as %s", tc.scheme, s)
		}
		checkKeys(t, tc.scheme, s, tc.same, tc.differ)
	}
}

// TestHistoryPredictsAndRoundTrips: unseen signatures may conflict; seen
// and never conflicting ones may not; the table survives a file.
func TestHistoryPredictsAndRoundTrips(t *testing.T) {
	tr := newTrial().
		op("s1", "a/0/t0", sched.Send, "", "a>s").
		op("s2", "b/0/t0", sched.Send, "", "b>s").
		op("d1", "a/0/t0", sched.Deliver, "inbox:s", "a>s", "s1").
		op("d2", "b/0/t0", sched.Deliver, "inbox:s", "b>s", "s2")
	h := NewHistory(DefaultScheme)
	sig := func(name string) sched.Signature { return tr.recs[tr.ids[name]-1].Op.Signature() }
	if !h.MayConflict(sig("s1")) {
		t.Fatal("unseen signature predicted not to conflict")
	}
	h.Update(Analyze(tr.recs, DefaultScheme))
	// Sends and deliveries share a site, but the default scheme keys them
	// apart: only the deliveries conflicted.
	if !h.MayConflict(sig("d1")) {
		t.Fatal("conflicting signature predicted safe")
	}
	if h.MayConflict(sig("s1")) {
		t.Fatal("a send predicted to conflict like the delivery of its bytes")
	}
	other := sched.Signature{LPID: "c/0/t0", Site: "prog+0xff", Kind: sched.Send}
	quiet := newTrial().op("q", "c/0/t0", sched.Send, "", "c>s")
	quiet.recs[0].Op.Site = other.Site
	h.Update(Analyze(quiet.recs, DefaultScheme))
	if h.MayConflict(other) {
		t.Fatal("seen, never-conflicting signature predicted to conflict")
	}
	snap := h.Snapshot()
	h.Update(&Analysis{Records: []sched.Record{{Op: sched.Op{LPID: other.LPID, Site: other.Site, Kind: sched.Send}}}, Conflicting: []bool{true}})
	if snap.MayConflict(other) {
		t.Fatal("snapshot changed with the table")
	}

	path := filepath.Join(t.TempDir(), "hist.json")
	if err := h.Save(path); err != nil {
		t.Fatal(err)
	}
	g, err := Load(path, DefaultScheme)
	if err != nil {
		t.Fatal(err)
	}
	hs, hc := h.Len()
	gs, gc := g.Len()
	if hs != gs || hc != gc || !g.MayConflict(other) {
		t.Fatalf("round trip: %d/%d vs %d/%d", hs, hc, gs, gc)
	}
	if _, err := Load(path, SchemePC); err == nil {
		t.Fatal("history loaded under another scheme")
	}
	if g, err := Load(filepath.Join(t.TempDir(), "none.json"), DefaultScheme); err != nil || g == nil {
		t.Fatalf("missing file: %v", err)
	}
}

func TestEvaluateSchemes(t *testing.T) {
	tr := newTrial().
		op("s1", "a/0/t0", sched.Send, "", "a>s").
		op("s2", "b/0/t0", sched.Send, "", "b>s").
		op("d1", "a/0/t0", sched.Deliver, "inbox:s", "a>s", "s1").
		op("d2", "b/0/t0", sched.Deliver, "inbox:s", "b>s", "s2")
	evs := EvaluateSchemes([][]sched.Record{tr.recs, tr.recs}, []Scheme{SchemePC, SchemePIDPC})
	for _, e := range evs {
		// The deliveries conflict in both trials. The sends touch no
		// object: unseen in trial 1 they are held back (false positives),
		// seen and quiet in trial 2 they are predicted safe.
		if e.Ops != 8 || e.Conflicting != 4 || e.FalseNegatives != 0 || e.FalsePositives != 2 {
			t.Errorf("%s: %+v", e.Scheme, e)
		}
	}
}

// TestHistoryMerge: tables learned apart from one base merge, in any
// order, into the table learned from all their trials.
func TestHistoryMerge(t *testing.T) {
	learn := func(h *History, lpid string, conflicted bool) {
		h.Update(&Analysis{Records: []sched.Record{{Op: sched.Op{LPID: lpid, Site: "p+0x1", Kind: sched.Send}}}, Conflicting: []bool{conflicted}})
	}
	fresh := func() *History {
		h := NewHistory(DefaultScheme)
		learn(h, "base/0/t0", false) // the base: one trial
		return h
	}
	a, b, all := fresh(), fresh(), fresh()
	for _, tr := range []struct {
		h    *History
		lpid string
		c    bool
	}{{a, "x/0/t0", true}, {a, "y/0/t0", false}, {b, "y/0/t0", true}, {b, "base/0/t0", true}, {b, "z/0/t0", false}} {
		learn(tr.h, tr.lpid, tr.c)
		learn(all, tr.lpid, tr.c)
	}
	save := func(h *History) string {
		p := filepath.Join(t.TempDir(), "h.json")
		if err := h.Save(p); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(p)
		return string(b)
	}
	want := save(all)
	for _, order := range [][]*History{{a, b}, {b, a}} {
		m := NewHistory(DefaultScheme)
		for _, h := range order {
			if err := m.Merge(h, 1); err != nil {
				t.Fatal(err)
			}
		}
		if got := save(m); got != want {
			t.Errorf("merged\n%s\nwant\n%s", got, want)
		}
	}
	other, _ := ParseScheme("pc")
	if err := NewHistory(other).Merge(a, 1); err == nil {
		t.Error("merged tables of two schemes")
	}
	if err := NewHistory(DefaultScheme).Merge(a, 5); err == nil {
		t.Error("merged a table of fewer trials than its base")
	}
}
