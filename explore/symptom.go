package explore

import "math"

// Hit is a line of a trial that is one of the symptom's (run --symptom):
// Line is the symptom line's index, At how many records the trial had
// when it printed it.
type Hit struct{ Line, At int }

// symptomStats are what the campaign learned of its symptom's lines: how
// many trials printed each at all. A line that most trials print says
// little of the way to the failure (the connects and subscriptions every
// trial logs); one that few print says much.
type symptomStats struct {
	printed []int // per symptom line
	trials  int
}

// count notes one trial's hits.
func (s *symptomStats) count(lines int, hits []Hit) {
	if len(s.printed) < lines {
		s.printed = append(s.printed, make([]int, lines-len(s.printed))...)
	}
	s.trials++
	seen := make([]bool, lines)
	for _, h := range hits {
		if h.Line < lines && !seen[h.Line] {
			seen[h.Line] = true
			s.printed[h.Line]++
		}
	}
}

// weights are each symptom line's weight in a match: ln((N+1)/(n+1)) for a
// line n of the N trials so far printed, over the largest such weight.
// A line every trial printed weighs 0, the rarest 1; all weigh 0 before
// any trial, or when every trial printed every line.
func (s *symptomStats) weights() []float64 {
	w := make([]float64, len(s.printed))
	top := 0.0
	for i, n := range s.printed {
		w[i] = math.Log(float64(s.trials+1) / float64(n+1))
		top = max(top, w[i])
	}
	for i := range w {
		if top > 0 {
			w[i] /= top
		} else {
			w[i] = 0
		}
	}
	return w
}

// weightedMatch is the heaviest subsequence of the symptom's lines the
// hits hold in the symptom's order, each line weighing w[line], and the At
// of the hit that completed the first such match (-1 with none, or when
// it weighs nothing).
func weightedMatch(hits []Hit, w []float64) (score float64, at int) {
	m := len(w)
	// row[k] is the heaviest match of the first k symptom lines with the
	// hits read so far; from[k] the At of the hit that completed it.
	row := make([]float64, m+1)
	from := make([]int, m+1)
	for k := range from {
		from[k] = -1
	}
	for _, h := range hits {
		diag := 0.0 // row[k-1] before this hit
		for k := 1; k <= m; k++ {
			up := row[k]
			switch {
			case h.Line == k-1 && w[k-1] > 0 && diag+w[k-1] > up:
				// The earliest hit that makes the match this heavy: a
				// branch from there keeps it and varies the most.
				row[k], from[k] = diag+w[k-1], h.At
			case row[k-1] > up:
				row[k], from[k] = row[k-1], from[k-1]
			}
			diag = up
		}
	}
	return row[m], from[m]
}

// closerToSymptom counts a trial's hits and says whether it came closer
// to the symptom than any entry of the corpus, with the lines weighed by
// what every trial so far, this one too, printed; and nearer: closer
// than an entry that matched something (the first match is closer than
// nothing, whatever made it).
func (c *Corpus) closerToSymptom(e *Entry) (closer, nearer bool) {
	if c.SymptomLines == 0 {
		return false, false
	}
	c.symptom.count(c.SymptomLines, e.Hits)
	w := c.symptom.weights()
	mine, _ := weightedMatch(e.Hits, w)
	if mine <= 0 {
		return false, false
	}
	for _, x := range c.entries {
		s, _ := weightedMatch(x.Hits, w)
		if s >= mine {
			return false, false
		}
		nearer = nearer || s > 0
	}
	return true, nearer
}

// symptomMatches are, per entry, the weight of its heaviest match of the
// symptom and the At where that match was completed (-1: none), with the
// lines weighed as the trials so far say: nothing without a symptom.
func (c *Corpus) symptomMatches(entries []*Entry) (score []float64, at []int) {
	score, at = make([]float64, len(entries)), make([]int, len(entries))
	if c.SymptomLines == 0 {
		for i := range at {
			at[i] = -1
		}
		return score, at
	}
	w := c.symptom.weights()
	for i, e := range entries {
		score[i], at[i] = weightedMatch(e.Hits, w)
	}
	return score, at
}
