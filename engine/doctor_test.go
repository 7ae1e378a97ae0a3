package engine

import (
	"testing"
)

// TestDoctor: on a machine that runs trials, nothing is missing and the
// trial at the end passes; every finding names what it looked at.
func TestDoctor(t *testing.T) {
	requireTrials(t)
	fs := Doctor(t.Context())
	if len(fs) != 10 {
		t.Fatalf("%d findings, want 10: %+v", len(fs), fs)
	}
	for _, f := range fs {
		if f.Standing == Lacks || f.What == "" || f.Detail == "" {
			t.Errorf("%+v", f)
		}
	}
	if last := fs[len(fs)-1]; last.What != "a trial" || last.Standing != Has {
		t.Errorf("last finding %+v, want a trial that passed", last)
	}
}

func TestKernelAtLeast(t *testing.T) {
	for _, tc := range []struct {
		release string
		want    bool
	}{
		{"6.18.44-fc-v1272", true},
		{"5.8.0", true},
		{"5.10.0-28-amd64", true},
		{"5.7.19", false},
		{"4.19.0", false},
		{"6.1", true},
		{"6", false},
		{"x.y", false},
		{"5.8-rc1", true},
	} {
		if got := kernelAtLeast(tc.release, minKernel); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.release, got, tc.want)
		}
	}
}
