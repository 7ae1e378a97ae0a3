package explain

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/internal/testutil"
)

// triggering is, per bug of testdata/bugs, the racing pairs its README
// gives as the triggering order, each as words that the named race (its
// sentence and the two ops' messages and parameters) must all contain;
// any one pair of a bug is a match.
var triggering = map[string][][]string{
	"locks-1":     {{"crash", "GRANT x 2 1"}, {"RESET 2", "HOLD x 2 1"}},
	"locks-2":     {{"REGISTER x", "RELEASE x"}, {"REGISTER x", "READY"}},
	"gproc-1":     {{"HELLO n2 2", "DOWN n2 1"}, {"restart", "DOWN n2 1"}, {"crash", "HELLO n2 2"}},
	"gproc-3":     {{"crash", "ANS"}, {"crash", "REQ"}},
	"mnesia-2":    {{"DEL k t1", "RESTART"}, {"DEL k t1", "APPLIED k"}, {"DEL k t1", "DEL k t1"}},
	"ms-1":        {{"crash", "PONG"}, {"crash", "LIST"}},
	"ra-1":        {{"SNAPEND", "BYE"}, {"SNAPEND", "CMD k1 v1"}, {"SNAPEND", "READY"}},
	"lease-1":     {{"advance", "RENEW"}, {"advance", "GRANT"}, {"advance", "GET"}, {"advance", "VAL"}},
	"rpc-1":       {{"advance", "GET"}, {"advance", "VAL"}},
	"retry-1":     {{"advance", "PRODUCE m"}, {"advance", "OK"}},
	"crash-1":     {{"crash", "OK"}, {"crash", "PUT"}},
	"partition-1": {{"partition", "ACK"}, {"partition", "HB"}},
	"power-1":     {{"power", "OK"}, {"power", "fsync"}},
	"rename-1":    {{"power", "OK"}, {"power", "rename"}},
	"corrupt-1":   {{"corrupt", "restart"}, {"corrupt", "crash"}},
	"tpc-1":       {{"LOCK bob", "LOCK alice"}},
	"thread-1":    {{"RETAINED", "MSG"}, {"RETAINED", "PUB"}},
	"fanout-1":    {{"REPL", "GET x"}},
	"jvm-2":       {{"CREATE", "CONFIRM"}},
	"backup-1":    {{"REPL ", "GET k"}},
	"counter-1":   {{"PUT c ", "GET c"}},
	"watch-1":     {{"EV ", "SNAP "}},
	"cache-1":     {{"SET k", "DEL k"}},
	"presence-1":  {{"close", "HELLO alice"}},
	"pool-1":      {{"PUT result", "GET result"}},
	"move-1":      {{"SET k", "TAKEN"}, {"MOVE", "SET k"}},
	"refresh-1":   {{"TOKENS", "401"}},
	"quorum-1":    {{"YES ", "TX "}, {"PREPARE ", "BAL"}},
	"fence-1":     {{"APPEND ", "END "}},
	"snap-1":      {{"SNAP ", "APPEND "}},
	"stock-1":     {{"UPDATE ", "ORDER "}},
}

// raceText is what a race names, for matching: the ops and their
// messages and parameters (not the call sites: partition1.c is no
// partition).
func raceText(r Race) string {
	parts := []string{r.Decision.Op.Kind.String()}
	evs := []Event{r.First, r.Second}
	if r.Before != nil {
		evs = append(evs, *r.Before)
	}
	for _, ev := range evs {
		parts = append(parts, ev.Op, ev.Data, ev.Comment)
	}
	parts = append(parts, r.Behind...)
	if st := r.Storage; st != nil {
		for _, ev := range append([]*Event{st.Down, st.Up}, nil) {
			if ev != nil {
				parts = append(parts, ev.Op, ev.Comment)
			}
		}
		for _, ev := range st.Trusts {
			parts = append(parts, ev.Data)
		}
	}
	if p := r.Reorders; p != nil {
		parts = append(parts, p.First.Data, p.Second.Data)
	}
	return strings.Join(parts, " ")
}

// Matches says whether an explanation names one of a bug's triggering
// pairs, and which race did.
func matches(bug string, ex *Explanation) (bool, string) {
	for _, r := range ex.Races {
		text := raceText(r)
		for _, words := range triggering[bug] {
			all := true
			for _, w := range words {
				all = all && strings.Contains(text, w)
			}
			if all {
				return true, r.Summary
			}
		}
	}
	return false, ""
}

