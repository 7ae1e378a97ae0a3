package sched

import (
	"encoding/json"
	"testing"
)

// Kinds are their names in traces: sched's op kinds, and any well-formed
// name for a fault kind, which package faults defines.
func TestKindNames(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault bool
		bad   bool
	}{
		{name: "connect"}, {name: "deliver"}, {name: "advance"}, {name: "shutdown"},
		{name: "crash", fault: true}, {name: "clock", fault: true}, {name: "ioerror", fault: true},
		{name: "flap2", fault: true}, // unknown here: faults decides
		{name: "", bad: true}, {name: "invalid", bad: true}, {name: "Crash", bad: true},
		{name: "one-way", bad: true}, {name: "2pc", bad: true}, {name: "kind(3)", bad: true},
	} {
		k, err := ParseKind(tc.name)
		if tc.bad {
			if err == nil {
				t.Errorf("ParseKind(%q) = %v, want an error", tc.name, k)
			}
			var back Kind
			if err := json.Unmarshal([]byte(`"`+tc.name+`"`), &back); err == nil {
				t.Errorf("a trace's kind %q read as %v", tc.name, back)
			}
			continue
		}
		if err != nil || k.String() != tc.name || k.IsFault() != tc.fault {
			t.Errorf("ParseKind(%q) = %v (fault %v), %v", tc.name, k, k.IsFault(), err)
		}
		b, err := json.Marshal(k)
		if err != nil || string(b) != `"`+tc.name+`"` {
			t.Errorf("%v marshals as %s, %v", k, b, err)
		}
	}
	if KindInvalid.String() != "invalid" || KindInvalid.IsFault() {
		t.Errorf("the zero Kind is %q, fault %v", KindInvalid, KindInvalid.IsFault())
	}
}
