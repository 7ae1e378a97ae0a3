package engine

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/spec"
)

// netTrial is one trial's trace read for the network fault tests: the
// fault, the step of its heal (len(recs) when none), and who each address
// is.
type netTrial struct {
	recs  []sched.Record
	fault int // index of the fault's record, -1 when none
	heal  int
	nodes map[string]string // sender address → node
	dir   string            // the trial's directory (its nodes' output)
}

func readNetTrial(t *testing.T, r *TrialResult, kind sched.Kind) netTrial {
	t.Helper()
	nt := netTrial{recs: traceRecords(t, r), fault: -1, nodes: map[string]string{}, dir: r.Dir}
	nt.heal = len(nt.recs)
	for i, rec := range nt.recs {
		switch {
		case rec.Op.Kind == kind && rec.Op.LPID == "fault":
			nt.fault = i
		case rec.Op.Kind == faults.Heal && nt.fault >= 0 && nt.heal == len(nt.recs):
			nt.heal = i
		case rec.Op.Kind == sched.Deliver:
			src, _, _ := strings.Cut(rec.Op.Conn, ">")
			nt.nodes[addrOf(src).String()] = rec.Op.Node
		}
	}
	return nt
}

// deliveries calls f with the sending and receiving node of each delivery
// between records from and to.
func (nt netTrial) deliveries(from, to int, f func(i int, src, dst string)) {
	for i := from; i < to; i++ {
		if o := nt.recs[i].Op; o.Kind == sched.Deliver {
			f(i, o.Node, nt.nodes[addrOf(o.Peer).String()])
		}
	}
}

// sides parses a cut's "a,b>c" or "a|b,c" (after its prefix word).
func sides(peer, sep string) ([]string, []string) {
	_, cut, _ := strings.Cut(peer, " ")
	cut, _, _ = strings.Cut(cut, " for ")
	a, b, _ := strings.Cut(cut, sep)
	return strings.Split(a, ","), strings.Split(b, ",")
}

// Each network fault stops exactly what it says on real C servers that
// tell each other a message every 100 ms, the rest flows, and a trace with
// it replays to the same op sequence.
func TestNetworkFaults(t *testing.T) {
	requireTrials(t)
	for _, tc := range []struct {
		spec string
		kind sched.Kind
		// check reads one trial with the fault and reports what it showed
		// (keys counted over the trials, each must be seen).
		check func(t *testing.T, nt netTrial) []string
		want  []string
	}{
		{"oneway", faults.OneWay, checkOneWay, []string{"other way flows", "released at the heal"}},
		{"link", faults.Link, checkLink, []string{"other links flow"}},
		{"bipartition", faults.Bipartition, checkBipartition, []string{"isolate", "bridge", "bridge reaches both"}},
		{"hold", faults.Hold, checkHold, []string{"other way flows", "released at the end"}},
		{"slow", faults.Slow, checkSlow, []string{"other links flow", "slow link flows", "held a round"}},
		{"slow-kind", faults.Slow, checkSlowKind, []string{"others cross", "slow link flows", "other links flow", "held a round"}},
		{"flap", faults.Flap, checkFlap, []string{"other links flow", "flows while up", "released when up", "held a round"}},
		{"flap-dial", faults.Flap, checkFlapDial, []string{"connect waited for the link", "connect while up"}},
		{"hold-kind", faults.Hold, checkHoldKind, []string{"beats flow", "data released at the end", "other way flows"}},
		{"gray", faults.Gray, checkGray, []string{"beats flow", "data released at the end", "other way flows"}},
		{"probe", faults.Partition, checkProbe, []string{"aimed at the leader"}},
		{"follow", faults.Partition, checkFollow, []string{"client follows s2", "client stays with s2"}},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			sum := runFaultSpec(t, tc.spec, 10, true)
			seen := map[string]int{}
			var traced *TrialResult
			for _, r := range sum.Results {
				if r.Outcome.Kind != Pass {
					t.Fatalf("trial %d: %v", r.Index, r.Outcome)
				}
				nt := readNetTrial(t, r, tc.kind)
				if nt.fault < 0 {
					continue
				}
				traced = r
				for _, k := range tc.check(t, nt) {
					seen[k]++
				}
			}
			if traced == nil {
				t.Fatalf("no trial injected a %v", tc.kind)
			}
			for _, k := range tc.want {
				if seen[k] == 0 {
					t.Errorf("no trial showed %q (saw %v)", k, seen)
				}
			}
			rr, err := Replay(context.Background(), traced.TracePath, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if !rr.Same {
				t.Fatalf("replay of %s: %s", traced.TracePath, rr.Diff)
			}
			if tc.spec == "probe" {
				// The replay used the recorded answer: its probe never ran.
				if _, err := os.Stat(filepath.Join(rr.Trial.Dir, "probe-runs")); !os.IsNotExist(err) {
					t.Fatalf("the replay ran the probe (%v)", err)
				}
				if _, err := os.Stat(filepath.Join(traced.Dir, "probe-runs")); err != nil {
					t.Fatalf("the run did not run the probe: %v", err)
				}
				checkForcedAim(t, traced.TracePath)
			}
		})
	}
}