// header and row are the table of the note: decisions and ops of the
// trace against the minimized run's, and explain's real time against one
// replay's.
// The 1-minimality check is its runs and the decisions it dropped; the
// races confirmed are those whose pair a flip showed deciding.
const header = "| bug | match | decisions/ops | minimal decisions/ops | 1-minimality check (runs, dropped) | races confirmed | runs | explain | one trial | ratio | race |\n|---|---|---|---|---|---|---|---|---|---|---|"

func row(bug string, ok bool, ex *Explanation, took time.Duration, which string) string {
	ratio := 0.0
	if ex.TrialTime > 0 {
		ratio = float64(took) / float64(ex.TrialTime)
	}
	confirmed := 0
	for _, r := range ex.Races {
		if r.Confirmed {
			confirmed++
		}
	}
	return fmt.Sprintf("| %s | %v | %d/%d | %d/%d | %d, %d | %d/%d | %d | %v | %v | %.0f× | %s |", bug, ok, ex.Decisions, ex.Ops, len(ex.Races), ex.MinimizedOps,
		ex.Checked, ex.Dropped, confirmed, len(ex.Races), ex.Runs, took.Round(100*time.Millisecond), ex.TrialTime.Round(time.Millisecond), ratio, which)
}

// TestExplainBugSuite explains the first failing trace (POS, seed 1) of
// every bug in testdata/bugs and compares the named races with the table
// above: at least 90 % of the bugs must match (28 of 31; gproc-1 and
// snap-1, whose seed-1 trace holds a burst of checkpoints, are the known
// misses, docs/results.md). It runs hundreds of trials, so it runs
// only with LOCKSTEP_EXPLAIN_BUGS=1 (or a comma-separated list of bugs,
// which explains only those and checks that each matches).
func TestExplainBugSuite(t *testing.T) {
	env := os.Getenv("LOCKSTEP_EXPLAIN_BUGS")
	if env == "" {
		t.Skip("set LOCKSTEP_EXPLAIN_BUGS=1 to explain the whole bug suite (minutes of trials)")
	}
	testutil.RequireDemo(t)
	bugs := slices.Sorted(maps.Keys(triggering))
	if env != "1" {
		bugs = strings.Split(env, ",")
	}
	var table []string
	hits := 0
	for _, bug := range bugs {
		specPath := testutil.RepoPath("testdata", "bugs", bug, "spec.yaml")
		if _, err := os.Stat(specPath); err != nil {
			t.Errorf("%s: %v", bug, err)
			continue
		}
		trace := firstFailure(t, specPath)
		t0 := time.Now()
		ex, err := Explain(context.Background(), trace, Options{Out: filepath.Join(t.TempDir(), bug), Budget: 4 * time.Minute, Continuations: -1})
		if err != nil {
			table = append(table, fmt.Sprintf("| %s | error: %v |", bug, err))
			continue
		}
		ok, which := matches(bug, ex)
		if ok {
			hits++
		}
		if !ok && len(ex.Races) > 0 {
			which = "(no match) " + ex.Races[0].Summary
		}
		table = append(table, row(bug, ok, ex, time.Since(t0), which))
	}
	t.Logf("\n%s\n%s", header, strings.Join(table, "\n"))
	t.Logf("%d of %d bugs' races match their README", hits, len(bugs))
	if want := (9*len(bugs) + 9) / 10; hits < want {
		t.Errorf("%d of %d bugs' races match their README, want %d", hits, len(bugs), want)
	}
}

// TestBugTableFromJSON prints the match table for explanations already
// made (`lockstep explain --json DIR/BUG/explain.json` for each bug), with
// LOCKSTEP_EXPLAIN_JSON=DIR: the same table as TestExplainBugSuite without
// running anything.
func TestBugTableFromJSON(t *testing.T) {
	dir := os.Getenv("LOCKSTEP_EXPLAIN_JSON")
	if dir == "" {
		t.Skip("set LOCKSTEP_EXPLAIN_JSON=DIR to read DIR/BUG/explain.json")
	}
	var table []string
	hits := 0
	for _, bug := range slices.Sorted(maps.Keys(triggering)) {
		b, err := os.ReadFile(filepath.Join(dir, bug, "explain.json"))
		if err != nil {
			table = append(table, fmt.Sprintf("| %s | no explanation: %v |", bug, err))
			continue
		}
		var ex Explanation
		if err := json.Unmarshal(b, &ex); err != nil {
			t.Fatalf("%s: %v", bug, err)
		}
		ok, which := matches(bug, &ex)
		if ok {
			hits++
		}
		if !ok && len(ex.Races) > 0 {
			which = "(no match) " + ex.Races[0].Summary
		}
		table = append(table, row(bug, ok, &ex, ex.Elapsed, which))
	}
	t.Logf("%d of %d match\n%s\n%s", hits, len(triggering), header, strings.Join(table, "\n"))
}
