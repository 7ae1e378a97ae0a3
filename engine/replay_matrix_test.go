package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/sched"
)

// aimModes are the ways a plan aims its faults; the replay matrix runs
// every fault kind in each, so a new mode is added here and nowhere else.
var aimModes = []struct {
	name string
	plan string // the faults: lines that select it
}{
	{"drawn", ""},
	// The probe names s2 and s1 in turn, counting its runs in a file of
	// the trial's directory: two faults of a trial are aimed differently,
	// and a replay that ran the probe would leave the file behind.
	{"probe", "  target:\n    probe: [\"/bin/sh\", \"-c\", \"n=$(wc -l < probe-runs 2>/dev/null || echo 0); echo x >> probe-runs; if [ $((n % 2)) = 0 ]; then echo s2; else echo s1; fi\"]\n"},
	{"follow", "  groups: follow\n"},
}

// arrangements are how a trial's faults stand to each other.
var arrangements = []string{"alone", "back-to-back", "overlapping"}

// diskNodes are a store that appends and fsyncs its log, for the storage
// kinds, and a client that outlives it.
const diskNodes = `nodes:
  - name: s1
    role: server
    command: ["%[1]s/disk_log", "{{tmp}}/db", "10"]
  - name: c1
    role: client
    command: ["/bin/sleep", "1"]
`

// storeNodes are two stores and a client that needs neither: a crash of
// one ends no trial, so another fault can be in force beside it.
const storeNodes = `nodes:
  - name: s1
    role: server
    command: ["%[1]s/disk_log", "{{tmp}}/db", "10"]
  - name: s2
    role: server
    command: ["%[1]s/disk_log", "{{tmp}}/db", "10"]
  - name: c1
    role: client
    command: ["/bin/sleep", "1"]
`

// matrixKind is how the replay matrix runs one fault kind beyond the
// default (tcpNodes, faults on s1 and s2, a pause as the other fault of a
// pair): a kind that needs other nodes, another window or a companion
// says so here; every other kind runs by default, so a new kind is
// replayed whether or not it is listed.
type matrixKind struct {
	nodes   string   // a spec's nodes: text, %[1]s the C programs' directory
	on      []string // faults.nodes
	window  string   // faults.from and until for one fault or a pair
	long    string   // ... for two in force together
	extra   string   // more faults: lines
	pair    string   // the other kind of a back-to-back pair ("" the kind itself, "-" pause)
	partner string   // the other kind of an overlapping pair ("" pause)
	// with is a kind that must be in every plan of the kind: a corrupt
	// strikes only a node down.
	with string
	// instant: the kind acts at once and is over (a reset, a drop, a
	// failing or stalled call): two are in force together only when it
	// lands while its partner, a drift (in force until the quiet period),
	// is. Its overlapping plan has a budget of four, so that a drift
	// comes first in most trials, and six trials at least.
	instant bool
	// wide: two cuts in force together need three units, so that they
	// share no link: the overlapping plan runs on threeNodes.
	wide bool
	// apart: a pair's faults need not fall in consecutive steps.
	apart  bool
	trials int
}

