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
	"github.com/lockstep-dev/lockstep/spec"
)

// tcpNodes are two echo servers and two clients that make a round trip
// every 20 ms: what crash, partition, pause, clock, drift and reset act on.
const tcpNodes = `nodes:
  - name: s1
    role: server
    command: ["%[1]s/pingpong_server", "7000"]
    ready: {listen: 7000}
  - name: s2
    role: server
    command: ["%[1]s/pingpong_server", "7000"]
    ready: {listen: 7000}
  - name: c1
    role: client
    command: ["%[1]s/tick_client", "s1", "7000", "20", "20"]
  - name: c2
    role: client
    command: ["%[1]s/tick_client", "s2", "7000", "20", "20"]
`

// udpNodes are two UDP echo servers and their clients, for drops.
const udpNodes = `nodes:
  - name: s1
    role: server
    command: ["%[1]s/udp_echo", "7000"]
  - name: s2
    role: server
    command: ["%[1]s/udp_echo", "7000"]
  - name: c1
    role: client
    start_delay: 10ms
    command: ["%[1]s/udp_client", "s1", "7000", "8"]
  - name: c2
    role: client
    start_delay: 10ms
    command: ["%[1]s/udp_client", "s2", "7000", "8"]
`

// replaySpec is what TestReplayEveryFault runs a fault kind with beyond
// the default: tcpNodes, a window of 50–51 ms, and a pause as the second
// fault of a pair.
type replaySpec struct {
	nodes, window string
	// alone: a pair is two faults of the kind itself.
	alone bool
	// apart: the two faults of a pair need not fall in consecutive steps.
	apart bool
	// pairTrials, when set, is the trials a pair takes.
	pairTrials int
	// elsewhere names the test that replays the kind, with the spec it
	// needs (a storage fault needs data files).
	elsewhere string
}

// replaySpecs are the kinds TestReplayEveryFault runs otherwise than by
// default. Every other kind runs by default, so a new kind is replayed
// whether or not it is listed here, and fails the test when it needs a
// spec of its own and has none.
var replaySpecs = map[sched.Kind]replaySpec{
	faults.Crash:      {alone: true},
	faults.Pause:      {alone: true},
	faults.ClockJump:  {alone: true},
	faults.ClockDrift: {alone: true},
	// The datagrams are in flight at 10 ms only.
	faults.Drop: {nodes: udpNodes, window: "from: 10ms\n  until: 2s\n  spread: false", alone: true, apart: true},
	// A hold needs bytes waiting, never there in a lull: it joins a burst
	// of round trips (every 20 ms).
	faults.Hold: {window: "from: 50ms\n  until: 200ms", alone: true, apart: true},
	// A reset ends its client's trial: only a pause drawn first makes a
	// pair (half the draws).
	faults.Reset:   {pairTrials: 8},
	faults.Power:   {elsewhere: "TestReplayStorageFaults"},
	faults.Corrupt: {elsewhere: "TestReplayStorageFaults"},
	faults.IOError: {elsewhere: "TestReplayStorageFaults"},
	faults.Stall:   {elsewhere: "TestReplayStorageFaults"},
}

