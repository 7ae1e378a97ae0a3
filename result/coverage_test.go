package result

import (
	"slices"
	"testing"
)

// Shards' features join by key, the first trial the least and the trials
// added; the curve counts the features first seen by each trial, as one
// process counts them.
func TestMergeCoverage(t *testing.T) {
	shard0 := []SeenFeature{{"kind", ":7000 PUT", 0, 2}, {"template", "ready", 0, 2}, {"ordering", "a ⇒ b", 4, 1}}
	shard1 := []SeenFeature{{"kind", ":7000 PUT", 1, 3}, {"kind", ":7000 GET", 3, 1}}
	c := MergeCoverage([][]SeenFeature{shard0, shard1}, []int{0, 1, 2, 3, 4, 5})
	if c.Features != 4 || c.Kinds != 2 || c.Templates != 1 || c.Orderings != 1 {
		t.Fatalf("merged %+v", c)
	}
	if want := []int{2, 2, 2, 3, 4, 4}; !slices.Equal(c.Curve, want) {
		t.Errorf("curve %v, want %v", c.Curve, want)
	}
	if put := c.Seen[0]; put.Key != ":7000 PUT" || put.First != 0 || put.Trials != 5 {
		t.Errorf("PUT merged as %+v", put)
	}
	if got := c.AddedSince(2); got != 1 {
		t.Errorf("the last 2 trials added %d, want 1", got)
	}
}
