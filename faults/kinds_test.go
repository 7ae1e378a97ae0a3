package faults

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/sched"
)

// Every fault kind's entry is whole: a kind can be chosen, is drawn
// unless it is a recovery, and gives the deadline of what it holds back.
func TestKindDefs(t *testing.T) {
	kinds := Kinds()
	if len(kinds) != len(kindDefs) || !slices.IsSorted(kinds) {
		t.Fatalf("Kinds() = %v: not every kind, or not sorted", kinds)
	}
	for _, k := range kinds {
		d := kindDefs[k]
		if !k.IsFault() || !Known(k) {
			t.Errorf("%v: not a known fault kind", k)
		}
		if d.chose == nil {
			t.Errorf("%v: an entry that cannot be chosen", k)
		}
		recovery := k == Restart || k == Heal
		if recovery != (d.possible == nil) || recovery != (d.detail == nil) || recovery != ReplayOf(k).Recovery {
			t.Errorf("%v: possible and detail must be set unless it is a recovery, which a replay takes as one", k)
		}
		if (d.holds == nil) != (d.deadline == nil) {
			t.Errorf("%v: a kind that holds ops back needs their deadline too", k)
		}
		if d.holds != nil && d.act != ActHold {
			t.Errorf("%v: a kind the injector holds ops back for has no engine mechanism", k)
		}
		// The name round-trips as traces write it.
		b, _ := k.MarshalText()
		var back sched.Kind
		if err := back.UnmarshalText(b); err != nil || back != k {
			t.Errorf("%v: read back from a trace as %v, %v", k, back, err)
		}
	}
	for _, k := range []sched.Kind{sched.Deliver, sched.Advance, sched.KindInvalid, "nosuch"} {
		if Known(k) {
			t.Errorf("Known(%q) = true", string(k))
		}
	}
}

// define refuses what cannot be a fault kind and a kind defined twice.
func TestDefinePanics(t *testing.T) {
	ok := kindDef{chose: choseRestart, act: ActRestart}
	for _, tc := range []struct {
		name string
		kind sched.Kind
		def  kindDef
	}{
		{"empty", sched.KindInvalid, ok},
		{"op kind", sched.Deliver, ok},
		{"malformed", "Crash!", ok},
		{"twice", Crash, ok},
		{"no chose", "unchosen", kindDef{act: ActHold}},
		{"no act", "unchosen", kindDef{chose: choseRestart}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("define(%q) did not panic", string(tc.kind))
				}
				delete(kindDefs, "unchosen")
			}()
			define(tc.kind, tc.def)
		})
	}
}

// The table of kinds is written only while the package initialises: every
// call of define is in an init function (tests aside), so the table is
// global but not mutable state.
func TestDefineOnlyInInit(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	n := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fd, isFunc := decl.(*ast.FuncDecl)
			ast.Inspect(decl, func(x ast.Node) bool {
				call, ok := x.(*ast.CallExpr)
				if !ok {
					return true
				}
				if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "define" {
					n++
					if !isFunc || fd.Recv != nil || fd.Name.Name != "init" {
						t.Errorf("%s: define called outside an init function", fset.Position(call.Pos()))
					}
				}
				return true
			})
		}
		for _, decl := range f.Decls {
			// Nothing else writes the table.
			ast.Inspect(decl, func(x ast.Node) bool {
				switch s := x.(type) {
				case *ast.AssignStmt:
					for _, l := range s.Lhs {
						if ix, ok := l.(*ast.IndexExpr); ok && isIdent(ix.X, "kindDefs") {
							if fd, ok := decl.(*ast.FuncDecl); !ok || fd.Name.Name != "define" {
								t.Errorf("%s: kindDefs written outside define", fset.Position(s.Pos()))
							}
						}
					}
				case *ast.CallExpr:
					if isIdent(s.Fun, "delete") || isIdent(s.Fun, "clear") {
						if len(s.Args) > 0 && isIdent(s.Args[0], "kindDefs") {
							t.Errorf("%s: kindDefs changed", fset.Position(s.Pos()))
						}
					}
				}
				return true
			})
		}
	}
	if n == 0 {
		t.Fatal("no call of define found")
	}
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// TestKindTraits pins what the engine and a replay do with each of the
// kinds defined before slow's and flap's files: the mechanism (act), the
// targets gathered (needs), whether a spread plan takes it alone in a
// lull (onTraffic), whether it acts on a disk (storage) and how a replay
// treats it. At 076a671 the kinds' definitions were already in faults
// while act and needs lived in the engine and replay in sched (the names
// moved here in d36f072); these rows are what those said, but a
// partition's mechanism, which became the other cuts' ActCut when the
// engine's two appliers became one (netcut). A kind without
// a row is not checked here: a new kind pins its traits in its own test
// (TestSlowTraits, TestFlapTraits), so adding one does not edit this.
func TestKindTraits(t *testing.T) {
	remake := sched.FaultReplay{Remake: true}
	recovery := sched.FaultReplay{Recovery: true}
	want := map[sched.Kind]struct {
		act       Act
		needs     Need
		onTraffic bool
		storage   bool
		replay    sched.FaultReplay
	}{
		Crash:       {act: ActCrash, replay: remake},
		Restart:     {act: ActRestart, replay: recovery},
		Partition:   {act: ActCut, onTraffic: true, replay: remake},
		Heal:        {act: ActHeal, replay: recovery},
		Pause:       {act: ActHold, replay: remake},
		ClockJump:   {act: ActClock, replay: remake},
		ClockDrift:  {act: ActDrift, replay: remake},
		Reset:       {act: ActReset, needs: NeedSocks},
		Drop:        {act: ActDrop, needs: NeedDatagrams},
		OneWay:      {act: ActCut, onTraffic: true, replay: remake},
		Link:        {act: ActCut, onTraffic: true, replay: remake},
		Bipartition: {act: ActCut, onTraffic: true, replay: remake},
		Hold:        {act: ActHold, needs: NeedConns, onTraffic: true, replay: remake},
		Power:       {act: ActPower, storage: true, replay: sched.FaultReplay{Remake: true, KeepDraw: true}},
		Corrupt:     {act: ActCorrupt, needs: NeedDataFiles, storage: true, replay: sched.FaultReplay{KeepDraw: true}},
		IOError:     {act: ActIOError, storage: true, replay: remake},
		Stall:       {act: ActStall, storage: true, replay: remake},
		Slow:        {act: ActHold, onTraffic: true, replay: remake},
		Flap:        {act: ActHold, onTraffic: true, replay: sched.FaultReplay{Remake: true, KeepDraw: true}},
	}
	for k, w := range want {
		if !Known(k) {
			t.Errorf("%s: not defined", k)
			continue
		}
		d := kindDefs[k]
		if d.act != w.act || d.needs != w.needs || d.onTraffic != w.onTraffic || d.storage != w.storage || ReplayOf(k) != w.replay {
			t.Errorf("%s: act %d needs %b onTraffic %v storage %v replay %+v, want act %d needs %b onTraffic %v storage %v replay %+v",
				k, d.act, d.needs, d.onTraffic, d.storage, ReplayOf(k), w.act, w.needs, w.onTraffic, w.storage, w.replay)
		}
		if IsStorage(k) != w.storage {
			t.Errorf("IsStorage(%s) = %v", k, IsStorage(k))
		}
	}
}
