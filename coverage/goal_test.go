package coverage

import (
	"slices"
	"testing"
)

// A goal's words are its pattern's literal words, whatever regular
// syntax surrounds them; a line is as close as the words it holds in order.
func TestGoal(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		words   []string
	}{
		{"migration finished", []string{"migration", "finished"}},
		{`^\[WARN\] raft-(n\d+): (?i)Leadership transfer to \S+ timed out$`, []string{"warn", "raft", "leadership", "transfer", "timed", "out"}},
		{"snapshot (sent|installed) on follower", []string{"snapshot", "sent", "installed", "follower"}},
		{"[Mm]igration done", []string{"migration", "done"}}, // a case-folded literal
		{"migrat(ion|ing) done", []string{"migrati", "done"}},
		{`^\d+$`, nil},
		{"(unclosed", nil},
	} {
		if got := GoalWords(tc.pattern); !slices.Equal(got, tc.words) {
			t.Errorf("%q: words %q, want %q", tc.pattern, got, tc.words)
		}
	}
	words := GoalWords("migration finished after commits in order")
	for _, tc := range []struct {
		line string
		near int
	}{
		{"hellos came from delta charlie bravo alpha; migration started", 1},
		{"commits came from alpha bravo charlie delta; migration finished", 2},
		{"Migrations finished 12 commits after 3 in order", 4},
		{"finished: migration", 1}, // out of order
		{"commits came from alpha", 1},
		{"", 0},
	} {
		if got := Near(words, tc.line); got != tc.near {
			t.Errorf("%q: %d words of %q in order, want %d", tc.line, got, words, tc.near)
		}
	}
	if Near(GoalWords("migrat(ion|ing) done"), "Migration done") != 2 {
		t.Error("a literal cut by a class is not held by the line's word")
	}
}