var matrixKinds = map[sched.Kind]matrixKind{
	// A crashed server's client fails and ends the trial: the crash's
	// plans run on stores whose client needs neither.
	faults.Crash:      {pair: "", nodes: storeNodes},
	faults.Pause:      {pair: ""},
	faults.ClockJump:  {pair: ""},
	faults.ClockDrift: {pair: ""},
	// Two cuts in force together are two links (which never share a pair
	// of nodes); every other cut has a pause beside it.
	faults.Partition:   {pair: "-"},
	faults.OneWay:      {pair: "-"},
	faults.Link:        {pair: "-", partner: "link", wide: true},
	faults.Bipartition: {pair: "-", nodes: threeNodes, on: []string{"s1", "s2", "s3"}},
	// The datagrams are in flight at 10 ms only.
	faults.Drop: {nodes: udpNodes, window: "from: 10ms\n  until: 2s\n  spread: false", long: "from: 10ms\n  until: 2s\n  spread: false", apart: true, instant: true, trials: 8},
	// A hold needs bytes waiting, never there in a lull: it joins a burst
	// of round trips (every 20 ms). Two holds of two connections are in
	// force together.
	faults.Hold: {window: "from: 50ms\n  until: 200ms", long: "from: 50ms\n  until: 200ms", partner: "hold", apart: true},
	faults.Slow: {window: "from: 50ms\n  until: 200ms", apart: true},
	faults.Flap: {window: "from: 50ms\n  until: 200ms", apart: true},
	// A gray needs deliveries seen before it, to know the commonest kind.
	faults.Gray: {window: "from: 50ms\n  until: 200ms", long: "from: 50ms\n  until: 200ms", apart: true},
	// A reset ends its client's trial: only a pause drawn first makes a
	// pair.
	faults.Reset: {pair: "-", trials: 12, apart: true, instant: true},
	faults.Power: {nodes: storeNodes, on: []string{"s1", "s2"}, window: "from: 20ms\n  until: 300ms", long: "from: 20ms\n  until: 300ms",
		extra: "  data: [\"{{tmp}}/db\"]\n  spread: time\n  persist: [none, prefix, subset, torn]\n", pair: "stall", partner: "corrupt", apart: true},
	faults.Corrupt: {nodes: diskNodes, on: []string{"s1"}, window: "from: 20ms\n  until: 300ms", long: "from: 20ms\n  until: 300ms",
		extra: "  data: [\"{{tmp}}/db\"]\n  spread: time\n", with: "crash", apart: true},
	faults.IOError: {nodes: diskNodes, on: []string{"s1"}, window: "from: 20ms\n  until: 90ms", long: "from: 20ms\n  until: 300ms",
		extra: "  data: [\"{{tmp}}/db\"]\n  spread: time\n", pair: "stall", apart: true, instant: true},
	faults.Stall: {nodes: diskNodes, on: []string{"s1"}, window: "from: 20ms\n  until: 90ms", long: "from: 20ms\n  until: 300ms",
		extra: "  data: [\"{{tmp}}/db\"]\n  spread: time\n", pair: "ioerror", apart: true, instant: true},
}

// matrixPlan is the faults: section of one cell of the matrix.
func matrixPlan(k sched.Kind, mk matrixKind, mode, arr string) (kinds []string, text string) {
	kinds = []string{k.String()}
	if mk.with != "" {
		kinds = append(kinds, mk.with)
	}
	budget, window, overlap, outage, hold := 1, "from: 50ms\n  until: 51ms", 1, "30ms", "60ms"
	if mk.window != "" {
		window = mk.window
	}
	switch arr {
	case "back-to-back":
		budget = 2
		switch mk.pair {
		case "":
		case "-":
			kinds = append(kinds, "pause")
		default:
			kinds = append(kinds, mk.pair)
		}
	case "overlapping":
		// Both triggers within 100 ms, each fault in force up to 300 ms:
		// the second mostly lands while the first is in force.
		budget, overlap, outage, hold = 2, 2, "300ms", "300ms"
		window = "from: 50ms\n  until: 150ms"
		if mk.long != "" {
			window = mk.long
		}
		partner := mk.partner
		switch {
		case mk.instant:
			partner, budget = "drift", 4
		case partner == "":
			partner = "pause"
		}
		if !slices.Contains(kinds, partner) {
			kinds = append(kinds, partner)
		}
	}
	if mk.with != "" {
		budget++
	}
	on := mk.on
	switch {
	case mk.wide && arr == "overlapping":
		on = []string{"s1", "s2", "s3"}
	case on == nil:
		on = []string{"s1", "s2"}
	}
	for _, m := range aimModes {
		if m.name == mode {
			text = m.plan
		}
	}
	return kinds, fmt.Sprintf("faults:\n  kinds: [%s]\n  nodes: [%s]\n  budget: %d\n  overlap: %d\n  %s\n  max_outage: %s\n  max_pause: %s\n  max_hold: %s\n%s%s",
		strings.Join(kinds, ", "), strings.Join(on, ", "), budget, overlap, window, outage, outage, hold, mk.extra, text)
}

// inForce is a fault of a trace while it acts: from its step to its
// recovery (a restart, a heal) or to the end of its while.
type inForce struct {
	kind sched.Kind
	node string // a crash's or power cut's node, which its restart names
	cut  bool   // a cut of the network, which a heal ends
	end  time.Duration
}

