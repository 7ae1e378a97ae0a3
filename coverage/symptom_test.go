package coverage

import (
	"strings"
	"testing"
)

// A production excerpt, with its collector's prefixes and timestamps,
// matches a trial's own lines: in order, across nodes, skipping lines the
// trial printed in between and symptom lines it never printed.
func TestSymptom(t *testing.T) {
	file := `# from the on-call channel
n1 | 2026-11-30T08:00:01.123Z [INFO]  raft-n1: entering candidate state: node="Node at 10.0.0.1:7000" term=12
n2 | 2026-11-30T08:00:01.200Z [INFO]  raft-n2: election won: term=12 tally=2
n2 | 2026-11-30T08:00:02.500Z [WARN]  raft-n2: failed to contact quorum of nodes, stepping down
n3 | 2026-11-30T08:00:03.001Z [ERROR] raft-n3: failed to appendEntries to: peer="{Voter n1 10.0.0.1:7000}" error="EOF"

failure: client exited with code 1: liveness: no leader after 10s
`
	s, err := ReadSymptom(strings.NewReader(file), "prod.log")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Templates) != 4 || s.Failure == "" {
		t.Fatalf("%d lines, failure %q", len(s.Templates), s.Failure)
	}
	trial := []string{
		"2024-01-01T00:00:00.400Z [INFO]  raft-n2: entering follower state: follower=\"Node at 10.77.0.2:7000\" leader-address= leader-id=",
		"2024-01-01T00:00:00.500Z [INFO]  raft-n3: entering candidate state: node=\"Node at 10.77.0.3:7000\" term=2",
		"2024-01-01T00:00:00.600Z [INFO]  raft-n3: election won: term=2 tally=2",
		"2024-01-01T00:00:01.600Z [ERROR] raft-n3: failed to appendEntries to: peer=\"{Voter n1 10.77.0.1:7000}\" error=\"EOF\"",
	}
	for i := range trial {
		trial[i] = TemplateOf(trial[i])
	}
	for _, tc := range []struct {
		name     string
		lines    []string
		n, last  int
		reaching bool
	}{
		{"all but the step-down", trial, 3, 3, true},
		{"the first two", trial[:3], 2, 2, false},
		{"out of order", []string{trial[2], trial[1]}, 1, 0, false},
		{"nothing", nil, 0, -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, last := s.Match(tc.lines)
			if n != tc.n || last != tc.last {
				t.Errorf("matched %d, last at %d; want %d at %d", n, last, tc.n, tc.last)
			}
			// With its failure line, the failure is what reproduces it;
			// without, the last line does.
			ends := len(tc.lines) > 0 && s.Last(tc.lines[len(tc.lines)-1])
			bare := *s
			bare.Failure = ""
			if got := len(tc.lines) > 0 && bare.Last(tc.lines[len(tc.lines)-1]); got != tc.reaching || ends {
				t.Errorf("reached the last line %v, with the failure line %v; want %v, false", got, ends, tc.reaching)
			}
		})
	}
	for _, bad := range []string{"", "# only a comment\n", "12:00:01 42\n", "a line that is fine\nfailure: x\nfailure: y\n"} {
		if _, err := ReadSymptom(strings.NewReader(bad), "bad.log"); err == nil || !strings.HasPrefix(err.Error(), "bad.log") {
			t.Errorf("%q: err %v, want one naming the file", bad, err)
		}
	}
}

// TestSymptomHits: each trial line that is a symptom line, by index; a
// run of repeats keeps as many lines as they match symptom lines (the
// granted line twice, the rejected line once); one trial line that is two
// symptom lines gives the later first.
func TestSymptomHits(t *testing.T) {
	s := &Symptom{Templates: []string{"lease granted to ·", "lease expired for ·", "lease granted to ·", "write rejected"}}
	lines := []string{
		"lease granted to ·",
		"lease granted to ·",
		"heartbeat",
		"lease granted to ·",
		"lease expired for ·",
		"write rejected",
		"write rejected",
	}
	got := s.Hits(lines)
	want := [][2]int{{2, 0}, {0, 0}, {2, 1}, {0, 1}, {1, 4}, {3, 5}}
	if len(got) != len(want) {
		t.Fatalf("hits %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("hits %v, want %v", got, want)
			break
		}
	}
}
