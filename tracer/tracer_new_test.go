package tracer

import "testing"

// TestKindTableOpKinds: every kind the tracer makes ops of is one of
// sched's op kinds, never a fault kind (sched.Kind.IsFault).
func TestKindTableOpKinds(t *testing.T) {
	kinds := kindTable(&Tracer{})
	if len(kinds) == 0 {
		t.Fatal("empty kind table")
	}
	for k := range kinds {
		if k.IsFault() {
			t.Errorf("the tracer's op kind %q is a fault kind to sched", k)
		}
	}
}
