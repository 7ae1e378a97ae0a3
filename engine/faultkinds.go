package engine

import (
	"time"

	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/tracer"
)

// faultApplier turns a chosen fault's effect into what the tracer does.
type faultApplier func(t *Trial, e faults.Effect) (tracer.Action, error)

// faultAppliers are the engine's side of the fault kinds, by mechanism
// (faults.Act): a kind carries its mechanism in its Effect, so a new kind
// that reuses one (a cut, a disk fault) needs no line here. ActHold, the
// kinds the injector carries out alone by holding ops back, has none.
var faultAppliers = map[faults.Act]faultApplier{
	faults.ActCrash: func(_ *Trial, e faults.Effect) (tracer.Action, error) {
		return tracer.Action{Crash: e.Node}, nil
	},
	faults.ActClock: func(_ *Trial, e faults.Effect) (tracer.Action, error) {
		return tracer.Action{Clocks: map[string]time.Duration{e.Node: e.Shift}}, nil
	},
	faults.ActDrift: func(_ *Trial, e faults.Effect) (tracer.Action, error) {
		return tracer.Action{Drifts: map[string]int64{e.Node: e.Drift}}, nil
	},
	faults.ActReset: func(_ *Trial, e faults.Effect) (tracer.Action, error) {
		return tracer.Action{Reset: e.Sock}, nil
	},
	faults.ActDrop: func(_ *Trial, e faults.Effect) (tracer.Action, error) {
		return tracer.Action{Drop: e.Datagram}, nil
	},
	faults.ActRestart: func(t *Trial, e faults.Effect) (tracer.Action, error) {
		t.restarts = append(t.restarts, e.Node)
		return tracer.Action{}, nil
	},
	faults.ActCut:     applyCut,
	faults.ActHeal:    applyCut,
	faults.ActPower:   (*Trial).applyDisk,
	faults.ActCorrupt: (*Trial).applyDisk,
	faults.ActIOError: (*Trial).applyDisk,
	faults.ActStall:   (*Trial).applyDisk,
}
