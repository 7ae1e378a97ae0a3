package spec

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestVocabulary: the words spec checks itself (strategies, schemes,
// models, capabilities, clock directions, fault kinds, host names), each
// accepted or refused with its one-line file:line: field: error. The
// engine's TestSpecVocabulary checks that the runtime packages take every
// word accepted here.
func TestVocabulary(t *testing.T) {
	const nodes = `name: t
nodes:
  - name: %s
    command: ["/bin/true"]%s
  - name: c1
    role: client
    command: ["/bin/true"]
`
	spec := func(name, node, rest string) string { return fmt.Sprintf(nodes, name, node) + rest }
	sched := func(strategy, scheme string) string {
		return spec("s1", "", fmt.Sprintf("scheduler:\n  strategy: %q\n  conflict:\n    scheme: %q\n", strategy, scheme))
	}
	for _, tc := range []struct {
		name, yaml string
		wantErr    string // "" for none
	}{
		{"random", sched("random", "pc"), ""},
		{"rw", sched("rw", "proc+pc"), ""},
		{"pct+", sched("pct+", "pid+pc"), ""},
		{"pos*+", sched("pos*+", "proc+stack:1"), ""},
		{"pid+stack:16", sched("pos", "pid+stack:16"), ""},
		{"proc+pc+msg", sched("pos+", "proc+pc+msg"), ""},
		{"proc+stack:2+kind", sched("pos+", "proc+stack:2+kind"), ""},
		{"unknown strategy", sched("dfs+", "pc"), `s.yaml:9: scheduler.strategy: unknown strategy "dfs+" (want one of random, pct, pos, pos*, explore, each with an optional +)`},
		{"strategy with two plus", sched("pos++", "pc"), `s.yaml:9: scheduler.strategy: unknown strategy "pos++" (want one of random, pct, pos, pos*, explore, each with an optional +)`},
		{"strategy in capitals", sched("POS", "pc"), `s.yaml:9: scheduler.strategy: unknown strategy "POS" (want one of random, pct, pos, pos*, explore, each with an optional +)`},
		{"K above 16", sched("pos", "proc+stack:17"), `s.yaml:11: scheduler.conflict.scheme: signature scheme "proc+stack:17": K must be an integer from 1 to 16`},
		{"K of 99", sched("pos", "pid+stack:99"), `s.yaml:11: scheduler.conflict.scheme: signature scheme "pid+stack:99": K must be an integer from 1 to 16`},
		{"K of 0", sched("pos", "pid+stack:0"), `s.yaml:11: scheduler.conflict.scheme: unknown scheme "pid+stack:0" (want pc, proc+pc, pid+pc, proc+stack:K or pid+stack:K, each optionally followed by +kind or +msg)`},
		{"K of 100", sched("pos", "pid+stack:100"), `s.yaml:11: scheduler.conflict.scheme: unknown scheme "pid+stack:100" (want pc, proc+pc, pid+pc, proc+stack:K or pid+stack:K, each optionally followed by +kind or +msg)`},
		{"message suffix on a bad base", sched("pos", "stack:3+msg"), `s.yaml:11: scheduler.conflict.scheme: unknown scheme "stack:3+msg" (want pc, proc+pc, pid+pc, proc+stack:K or pid+stack:K, each optionally followed by +kind or +msg)`},
		{"scheme without pid", sched("pos", "stack:3"), `s.yaml:11: scheduler.conflict.scheme: unknown scheme "stack:3" (want pc, proc+pc, pid+pc, proc+stack:K or pid+stack:K, each optionally followed by +kind or +msg)`},
		{"model", spec("s1", "", "checker:\n  model: kv\n"), ""},
		{"unknown model", spec("s1", "", "checker:\n  model: queue\n"), `s.yaml:9: checker.model: unknown model "queue" (want register, kv, set)`},
		{"capabilities", spec("s1", "\n    capabilities: [net_admin, CAP_SYS_TIME, BPF]", ""), ""},
		{"unknown capability", spec("s1", "\n    capabilities: [NET_ADMIN, FLY]", ""), `s.yaml:5: nodes[0].capabilities: unknown capability "FLY"`},
		{"clock direction", spec("s1", "", "faults: {kinds: [clock], clock_direction: both}\n"), ""},
		{"unknown clock direction", spec("s1", "", "faults: {kinds: [clock], clock_direction: up}\n"), `s.yaml:8: faults.clock_direction: unknown direction "up" (want forward, backward or both)`},
		{"every fault kind", spec("s1", "", "faults: {kinds: [crash, partition, oneway, pause, clock, drift, reset, drop, hold]}\n"), ""},
		{"flap on one node", spec("s1", "", "faults: {kinds: [flap], max_hold: 300ms, max_outage: 2s}\n"), `s.yaml:8: faults.kinds: flap needs two of faults.nodes in different groups, got 1`},
		{"shortest outage and pause", spec("s1", "", "faults: {kinds: [partition, pause], max_outage: 90s, min_outage: 75s, max_pause: 1s, min_pause: 1s}\n"), ""},
		{"shortest outage past the longest", spec("s1", "", "faults: {kinds: [partition], max_outage: 20s, min_outage: 30s}\n"), `s.yaml:8: faults.min_outage: 30s is longer than faults.max_outage (20s)`},
		{"shortest pause past the default longest", spec("s1", "", "faults: {kinds: [pause], min_pause: 2s}\n"), `s.yaml:8: faults.min_pause: 2s is longer than faults.max_pause (1s)`},
		{"shortest outage of zero", spec("s1", "", "faults: {kinds: [crash], min_outage: 0s}\n"), `s.yaml:8: faults.min_outage: must be positive, got 0s`},
		{"restart is no fault to name", spec("s1", "", "faults: {kinds: [restart]}\n"), `s.yaml:8: faults.kinds: unknown fault "restart" (want ` + faultNames(" or ") + `; restart and heal follow them)`},
		{"host name of 63", spec(strings.Repeat("a", 63), "", ""), ""},
		{"host name with capitals", spec("Server1", "", ""), ""},
		{"host name ending in a dash", spec("s1-", "", ""), `s.yaml:3: nodes[0].name: "s1-" is not a valid host name (letters, digits and inner dashes, at most 63)`},
		{"host name with a dot", spec("s1.local", "", ""), `s.yaml:3: nodes[0].name: "s1.local" is not a valid host name (letters, digits and inner dashes, at most 63)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("s.yaml", []byte(tc.yaml))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
				t.Fatalf("error\n  got  %v\n  want %s", err, tc.wantErr)
			}
		})
	}
}

// TestParseCap reads names with and without CAP_, in any case.
func TestParseCap(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		ok   bool
	}{{"NET_ADMIN", unix.CAP_NET_ADMIN, true}, {"cap_sys_time", unix.CAP_SYS_TIME, true}, {"CAP_BPF", unix.CAP_BPF, true}, {"FLY", 0, false}} {
		got, err := ParseCap(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseCap(%q) = %d, %v", tc.in, got, err)
		}
	}
}

// TestFaultPlanKinds: bridge is a bipartition of the bridge shape, and
// each kind is listed once.
func TestFaultKinds(t *testing.T) {
	kinds := FaultKinds()
	if len(kinds) != len(faultKeywords)-1 || !slices.IsSorted(kinds) {
		t.Fatalf("FaultKinds() = %v", kinds)
	}
	seen := map[string]bool{}
	for _, w := range faultKeywords {
		if seen[w.name] {
			t.Errorf("keyword %q listed twice", w.name)
		}
		seen[w.name] = true
		if w.name != string(w.kind) && w.name != "bridge" {
			t.Errorf("keyword %q names kind %q: only bridge may differ", w.name, w.kind)
		}
		if k, _ := keyword(string(w.kind)); k.traits != w.traits {
			t.Errorf("keyword %q has traits %b, its kind's own keyword %b", w.name, w.traits, k.traits)
		}
	}
}

// TestFaultNames: the error messages list the keywords in the docs'
// order, as the bad-spec fixtures quote them. This is the one test that
// pins the whole list (TestVocabulary builds its messages from
// faultNames; faults-unknown-kind.err must quote it, as TestBadSpecs
// compares errors exactly).
func TestFaultNames(t *testing.T) {
	const want = "crash, partition, oneway, link, bipartition, bridge, hold, pause, clock, drift, reset, drop, power, corrupt, ioerror, stall, slow, flap or gray"
	if got := faultNames(" or "); got != want {
		t.Errorf("faultNames(\" or \") = %q, want %q", got, want)
	}
	if got := faultNames(", "); got != strings.Replace(want, " or ", ", ", 1) {
		t.Errorf("faultNames(\", \") = %q", got)
	}
}

// TestFaultTraits: what spec checks of a kind follows its keyword's
// traits: a link between two sides, a positive max_outage, storage.
func TestFaultTraits(t *testing.T) {
	var link, outage, storage []FaultKind
	for _, k := range FaultKinds() {
		if k.has(traitLink) {
			link = append(link, k)
		}
		if k.has(traitOutage) {
			outage = append(outage, k)
		}
		if k.has(traitStorage) {
			storage = append(storage, k)
			if !(FaultPlan{Kinds: []FaultKind{k}}).Storage() {
				t.Errorf("a plan of %s has no storage faults", k)
			}
		}
	}
	if want := []FaultKind{FaultFlap, FaultLink, FaultSlow}; !slices.Equal(link, want) {
		t.Errorf("kinds on a link %v, want %v", link, want)
	}
	if want := []FaultKind{FaultFlap, FaultSlow}; !slices.Equal(outage, want) {
		t.Errorf("kinds needing max_outage %v, want %v", outage, want)
	}
	if want := []FaultKind{FaultCorrupt, FaultIOError, FaultPower, FaultStall}; !slices.Equal(storage, want) {
		t.Errorf("storage kinds %v, want %v", storage, want)
	}
	if (FaultPlan{Kinds: []FaultKind{FaultCrash, FaultSlow}}).Storage() {
		t.Error("crash and slow are storage faults")
	}
}

// TestFaultFlap: flap is a keyword of its own, bounded by max_hold (each
// down phase) and max_outage (the whole flap).
func TestFaultFlap(t *testing.T) {
	const yaml = `name: flap
nodes:
  - name: s1
    command: ["/bin/true"]
  - name: s2
    command: ["/bin/true"]
  - name: c1
    role: client
    command: ["/bin/true"]
faults:
  kinds: [flap]
  max_hold: 400ms
  max_outage: 1500ms
`
	sp, err := Parse("flap.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	f := sp.Faults
	if !slices.Equal(f.Kinds, []FaultKind{FaultFlap}) || f.MaxHold != 400*time.Millisecond || f.MaxOutage != 1500*time.Millisecond {
		t.Fatalf("kinds %v, max_hold %v, max_outage %v", f.Kinds, f.MaxHold, f.MaxOutage)
	}
	if !slices.Contains(FaultKinds(), FaultFlap) {
		t.Fatalf("FaultKinds() = %v lacks flap", FaultKinds())
	}
}
