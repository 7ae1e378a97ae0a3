package faults

import (
	"slices"
	"testing"
	"time"
)

// Step triggers count from the window's opening and fire only while ops
// run; time triggers stay deadlines; ByBoth draws about half of each; with
// no expected steps (a campaign's trial 0) every trigger is the time it
// was before step triggers existed.
func TestPlacer(t *testing.T) {
	const from, until = 100 * time.Millisecond, time.Second
	for seed := int64(0); seed < 200; seed++ {
		if p, want := NewPlacer(3, from, until, BySteps, 0, seed, 7), Triggers(3, from, until, seed, 7); !slices.Equal(p.times, want) || len(p.steps) != 0 {
			t.Fatalf("seed %d: without expected steps, triggers %v %v, want times %v", seed, p.times, p.steps, want)
		}
		if p := NewPlacer(3, from, until, ByTime, 50, seed, 7); len(p.steps) != 0 {
			t.Fatalf("seed %d: ByTime drew steps %v", seed, p.steps)
		}
	}

	p := NewPlacer(2, from, until, BySteps, 50, 1, 7)
	if len(p.steps) != 2 || len(p.times) != 0 {
		t.Fatalf("BySteps: times %v, steps %v", p.times, p.steps)
	}
	first := p.steps[0]
	p.Observe(0, 3)
	if p.Due(0, 3+first) {
		t.Fatal("a step trigger fired before the window opened")
	}
	p.Observe(from, 10) // the window opens at step 10
	if first > 0 && p.Due(from, 10+first-1) {
		t.Fatalf("step trigger %d fired a step early", first)
	}
	if !p.Due(from, 10+first) {
		t.Fatalf("step trigger %d did not fire at step %d", first, 10+first)
	}
	if _, ok := p.Next(from); ok {
		t.Fatal("a step trigger is a deadline")
	}
	if k := p.Take(from, 10+first); k != "step" {
		t.Fatalf("took a %q trigger, want a step", k)
	}
	if _, steps := p.Pending(); len(steps) != 1 {
		t.Fatalf("pending steps %v after a take", steps)
	}
	p.Observe(until, 70)
	if got := p.Steps(90); got != 60 {
		t.Fatalf("window steps %d, want 60 (10 to 70)", got)
	}

	steps, times := 0, 0
	for seed := int64(0); seed < 1000; seed++ {
		p := NewPlacer(2, from, until, ByBoth, 50, seed, 7)
		steps += len(p.steps)
		times += len(p.times)
		for _, s := range p.steps {
			if s < 0 || s >= 50 {
				t.Fatalf("seed %d: step trigger %d outside [0, 50)", seed, s)
			}
		}
		if at, ok := p.Next(0); len(p.times) > 0 && (!ok || at != p.times[0]) {
			t.Fatalf("seed %d: next deadline %v %v, times %v", seed, at, ok, p.times)
		}
	}
	if steps < 900 || times < 900 {
		t.Fatalf("ByBoth drew %d steps and %d times of 2,000", steps, times)
	}
}

// TestPlacerRedraw: a fork draws the pending triggers again over what is
// left of the window, the same for the same seed, and keeps their number.
func TestPlacerRedraw(t *testing.T) {
	for _, by := range []By{ByTime, BySteps, ByBoth} {
		p := NewPlacer(4, time.Second, 5*time.Second, by, 100, 1, 7)
		p.Observe(time.Second, 10)
		p.Take(time.Second, 10) // one made
		p.Observe(2*time.Second, 40)
		q := *p
		p.Redraw(9, 7, 2*time.Second, 40)
		q.Redraw(9, 7, 2*time.Second, 40)
		if got := len(p.times) + len(p.steps); got != 3 {
			t.Errorf("%v: %d triggers after the redraw, want 3", by, got)
		}
		for _, at := range p.times {
			if at < 2*time.Second || at >= 5*time.Second {
				t.Errorf("%v: time trigger %v outside what is left of the window", by, at)
			}
		}
		for _, s := range p.steps {
			if s < 30 || s >= 100 {
				t.Errorf("%v: step trigger %d not between the steps the window held (30) and those expected (100)", by, s)
			}
		}
		if !slices.Equal(p.times, q.times) || !slices.Equal(p.steps, q.steps) {
			t.Errorf("%v: the same seed drew %v %v, then %v %v", by, p.times, p.steps, q.times, q.steps)
		}
		if by == ByTime && len(p.steps) > 0 || by == BySteps && len(p.times) > 0 {
			t.Errorf("%v: drew times %v and steps %v", by, p.times, p.steps)
		}
	}
}
