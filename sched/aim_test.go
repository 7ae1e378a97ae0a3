package sched

import (
	"strings"
	"testing"
)

// A probe-aimed fault is recorded with what its aim settled (node, link,
// size) but named by its kind as offered: a replay finds it among the
// offers, which carry no target yet, and Recalled gives the record whose
// answer aims it. Traces written before Aimed existed still match.
func TestReplayProbeAimed(t *testing.T) {
	slow := Kind("slow")
	offer := func() *Op { return &Op{ID: 1<<52 + 1, LPID: "fault", Kind: slow, Object: ProbeObject} }
	for _, tc := range []struct {
		name string
		rec  Op
	}{
		{"aimed", Op{ID: 1<<52 + 1, LPID: "fault", Kind: slow, Node: "n2", Object: "link:n2|n1", Aim: "n2", Aimed: true, Delay: 724, Pick: 1248}},
		// A link kind's aim settled its Object; the answer marks it.
		{"before aimed, a link", Op{ID: 1<<52 + 1, LPID: "fault", Kind: slow, Node: "n2", Object: "link:n2|n1", Aim: "n2"}},
		// A node kind's Object stayed the offer's.
		{"before aimed, a node", Op{ID: 1<<52 + 1, LPID: "fault", Kind: slow, Node: "n2", Object: ProbeObject}},
		// The probe printed nothing, and the node was drawn.
		{"no answer", Op{ID: 1<<52 + 1, LPID: "fault", Kind: slow, Node: "n1", Object: "link:n1|n3", Aimed: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sleep := &Op{ID: 7, LPID: "n1/0/t0", Kind: Sleep, Site: "a+0x1"}
			r := NewReplay(&Trace{Records: []Record{{Step: 1, Op: tc.rec}}}, nil, nil)
			r.Reset(1, 0)
			got, err := r.Next([]*Op{sleep, offer()})
			if err != nil || got != 1 {
				t.Fatalf("Next = %d, %v; want the offer", got, err)
			}
			if rec := r.Recalled(); rec == nil || rec.Node != tc.rec.Node || rec.Aim != tc.rec.Aim {
				t.Fatalf("Recalled = %v, want the record", rec)
			}
			if k, want := NewKeyer().Key(offer()), Keys([]Record{{Op: tc.rec}}, nil)[0]; k != want {
				t.Errorf("the offer's key %v, the record's %v", k, want)
			}
		})
	}
	// A drawn fault of the same kind is no aimed one: its link names it.
	drawn := Op{ID: 1<<52 + 1, LPID: "fault", Kind: slow, Node: "n2", Object: "link:n2|n1"}
	r := NewReplay(&Trace{Records: []Record{{Step: 1, Op: drawn}}}, nil, nil)
	r.Reset(1, 0)
	if _, err := r.Next([]*Op{offer()}); err == nil || !strings.Contains(err.Error(), "object: expected link:n2|n1, got probe") {
		t.Fatalf("a drawn fault matched a probe's offer: %v", err)
	}
}

// AimDiffers names the first of what an aim settles that differs.
func TestAimDiffers(t *testing.T) {
	rec := Op{Kind: "slow", Node: "n2", Object: "link:n2|n1", Aim: "n2", Aimed: true, Delay: 724, Pick: 1248}
	for _, tc := range []struct {
		edit func(o *Op)
		want string
	}{
		{func(o *Op) {}, ""},
		{func(o *Op) { o.Node = "n1" }, "aimed node: expected n2, got n1"},
		{func(o *Op) { o.Object = "link:n2|n3" }, "aimed target: expected link:n2|n1, got link:n2|n3"},
		{func(o *Op) { o.Aim = "" }, `aimed aim: expected "n2", got ""`},
		{func(o *Op) { o.Delay = 5 }, "aimed size: expected 724, got 5"},
		{func(o *Op) { o.Pick = 9 }, "aimed pick: expected 1248, got 9"},
		{func(o *Op) { o.Disk = "torn" }, `aimed disk: expected "", got torn`},
	} {
		got := rec
		tc.edit(&got)
		if d := AimDiffers(&rec, &got); d != tc.want {
			t.Errorf("AimDiffers = %q, want %q", d, tc.want)
		}
	}
}

// Forced takes a probe-aimed decision as the probe's offer and recalls
// its record, whose answer and draws aim it.
func TestForcedProbeAimed(t *testing.T) {
	rec := Op{ID: 1<<52 + 1, LPID: "fault", Kind: "slow", Node: "n2", Object: "link:n2|n1", Aim: "n2", Aimed: true, Delay: 724}
	f := NewForced([]Decision{{Kind: InjectDecision, Key: Keys([]Record{{Op: rec}}, nil)[0], Op: rec}}, nil)
	f.Reset(1, 0)
	sleep := &Op{ID: 7, LPID: "n1/0/t0", Kind: Sleep, Site: "a+0x1"}
	offer := &Op{ID: 1<<52 + 3, LPID: "fault", Kind: "slow", Object: ProbeObject}
	got, err := f.Next([]*Op{sleep, offer})
	if err != nil || got != 1 {
		t.Fatalf("Next = %d, %v; want the offer", got, err)
	}
	if r := f.Recalled(); r == nil || r.Aim != "n2" {
		t.Fatalf("Recalled = %v", r)
	}
	if got, _ := f.Next([]*Op{sleep}); got != 0 || f.Recalled() != nil {
		t.Fatalf("the default order's choice recalled %v", f.Recalled())
	}
}
