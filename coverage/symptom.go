package coverage

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Symptom is a production log excerpt turned into templates (run
// --symptom): the lines several nodes wrote, in the order written, with
// whatever prefixes and timestamps they carried, and optionally the
// failure that followed. A trial reproduces it when it fails the way the
// failure line says, or, without one, when one of its nodes prints the
// last line.
type Symptom struct {
	// Lines are the excerpt's lines as written, Templates their templates
	// (TemplateOf), in order.
	Lines     []string
	Templates []string
	// Failure is the template of the failure line ("failure: ..." in the
	// file), "" when none was given.
	Failure string
}

// SymptomOf is the symptom of these templates and failure template (a
// trace header's), nil for none.
func SymptomOf(templates []string, failure string) *Symptom {
	if len(templates) == 0 {
		return nil
	}
	return &Symptom{Lines: templates, Templates: templates, Failure: failure}
}

// FailureOrEmpty is the template of the symptom's failure line, "" for a
// nil symptom or one without.
func (s *Symptom) FailureOrEmpty() string {
	if s == nil {
		return ""
	}
	return s.Failure
}

// TemplatesOrNil are the symptom's templates, nil for a nil symptom.
func (s *Symptom) TemplatesOrNil() []string {
	if s == nil {
		return nil
	}
	return s.Templates
}

// minSymptomTemplate is the shortest template a line is matched on: a
// shorter one ("·", "<ts> ·") says nothing of what was logged.
const minSymptomTemplate = 6

// ReadSymptom reads a symptom file: one log line per line, blank lines
// and lines starting with '#' left out, and at most one line starting
// with "failure:", the failure that followed the lines.
func ReadSymptom(r io.Reader, name string) (*Symptom, error) {
	s := &Symptom{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		switch trimmed := strings.TrimSpace(line); {
		case trimmed == "" || strings.HasPrefix(trimmed, "#"):
			continue
		case strings.HasPrefix(trimmed, "failure:"):
			if s.Failure != "" {
				return nil, fmt.Errorf("%s:%d: a second failure line (one failure ends a symptom)", name, n)
			}
			s.Failure = TemplateOf(strings.TrimSpace(strings.TrimPrefix(trimmed, "failure:")))
			continue
		}
		t := TemplateOf(line)
		if !saysSomething(t) {
			return nil, fmt.Errorf("%s:%d: %q says too little once its values are masked (%q)", name, n, line, t)
		}
		s.Lines = append(s.Lines, line)
		s.Templates = append(s.Templates, t)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(s.Lines) == 0 {
		return nil, fmt.Errorf("%s: no log line (a symptom is the lines the nodes wrote before the failure)", name)
	}
	return s, nil
}

// saysSomething says whether a template holds a word of three letters or
// more besides its timestamps: "<ts> ·" says nothing of what was logged.
func saysSomething(t string) bool {
	run := 0
	for _, c := range strings.ReplaceAll(t, "<ts>", " ") {
		if c < 0x80 && isLetter(byte(c)) {
			if run++; run >= 3 {
				return true
			}
		} else {
			run = 0
		}
	}
	return false
}

// Same says whether two templates are of one statement: equal, or one
// holds the other whole, as a production line holds a trial's line under
// a prefix of its log collector's ("n1 | ", a pod name, a timestamp).
func Same(symptom, line string) bool {
	if len(line) < minSymptomTemplate || len(symptom) < minSymptomTemplate {
		return symptom == line
	}
	return strings.Contains(symptom, line) || strings.Contains(line, symptom)
}

// Last says whether a trial's line template is the symptom's last line
// and reproduces it: the trial got there. With a failure line, no line
// does: the failure is what the excerpt led to (a hang's last lines are
// often those of every trial), and its lines only say the way there.
func (s *Symptom) Last(template string) bool {
	return s.Failure == "" && Same(s.Templates[len(s.Templates)-1], template)
}

// Match is how much of the symptom a trial's lines reproduced: the
// longest subsequence of the symptom's lines that the trial printed in
// the same order (lines are given in the order the trial printed them,
// across its nodes), and the index in lines of the line that completed the
// first such longest match (-1 with none).
func (s *Symptom) Match(lines []string) (n, last int) {
	return inOrder(len(s.Templates), len(lines), func(i, j int) bool { return Same(s.Templates[i], lines[j]) })
}

// inOrder is the longest subsequence of m wanted items that n items
// hold in the same order, same(i, j) saying whether wanted item i is item
// j, and the index of the item that completed the first such longest
// match (-1 with none): the longest common subsequence, one row at a time.
func inOrder(m, n int, same func(i, j int) bool) (best, last int) {
	// row[k] is the longest match of the first k wanted items with the
	// items read so far, at[k] where the last item of one such match was.
	row := make([]int, m+1)
	at := make([]int, m+1)
	for k := range at {
		at[k] = -1
	}
	for j := range n {
		diag := 0 // row[k-1] before item j
		for k := 1; k <= m; k++ {
			up := row[k]
			switch {
			case same(k-1, j) && diag+1 > up:
				// The earliest item that makes the match this long: a
				// branch from there keeps the match and varies the most.
				row[k], at[k] = diag+1, j
			case row[k-1] > up:
				row[k], at[k] = row[k-1], at[k-1]
			}
			diag = up
		}
	}
	return row[m], at[m]
}

// maxHits bounds the hits a trial keeps: a run whose lines match the
// symptom's more often than this says no more of the way there.
const maxHits = 1 << 12

// Hits are the trial's lines (in the order printed) that are lines of the
// symptom, as pairs of the symptom line's index and the trial line's. A
// run of lines that match the same symptom lines (a heartbeat printed a
// thousand times) keeps only as many as it matches symptom lines, all an
// in-order match can use; and the symptom lines one trial line matches
// come last first, so that no match counts one trial line twice.
func (s *Symptom) Hits(lines []string) [][2]int {
	var out [][2]int
	var prev []int
	run := 0
	for j, l := range lines {
		var cur []int
		for i := len(s.Templates) - 1; i >= 0; i-- {
			if Same(s.Templates[i], l) {
				cur = append(cur, i)
			}
		}
		if len(cur) == 0 {
			continue
		}
		if slices.Equal(cur, prev) {
			if run >= len(cur) {
				continue
			}
			run++
		} else {
			prev, run = cur, 1
		}
		for _, i := range cur {
			if len(out) == maxHits {
				return out
			}
			out = append(out, [2]int{i, j})
		}
	}
	return out
}