// forceOf is how long a recorded fault stays in force.
func forceOf(op sched.Op, now time.Duration) inForce {
	f := inForce{kind: op.Kind, end: now}
	switch op.Kind {
	case faults.Crash, faults.Power:
		f.node, f.end = op.Node, time.Duration(1<<62)
	case faults.Partition, faults.OneWay, faults.Link, faults.Bipartition:
		f.cut, f.end = !strings.HasPrefix(op.Peer, "cuts nothing"), time.Duration(1<<62)
	case faults.Pause, faults.Hold:
		f.end = now + time.Duration(op.Delay)
	case faults.Slow, faults.Flap:
		f.end = now + time.Duration(op.Pick)
	case faults.ClockJump, faults.ClockDrift:
		f.end = time.Duration(1 << 62) // until the quiet period undoes it
	}
	return f
}

// faultSteps reads a trace's faults: the steps of the injections, and
// whether one was injected while another was in force.
func faultSteps(recs []sched.Record) (steps []int, kinds []sched.Kind, together bool) {
	var force []inForce
	for i, rec := range recs {
		now := time.Duration(rec.VTime)
		force = slices.DeleteFunc(force, func(f inForce) bool { return !f.cut && f.node == "" && f.end <= now })
		switch k := rec.Op.Kind; {
		case k == faults.Restart:
			force = slices.DeleteFunc(force, func(f inForce) bool { return f.node == rec.Op.Node })
		case k == faults.Heal:
			if j := slices.IndexFunc(force, func(f inForce) bool { return f.cut }); j >= 0 {
				force = slices.Delete(force, j, j+1)
			}
		case k.IsFault() && !rec.Auto:
			together = together || len(force) > 0
			steps, kinds = append(steps, i), append(kinds, k)
			if f := forceOf(rec.Op, now); f.cut || f.node != "" || f.end > now {
				force = append(force, f)
			}
		}
	}
	return steps, kinds, together
}

// Every fault kind, aimed every way a plan aims, alone, two back to back
// and two in force together: each trace holding the kind replays to the
// same ops and outcome. Kinds come from faults.Kinds() and modes from
// aimModes, so neither a new kind nor a new mode can be left out; each
// cell must show its arrangement in some trial, so none passes by
// injecting less.
func TestReplayMatrix(t *testing.T) {
	requireTrials(t)
	bin := repoPath("testdata", "bin", "c")
	for _, prog := range []string{"tick_client", "disk_log", "udp_client"} {
		if _, err := os.Stat(filepath.Join(bin, prog)); err != nil {
			t.Skipf("skipping: %v (make testdata builds it)", err)
		}
	}
	for k := range matrixKinds {
		if !faults.Known(k) || faults.ReplayOf(k).Recovery {
			t.Errorf("matrixKinds lists %q, no fault kind a plan may name", k)
		}
	}
	for _, want := range faults.Kinds() {
		if faults.ReplayOf(want).Recovery {
			continue
		}
		mk := matrixKinds[want]
		for _, mode := range aimModes {
			for _, arr := range arrangements {
				t.Run(fmt.Sprintf("%s/%s/%s", want, mode.name, arr), func(t *testing.T) {
					replayCell(t, bin, want, mk, mode.name, arr)
				})
			}
		}
	}
}