// Every fault kind's trace replays to the same ops and outcome, one fault
// alone and two back to back (in consecutive steps: both triggers fall in
// one idle stretch of the clock, so each is taken as soon as offered).
// Recoveries replay with the faults they follow.
func TestReplayEveryFault(t *testing.T) {
	requireTrials(t)
	bin := repoPath("testdata", "bin", "c")
	if _, err := os.Stat(filepath.Join(bin, "tick_client")); err != nil {
		t.Skipf("skipping: %v (make testdata builds it)", err)
	}
	for k := range replaySpecs {
		if !faults.Known(k) || faults.ReplayOf(k).Recovery {
			t.Errorf("replaySpecs lists %q, no fault kind a plan may name", k)
		}
	}
	for _, want := range faults.Kinds() {
		rs := replaySpecs[want]
		if faults.ReplayOf(want).Recovery || rs.elsewhere != "" {
			continue
		}
		kind := want.String()
		for _, budget := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s-%d", kind, budget), func(t *testing.T) {
				nodes, window := tcpNodes, "from: 50ms\n  until: 51ms"
				if rs.nodes != "" {
					nodes = rs.nodes
				}
				if rs.window != "" {
					window = rs.window
				}
				dir := t.TempDir()
				path := filepath.Join(dir, kind+".yaml")
				kinds := kind
				if budget == 2 && !rs.alone {
					// One cut at a time, and a reset ends its client: the
					// second fault is of another kind.
					kinds += ", pause"
				}
				text := fmt.Sprintf("name: replay-%s\n%sfaults:\n  kinds: [%s]\n  nodes: [s1, s2]\n  budget: %d\n  %s\n  max_outage: 30ms\n  max_pause: 30ms\ntime: {delays: 0}\nlimits: {virtual_time: 30s, real_time: 30s}\n",
					kind, fmt.Sprintf(nodes, bin), kinds, budget, window)
				if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
				sp, err := spec.Load(path)
				if err != nil {
					t.Fatal(err)
				}
				trials := 4
				if budget == 2 && rs.pairTrials > 0 {
					trials = rs.pairTrials
				}
				sum, err := Run(t.Context(), sp, RunOptions{Trials: trials, Strategy: "pos", OutDir: filepath.Join(dir, "out"), TraceAll: true})
				if err != nil {
					t.Fatal(err)
				}
				replayed, backToBack := 0, 0
				for _, r := range sum.Results {
					if r.Outcome.Kind == Error {
						t.Fatalf("trial %d: %v", r.Index, r.Outcome)
					}
					var steps []int
					of := false
					for i, rec := range traceRecords(t, r) {
						if k := rec.Op.Kind; k.IsFault() && k != faults.Restart && k != faults.Heal && !rec.Auto {
							steps = append(steps, i)
							of = of || k == want
						}
					}
					if !of {
						continue
					}
					if len(steps) == 2 && steps[1] == steps[0]+1 {
						// Consecutive steps: the second fault's offer came
						// right after the first was applied.
						backToBack++
					}
					rr, err := Replay(t.Context(), r.TracePath, filepath.Join(dir, "replay"))
					if err != nil {
						t.Fatal(err)
					}
					if !rr.Same {
						t.Errorf("trial %d (faults at steps %v, %v): replay differs: %s; %v", r.Index, steps, r.Outcome.Kind, rr.Diff, rr.Trial.Outcome)
					}
					replayed++
				}
				if replayed == 0 {
					t.Fatalf("no trial injected a %s: %v", kind, sum.ByKind)
				}
				if budget == 2 && !rs.apart && backToBack == 0 {
					t.Errorf("no trial injected two faults (%s) back to back", kinds)
				}
				t.Logf("%d traces with %s replayed (%d back to back); outcomes %v", replayed, kind, backToBack, sum.ByKind)
			})
		}
	}
}

