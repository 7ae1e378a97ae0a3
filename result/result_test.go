package result

import (
	"testing"

	"github.com/lockstep-dev/lockstep/sched"
)

// TestSummaryAdd: failures, errors and the first of each are counted as
// trials come in.
func TestSummaryAdd(t *testing.T) {
	s := &Summary{ByKind: map[sched.OutcomeKind]int{}}
	for i, k := range []sched.OutcomeKind{sched.Pass, sched.Error, sched.Deadlock, sched.Pass, sched.Error, sched.ClientFailed} {
		s.Add(&TrialResult{Index: i, Outcome: sched.Outcome{Kind: k}})
	}
	if s.Trials != 6 || s.Failures != 2 || s.Errors != 2 || s.First.Index != 2 || s.FirstError.Index != 1 ||
		s.ByKind[sched.Pass] != 2 || s.ByKind[sched.Error] != 2 || len(s.Results) != 6 {
		t.Fatalf("summary %+v", s)
	}
	if got := s.HitRatio(); got != 2.0/6 {
		t.Errorf("hit ratio %v", got)
	}
	if got := (&Summary{}).HitRatio(); got != 0 {
		t.Errorf("hit ratio of no trials %v", got)
	}
}

// TestShard: a shard's trials interleave with the others'.
func TestShard(t *testing.T) {
	for _, tc := range []struct {
		shard        Shard
		trials, size int
		name         string
		first, last  int
	}{
		{Shard{Index: 0, Count: 1}, 10, 10, "0/1", 0, 9},
		{Shard{Index: 1, Count: 3}, 10, 3, "1/3", 1, 7},
		{Shard{Index: 2, Count: 3}, 10, 3, "2/3", 2, 8},
		{Shard{Index: 0, Count: 3}, 10, 4, "0/3", 0, 9},
		{Shard{Index: 4, Count: 5}, 3, 0, "4/5", 4, 4},
	} {
		if got := tc.shard.Size(tc.trials); got != tc.size {
			t.Errorf("%v.Size(%d) = %d, want %d", tc.shard, tc.trials, got, tc.size)
		}
		if tc.shard.String() != tc.name {
			t.Errorf("String() = %q, want %q", tc.shard.String(), tc.name)
		}
		if got := tc.shard.Trial(0); got != tc.first {
			t.Errorf("%v.Trial(0) = %d, want %d", tc.shard, got, tc.first)
		}
		if tc.size > 0 {
			if got := tc.shard.Trial(tc.size - 1); got != tc.last {
				t.Errorf("%v.Trial(%d) = %d, want %d", tc.shard, tc.size-1, got, tc.last)
			}
		}
	}
}