func replayCell(t *testing.T, bin string, want sched.Kind, mk matrixKind, mode, arr string) {
	nodes := tcpNodes
	switch {
	case mk.wide && arr == "overlapping":
		nodes = threeNodes
	case mk.nodes != "":
		nodes = mk.nodes
	}
	kinds, plan := matrixPlan(want, mk, mode, arr)
	dir := t.TempDir()
	sp := loadText(t, filepath.Join(dir, "cell.yaml"),
		fmt.Sprintf("name: matrix-%s\n%s%stime: {delays: 0}\nlimits: {virtual_time: 30s, real_time: 30s}\n", want, fmt.Sprintf(nodes, bin), plan))
	trials := 4
	if mk.trials > 0 {
		trials = mk.trials
	}
	if arr == "overlapping" {
		trials = max(trials, 5)
	}
	if mk.instant && arr == "overlapping" {
		trials = max(trials, 6)
	}
	sum, err := Run(t.Context(), sp, RunOptions{Trials: trials, Strategy: "pos", OutDir: filepath.Join(dir, "out"), TraceAll: true})
	if err != nil {
		t.Fatal(err)
	}
	replayed, shown, aimed := 0, 0, 0
	for _, r := range sum.Results {
		if r.Outcome.Kind == Error {
			t.Fatalf("trial %d: %v", r.Index, r.Outcome)
		}
		recs := traceRecords(t, r)
		steps, got, together := faultSteps(recs)
		if !slices.Contains(got, want) {
			continue
		}
		for _, rec := range recs {
			if rec.Op.Aimed {
				aimed++
			}
		}
		switch arr {
		case "alone":
			shown++
		case "back-to-back":
			if len(steps) >= 2 && (mk.apart || steps[1] == steps[0]+1) {
				shown++
			}
		case "overlapping":
			if together {
				shown++
			}
		}
		rr, err := Replay(t.Context(), r.TracePath, filepath.Join(dir, "replay"))
		if err != nil {
			t.Fatal(err)
		}
		if !rr.Same {
			t.Errorf("trial %d (faults %v at steps %v, %v): replay differs: %s; %v", r.Index, got, steps, r.Outcome.Kind, rr.Diff, rr.Trial.Outcome)
		}
		if mode == "probe" {
			if _, err := os.Stat(filepath.Join(rr.Trial.Dir, "probe-runs")); !os.IsNotExist(err) {
				t.Errorf("trial %d: the replay ran the probe (%v)", r.Index, err)
			}
		}
		replayed++
	}
	if replayed == 0 {
		t.Fatalf("no trial of %d injected a %s (kinds %v): %v", trials, want, kinds, sum.ByKind)
	}
	if shown == 0 {
		t.Errorf("no trial injected its faults %s (kinds %v)", arr, kinds)
	}
	if mode == "probe" && want != faults.Reset && want != faults.Drop && aimed == 0 {
		t.Errorf("no fault was aimed by the probe")
	}
	t.Logf("%d traces with %s replayed, %d %s; outcomes %v", replayed, want, shown, arr, sum.ByKind)
}

// A replay aims a probe-aimed fault with the recorded answer and puts up
// what the trace recorded, not what the injector drew this time: a trace
// whose slow link was edited (the same link, named the other way round,
// which the injector would never draw) replays the same ops, slowing the
// link as the edited record names it. (Before replays kept the record's
// draws, it diverged there.)
func TestReplayEditedAim(t *testing.T) {
	requireTrials(t)
	bin := repoPath("testdata", "bin", "c")
	if _, err := os.Stat(filepath.Join(bin, "tick_client")); err != nil {
		t.Skipf("skipping: %v (make testdata builds it)", err)
	}
	_, plan := matrixPlan(faults.Slow, matrixKinds[faults.Slow], "probe", "alone")
	dir := t.TempDir()
	sp := loadText(t, filepath.Join(dir, "aim.yaml"),
		fmt.Sprintf("name: edited-aim\n%s%stime: {delays: 0}\nlimits: {virtual_time: 30s, real_time: 30s}\n", fmt.Sprintf(tcpNodes, bin), plan))
	sum, err := Run(t.Context(), sp, RunOptions{Trials: 1, Strategy: "pos", OutDir: filepath.Join(dir, "out"), TraceAll: true})
	if err != nil {
		t.Fatal(err)
	}
	r := sum.Results[0]
	b, err := os.ReadFile(r.TracePath)
	if err != nil {
		t.Fatal(err)
	}
	// The link the probe's answer led to, the other way round.
	var from, to string
	for _, rec := range traceRecords(t, r) {
		if rec.Op.Kind == faults.Slow && rec.Op.Aimed {
			from, to, _ = strings.Cut(strings.TrimPrefix(rec.Op.Object, "link:"), "|")
		}
	}
	if from == "" {
		t.Fatal("no probe-aimed slow in the trace")
	}
	edited := strings.Replace(string(b), `"object":"link:`+from+`|`+to+`"`, `"object":"link:`+to+`|`+from+`"`, 1)
	if edited == string(b) {
		t.Fatal("the slow's object is not in the trace")
	}
	path := filepath.Join(dir, "edited.jsonl")
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	rr, err := Replay(t.Context(), path, filepath.Join(dir, "replay"))
	if err != nil {
		t.Fatal(err)
	}
	if !rr.Same {
		t.Fatalf("replay of an edited aim: %s", rr.Diff)
	}
	want, slows := "link:"+to+"|"+from, 0
	for _, rec := range rr.Trial.Records {
		if rec.Op.Kind == faults.Slow {
			slows++
			if rec.Op.Object != want {
				t.Errorf("the replay slowed %s, want the edited record's %s", rec.Op.Object, want)
			}
		}
	}
	if slows == 0 {
		t.Error("the replay made no slow")
	}
}