// checkForcedAim: a forced run of the trace's decisions (explain's) aims
// its probe-aimed faults with the recorded answers, as a replay does: the
// probe does not run, and the fault hits the member it named.
func checkForcedAim(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := sched.ReadTrace(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rr, res, all := traceDecisions(t, tr)
	if !slices.ContainsFunc(all, func(d sched.Decision) bool { return d.Op.ProbeAimed() }) {
		t.Fatalf("the trace's decisions hold no probe-aimed fault")
	}
	forced := sched.NewForced(all, faults.ReplayOf)
	forced.Follow(res.Records)
	r, err := rr.Run(ctx, forced, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(r.Dir, "probe-runs")); !os.IsNotExist(err) {
		t.Errorf("the forced run ran the probe (%v)", err)
	}
	made := 0
	for _, x := range r.Records {
		if x.Op.Kind == faults.Partition && x.Op.Aimed {
			made++
			if x.Op.Node != "s2" || x.Op.Aim != "s2" {
				t.Errorf("partition aimed at %s, probe said %q, want s2", x.Op.Node, x.Op.Aim)
			}
		}
	}
	if made == 0 {
		t.Errorf("the forced run made no probe-aimed partition")
	}
}

// One way: nothing from the cut side reaches the other until the heal; the
// other way flows meanwhile; the held messages arrive after the heal.
func checkOneWay(t *testing.T, nt netTrial) []string {
	f := nt.recs[nt.fault].Op
	a, b := sides(f.Peer, ">")
	var out []string
	nt.deliveries(nt.fault, nt.heal, func(i int, src, dst string) {
		switch {
		case slices.Contains(a, src) && slices.Contains(b, dst):
			t.Fatalf("step %d: %s delivered to %s across the one-way cut %s", nt.recs[i].Step, src, dst, f.Peer)
		case slices.Contains(b, src) && slices.Contains(a, dst):
			out = append(out, "other way flows")
		}
	})
	nt.deliveries(nt.heal, len(nt.recs), func(i int, src, dst string) {
		if slices.Contains(a, src) && slices.Contains(b, dst) {
			out = append(out, "released at the heal")
		}
	})
	return out
}

// A link: its two ends exchange nothing until the heal; the third server
// still talks to both.
func checkLink(t *testing.T, nt netTrial) []string {
	f := nt.recs[nt.fault].Op
	a, b := sides(f.Peer, "|")
	var out []string
	nt.deliveries(nt.fault, nt.heal, func(i int, src, dst string) {
		switch {
		case slices.Contains(a, src) && slices.Contains(b, dst), slices.Contains(b, src) && slices.Contains(a, dst):
			t.Fatalf("step %d: %s delivered to %s across the cut link %s", nt.recs[i].Step, src, dst, f.Peer)
		default:
			out = append(out, "other links flow")
		}
	})
	return out
}

// A bipartition: nothing crosses between its halves; a bridge node still
// exchanges messages with both.
func checkBipartition(t *testing.T, nt netTrial) []string {
	f := nt.recs[nt.fault].Op
	a, b := sides(f.Peer, "|")
	shape, _, _ := strings.Cut(f.Peer, " ")
	out := []string{shape}
	reached := map[string]bool{}
	nt.deliveries(nt.fault, nt.heal, func(i int, src, dst string) {
		if slices.Contains(a, src) && slices.Contains(b, dst) || slices.Contains(b, src) && slices.Contains(a, dst) {
			t.Fatalf("step %d: %s delivered to %s across the bipartition %s", nt.recs[i].Step, src, dst, f.Peer)
		}
		if src == f.Node {
			reached[dst] = true
		}
	})
	if shape == "bridge" && reached[a[0]] && reached[b[0]] {
		out = append(out, "bridge reaches both")
	}
	return out
}

// A hold: nothing is delivered on the held connection direction before the
// hold's end; the other direction flows meanwhile; the held bytes come
// after.
func checkHold(t *testing.T, nt netTrial) []string {
	f := nt.recs[nt.fault]
	end := f.VTime + f.Op.Delay
	// The quiet period ends every hold: one placed shortly before it
	// (its trigger late in the window) ends there.
	sp, err := spec.Load(repoPath("testdata", "specs", "faults", "hold.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	end = min(end, int64(sp.Faults.Until))
	var out []string
	for _, rec := range nt.recs[nt.fault:] {
		if rec.Op.Kind != sched.Deliver {
			continue
		}
		switch {
		case rec.Op.Conn == f.Op.Conn && rec.VTime < end:
			t.Fatalf("step %d: delivered on %s at %v, held until %v", rec.Step, rec.Op.Conn, time.Duration(rec.VTime), time.Duration(end))
		case rec.Op.Conn == f.Op.Conn:
			out = append(out, "released at the end")
		case rec.VTime < end:
			out = append(out, "other way flows")
		}
	}
	return out
}

// A slow link: no message crosses it before the slow's delay has passed
// since the slow began (any message then waiting was ready at the earliest
// then), messages cross it after that while it lasts, and the other links
// flow meanwhile.
func checkSlow(t *testing.T, nt netTrial) []string { return checkSlowOf(t, nt, "slow.yaml", nil) }

// A slow link of one kind: no data message crosses it before the slow's
// delay has passed since it began, data crosses it after, beats cross it
// at once, and the other links flow.
func checkSlowKind(t *testing.T, nt netTrial) []string {
	f := nt.recs[nt.fault].Op
	if !strings.Contains(f.Peer, "(one kind of message)") {
		t.Fatalf("slow of one kind shows %q", f.Peer)
	}
	return checkSlowOf(t, nt, "slow-kind.yaml", func(b []byte) bool { return bytes.Contains(b, []byte(" data ")) })
}

// checkSlowOf checks a slow link made by the spec specName; slowed says
// which messages it slows (nil: all). What it saw: "held a round", "slow
// link flows" (slowed messages across it after the delay), "others cross"
// (messages across it it does not slow, before the delay), "other links
// flow".
func checkSlowOf(t *testing.T, nt netTrial, specName string, slowed func([]byte) bool) []string {
	f := nt.recs[nt.fault]
	a, b, ok := strings.Cut(strings.TrimPrefix(f.Op.Object, "link:"), "|")
	if !ok || f.Op.Delay <= 0 || f.Op.Pick == 0 {
		t.Fatalf("slow %q: no link, delay or while", f.Op.Object)
	}
	sa, sb := strings.Split(a, ","), strings.Split(b, ",")
	sp, err := spec.Load(repoPath("testdata", "specs", "faults", specName))
	if err != nil {
		t.Fatal(err)
	}
	// The quiet period ends every slow link.
	end := min(f.VTime+int64(f.Op.Pick), int64(sp.Faults.Until))
	released := min(f.VTime+f.Op.Delay, end)
	var out []string
	if time.Duration(released-f.VTime) > 150*time.Millisecond {
		// Longer than a round of gossip (100 ms): unslowed, a message
		// would have crossed.
		out = append(out, "held a round")
	}
	for i := nt.fault; i < len(nt.recs); i++ {
		rec := nt.recs[i]
		if rec.Op.Kind != sched.Deliver || rec.VTime >= end {
			continue
		}
		src, dst := rec.Op.Node, nt.nodes[addrOf(rec.Op.Peer).String()]
		across := slices.Contains(sa, src) && slices.Contains(sb, dst) || slices.Contains(sb, src) && slices.Contains(sa, dst)
		slow := slowed == nil || slowed(rec.Data)
		switch {
		case across && slow && rec.VTime < released:
			t.Fatalf("step %d: %s>%s %q delivered at %v across the slow link %s, slowed until %v",
				rec.Step, src, dst, rec.Data, time.Duration(rec.VTime), f.Op.Object, time.Duration(released))
		case across && slow:
			out = append(out, "slow link flows")
		case across && rec.VTime < released:
			out = append(out, "others cross")
		case !across && rec.VTime < released:
			out = append(out, "other links flow")
		}
	}
	return out
}

// flapPhase is a phase of a flap read from its trace, in virtual ns.
type flapPhase struct {
	down     bool
	from, to int64
}

// flapOf reads the flap of nt, made by the spec named specName: its link's
// sides, its phases and when it ended. The phases are read from what show
// prints ("flaps s1|s3 for 900ms: down 120ms, up 300ms, ..."), as offsets
// from the flap (the first eight of a longer flap).
func flapOf(t *testing.T, nt netTrial, specName string) (sa, sb []string, phases []flapPhase, end int64) {
	t.Helper()
	f := nt.recs[nt.fault]
	a, b, ok := strings.Cut(strings.TrimPrefix(f.Op.Object, "link:"), "|")
	if !ok || f.Op.Delay <= 0 {
		t.Fatalf("flap %q: no link or while", f.Op.Object)
	}
	_, list, ok := strings.Cut(f.Op.Peer, ": ")
	if !ok || !strings.HasPrefix(f.Op.Peer, "flaps "+a+"|"+b+" for ") {
		t.Fatalf("flap shows %q", f.Op.Peer)
	}
	at := f.VTime
	for _, w := range strings.Split(list, ", ") {
		state, length, _ := strings.Cut(w, " ")
		d, err := time.ParseDuration(length)
		if err != nil {
			break // "… (N phases)": the rest is not shown
		}
		phases = append(phases, flapPhase{state == "down", at, at + int64(d)})
		at += int64(d)
	}
	if len(phases) == 0 || !phases[0].down {
		t.Fatalf("flap shows %q: no phases, or not down first", f.Op.Peer)
	}
	sp, err := spec.Load(repoPath("testdata", "specs", "faults", specName+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The quiet period ends every flap.
	return strings.Split(a, ","), strings.Split(b, ","), phases, min(at, int64(sp.Faults.Until))
}

// phaseAt is the index of the phase in force at v, -1 when none shown is.
func phaseAt(phases []flapPhase, v int64) int {
	return slices.IndexFunc(phases, func(p flapPhase) bool { return p.from <= v && v < p.to })
}

// A flapping link holds every message across it while it is down and
// lets them cross while it is up; the other links flow throughout.
func checkFlap(t *testing.T, nt netTrial) []string {
	sa, sb, phases, end := flapOf(t, nt, "flap")
	f := nt.recs[nt.fault]
	var out []string
	for _, p := range phases {
		if p.down && min(p.to, end)-p.from > int64(150*time.Millisecond) {
			// Longer than a round of gossip (100 ms): on a link that
			// stayed up, a message would have crossed.
			out = append(out, "held a round")
		}
	}
	for i := nt.fault; i < len(nt.recs); i++ {
		rec := nt.recs[i]
		if rec.Op.Kind != sched.Deliver || rec.VTime >= end {
			continue
		}
		j := phaseAt(phases, rec.VTime)
		if j < 0 {
			continue
		}
		src, dst := rec.Op.Node, nt.nodes[addrOf(rec.Op.Peer).String()]
		across := slices.Contains(sa, src) && slices.Contains(sb, dst) || slices.Contains(sb, src) && slices.Contains(sa, dst)
		switch {
		case across && phases[j].down:
			t.Fatalf("step %d: %s delivered to %s at %v across the flapping link %s, down from %v to %v",
				rec.Step, src, dst, time.Duration(rec.VTime), f.Op.Object, time.Duration(phases[j].from), time.Duration(phases[j].to))
		case across && j > 0 && rec.VTime == phases[j].from:
			// Held while down, it went as the link came up.
			out = append(out, "released when up", "flows while up")
		case across:
			out = append(out, "flows while up")
		case phases[j].down:
			out = append(out, "other links flow")
		}
	}
	return out
}

// A blocking connect across a flapping link waits while the link is down:
// the client beside s1 dials s2 again and again (connect_probe, which
// prints how many virtual ms each connect took); no connect of its goes
// while the link is down, and one that took time was dialed in a down
// phase and went as it ended (its output says how long it waited, the
// trace when it went). Unflapped, a connect takes no virtual time.
func checkFlapDial(t *testing.T, nt netTrial) []string {
	sa, sb, phases, end := flapOf(t, nt, "flap-dial")
	if !slices.Contains(sa, "client") && !slices.Contains(sb, "client") {
		t.Fatalf("flap of %v|%v leaves out the client, in s1's group", sa, sb)
	}
	b, err := os.ReadFile(filepath.Join(nt.dir, "client.out"))
	if err != nil {
		t.Fatal(err)
	}
	took := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") // "10.77.0.2 ok after 41ms"
	var out []string
	n := 0 // the client's connects so far, one output line each
	for i, rec := range nt.recs {
		if rec.Op.Kind != sched.Connect || rec.Op.Node != "client" {
			continue
		}
		if n >= len(took) {
			t.Fatalf("more connects than the client's %d lines of output", len(took))
		}
		line := took[n]
		n++
		_, ms, ok := strings.Cut(line, " ok after ")
		waited, err := time.ParseDuration(ms)
		if !ok || err != nil {
			t.Fatalf("client printed %q", line)
		}
		if i < nt.fault || rec.VTime >= end || rec.VTime > phases[len(phases)-1].to {
			continue // not flapping, or past the phases shown
		}
		j := phaseAt(phases, rec.VTime)
		switch {
		case j >= 0 && phases[j].down:
			t.Fatalf("step %d: the client's connect went at %v across the flapping link, down from %v to %v",
				rec.Step, time.Duration(rec.VTime), time.Duration(phases[j].from), time.Duration(phases[j].to))
		case waited > 0:
			// Dialed inside the down phase that ended as it went: at
			// rec.VTime-waited or up to a ms before (the client rounds
			// down), the link down since then.
			dialed := rec.VTime - int64(waited)
			k := slices.IndexFunc(phases, func(p flapPhase) bool {
				return p.down && p.to == rec.VTime && p.from <= dialed
			})
			if k < 0 {
				t.Fatalf("step %d: the client's connect went at %v after %v: no down phase ended then (phases %v)",
					rec.Step, time.Duration(rec.VTime), waited, phases)
			}
			out = append(out, "connect waited for the link")
		case j >= 0:
			out = append(out, "connect while up")
		}
	}
	return out
}

// A probe-aimed partition hits the node the probe named, s2, the only one
// that says it leads.
func checkProbe(t *testing.T, nt netTrial) []string {
	f := nt.recs[nt.fault].Op
	if f.Node != "s2" || f.Aim != "s2" || f.Object != "probe" {
		t.Fatalf("partition aimed at %s, probe said %q (object %q), want s2", f.Node, f.Aim, f.Object)
	}
	nt.deliveries(nt.fault, nt.heal, func(i int, src, dst string) {
		if src == "s2" || dst == "s2" {
			t.Fatalf("step %d: %s delivered to %s across the partition of s2", nt.recs[i].Step, src, dst)
		}
	})
	return []string{"aimed at the leader"}
}

// Groups that follow their node: the client, connected to s2 alone, stands
// with s2 whichever server is cut off, and keeps talking to it.
func checkFollow(t *testing.T, nt netTrial) []string {
	f := nt.recs[nt.fault].Op
	cut := strings.Split(f.Peer, ",")
	if slices.Contains(cut, "s2") != slices.Contains(cut, "client") {
		t.Fatalf("partition cuts off %v: the client does not follow s2", cut)
	}
	talks := false
	nt.deliveries(nt.fault, nt.heal, func(i int, src, dst string) {
		talks = talks || src == "client" && dst == "s2"
	})
	switch {
	case !talks:
		return nil
	case slices.Contains(cut, "s2"):
		return []string{"client follows s2"}
	default:
		return []string{"client stays with s2"}
	}
}

// A probe that fails ends the trial as lockstep's error, naming the probe
// and what it printed, not as a bug of the system.
func TestProbeFails(t *testing.T) {
	requireTrials(t)
	sp, err := spec.Load(repoPath("testdata", "specs", "faults", "probe-fails.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Run(context.Background(), sp, RunOptions{Trials: 1, OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	o := sum.Results[0].Outcome
	if o.Kind != Error || !strings.Contains(o.Detail, "probe for partition: exit status 3: no leader file") {
		t.Fatalf("outcome %v", o)
	}
}
