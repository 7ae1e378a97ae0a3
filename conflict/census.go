package conflict

import (
	"cmp"
	"slices"
	"sync"
)

// SignatureStats are one signature's figures over a campaign: how many of
// its ops were released, how many took part in a conflict, how many a "+"
// strategy released at once, and how many of those did conflict (false
// negatives: the history said "never conflicts" and was wrong).
type SignatureStats struct {
	Key            string `json:"key"`
	Trials         int    `json:"trials"`
	Ops            int    `json:"ops"`
	Conflicting    int    `json:"conflicting"`
	Immediate      int    `json:"immediate"`
	FalseNegatives int    `json:"false_negatives"`
}

// Census tallies a campaign's ops by signature, so that one can see why
// conflict analysis pays or does not (run --stats): which signatures
// dominate, and whether they mix ops that conflict with ops that do not.
// It is safe for concurrent use.
type Census struct {
	mu     sync.Mutex
	m      map[string]*SignatureStats
	trials int
	// curve is the history's size after each trial added, in the order
	// added: (signatures seen, of them ever conflicting).
	curve [][2]int
	seen  map[string]bool // key -> has ever conflicted
}

// NewCensus returns an empty census.
func NewCensus() *Census { return &Census{m: map[string]*SignatureStats{}, seen: map[string]bool{}} }

// Add tallies one trial's analysis.
func (c *Census) Add(a *Analysis) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.trials++
	inTrial := map[string]bool{}
	for i := range a.Records {
		r := &a.Records[i]
		if r.Op.Kind.IsFault() {
			continue
		}
		k := a.scheme.Key(r.Op.Signature())
		s := c.m[k]
		if s == nil {
			s = &SignatureStats{Key: k}
			c.m[k] = s
		}
		if !inTrial[k] {
			inTrial[k] = true
			s.Trials++
		}
		s.Ops++
		conf := a.Conflicting[i]
		if conf {
			s.Conflicting++
		}
		if r.Immediate {
			s.Immediate++
			if conf {
				s.FalseNegatives++
			}
		}
		c.seen[k] = c.seen[k] || conf
	}
	n, conf := 0, 0
	for _, v := range c.seen {
		n++
		if v {
			conf++
		}
	}
	c.curve = append(c.curve, [2]int{n, conf})
}

// Trials is how many trials the census counted.
func (c *Census) Trials() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.trials
}

// Signatures are the signatures counted, the most ops first.
func (c *Census) Signatures() []SignatureStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]SignatureStats, 0, len(c.m))
	for _, s := range c.m {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b SignatureStats) int {
		if d := cmp.Compare(b.Ops, a.Ops); d != 0 {
			return d
		}
		return cmp.Compare(a.Key, b.Key)
	})
	return out
}

// Mixed counts the ops whose signature both conflicted and did not in the
// campaign: ops a finer signature might have told apart, since the
// history keeps such a signature as "may conflict" for good.
func (c *Census) Mixed() (ops, of int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.m {
		of += s.Ops
		if s.Conflicting > 0 && s.Conflicting < s.Ops {
			ops += s.Ops - s.Conflicting
		}
	}
	return ops, of
}

// Curve is the history's size after each trial counted: signatures seen,
// and how many of them had conflicted by then.
func (c *Census) Curve() [][2]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.curve)
}