// A trace whose byte count was edited does not replay: the divergence
// names the field (issue 36: replay compares byte counts and peers), in
// the outcome and in Diff, which is all a test's failure message prints.
func TestReplayEditedBytes(t *testing.T) {
	requireTrials(t)
	sum := runFaultSpec(t, "restart-data", 1, true)
	r := sum.Results[0]
	b, err := os.ReadFile(r.TracePath)
	if err != nil {
		t.Fatal(err)
	}
	// The first send of 8 bytes now says 9.
	lines := strings.Split(string(b), "\n")
	edited := false
	for i, l := range lines {
		if strings.Contains(l, `"kind":"send"`) && strings.Contains(l, `"bytes":8`) {
			lines[i] = strings.Replace(l, `"bytes":8`, `"bytes":9`, 1)
			edited = true
			break
		}
	}
	if !edited {
		t.Fatal("no send of 8 bytes in the trace")
	}
	path := filepath.Join(t.TempDir(), "edited.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	rr, err := Replay(t.Context(), path, filepath.Join(t.TempDir(), "replay"))
	if err != nil {
		t.Fatal(err)
	}
	if rr.Same {
		t.Fatal("a trace with an edited byte count replayed as the same")
	}
	if got := rr.Trial.Outcome; got.Kind != Diverged || !strings.Contains(got.Detail, "bytes: expected 9, got 8") {
		t.Fatalf("want a divergence naming bytes, got %v (%s)", got, rr.Diff)
	}
	if !strings.Contains(rr.Diff, "bytes: expected 9, got 8") {
		t.Fatalf("Diff %q does not name the field that diverged", rr.Diff)
	}
}

// threeNodes are three echo servers, each with a client making a round
// trip every 20 ms: room for two cuts that share no link.
const threeNodes = tcpNodes + `  - name: s3
    role: server
    command: ["%[1]s/pingpong_server", "7000"]
    ready: {listen: 7000}
  - name: c3
    role: client
    command: ["%[1]s/tick_client", "s3", "7000", "20", "20"]
`

// With faults.overlap, two faults are in force at once — two cuts, or a
// hold beside a cut — each healed on its own, and the traces replay.
func TestReplayOverlappingFaults(t *testing.T) {
	requireTrials(t)
	bin := repoPath("testdata", "bin", "c")
	if _, err := os.Stat(filepath.Join(bin, "tick_client")); err != nil {
		t.Skipf("skipping: %v (make testdata builds it)", err)
	}
	for _, kinds := range []string{"link, partition, oneway", "link, hold"} {
		t.Run(strings.ReplaceAll(kinds, ", ", "+"), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "overlap.yaml")
			text := fmt.Sprintf("name: overlap\n%sfaults:\n  kinds: [%s]\n  nodes: [s1, s2, s3]\n  budget: 2\n  overlap: 2\n  from: 50ms\n  until: 200ms\n  max_outage: 100ms\n  max_hold: 100ms\ntime: {delays: 0}\nlimits: {virtual_time: 30s, real_time: 30s}\n",
				fmt.Sprintf(threeNodes, bin), kinds)
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			sp, err := spec.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			sum, err := Run(t.Context(), sp, RunOptions{Trials: 8, Strategy: "pos", OutDir: filepath.Join(dir, "out"), TraceAll: true})
			if err != nil {
				t.Fatal(err)
			}
			together := 0
			for _, r := range sum.Results {
				if r.Outcome.Kind == Error {
					t.Fatalf("trial %d: %v", r.Index, r.Outcome)
				}
				// Two faults are together in force when the second comes
				// before the first one's end: a cut's heal, a hold's
				// delay after it.
				cuts, most := 0, 0
				var holds []time.Duration // ends of the holds in force
				for _, rec := range traceRecords(t, r) {
					now := time.Duration(rec.VTime)
					holds = slices.DeleteFunc(holds, func(end time.Duration) bool { return end <= now })
					switch rec.Op.Kind {
					case faults.Heal:
						cuts--
					case faults.Hold:
						holds = append(holds, now+time.Duration(rec.Op.Delay))
					case faults.Link, faults.Partition, faults.OneWay:
						cuts++
					}
					most = max(most, cuts+len(holds))
				}
				if most < 2 {
					continue
				}
				together++
				rr, err := Replay(t.Context(), r.TracePath, filepath.Join(dir, "replay"))
				if err != nil {
					t.Fatal(err)
				}
				if !rr.Same {
					t.Errorf("trial %d (two faults in force): replay differs: %s; %v", r.Index, rr.Diff, rr.Trial.Outcome)
				}
			}
			if together == 0 {
				t.Fatalf("no trial had two faults in force at once: %v", sum.ByKind)
			}
			t.Logf("%d of %d trials had two faults in force at once, and replayed; outcomes %v", together, sum.Trials, sum.ByKind)
		})
	}
}
