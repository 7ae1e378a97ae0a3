package conflict

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/lockstep-dev/lockstep/sched"
)

// History is the table of signatures seen across trials and whether any op
// with that signature ever conflicted. It is safe for concurrent use.
type History struct {
	scheme Scheme
	mu     sync.Mutex
	m      map[string]bool // key -> has ever conflicted
	trials int
}

// NewHistory returns an empty table for scheme.
func NewHistory(scheme Scheme) *History {
	return &History{scheme: scheme, m: map[string]bool{}}
}

// Scheme is the table's signature scheme.
func (h *History) Scheme() Scheme { return h.scheme }

// Update merges one trial's analysis.
func (h *History) Update(a *Analysis) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.trials++
	for i := range a.Records {
		op := &a.Records[i].Op
		if op.Kind.IsFault() {
			continue
		}
		k := h.scheme.Key(op.Signature())
		h.m[k] = h.m[k] || a.Conflicting[i]
	}
}

// MayConflict is the conservative prediction: a signature never seen, or
// seen in a conflict, may conflict.
func (h *History) MayConflict(sig sched.Signature) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, seen := h.m[h.scheme.Key(sig)]
	return !seen || c
}

// Counts reports whether the table's keys count an op's predecessors
// (sched.Counter).
func (h *History) Counts() bool { return h.scheme.Counts() }

// CountKey is the key an op's predecessors are counted by
// (sched.Counter).
func (h *History) CountKey(sig sched.Signature) string { return h.scheme.CountKey(sig) }

// Len is the number of signatures in the table.
func (h *History) Len() (seen, conflicted int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.m {
		seen++
		if c {
			conflicted++
		}
	}
	return
}

// Trials is how many trials the table has learned from.
func (h *History) Trials() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.trials
}

// Merge folds o, a table that started from one with base trials (as each
// shard of a campaign starts from the campaign's --history), into h: a
// signature either saw is seen, one either saw conflict has conflicted,
// and o's trials beyond base are added. Since a table is an "or" over
// trials, merging the shards' tables in any order gives the table one
// process would have learned from the same trials.
func (h *History) Merge(o *History, base int) error {
	if h == o {
		return errors.New("merging a history table into itself")
	}
	if h.scheme != o.scheme {
		return fmt.Errorf("merging a %s history table into a %s one", o.scheme, h.scheme)
	}
	o.mu.Lock()
	m, trials := maps.Clone(o.m), o.trials
	o.mu.Unlock()
	if trials < base {
		return fmt.Errorf("history table of %d trials started from one of %d", trials, base)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.trials == 0 {
		h.trials = base
	}
	h.trials += trials - base
	for k, c := range m {
		h.m[k] = h.m[k] || c
	}
	return nil
}

// Snapshot is a frozen copy to hand to strategies, so a trial's decisions
// do not depend on which other trials finished while it ran.
func (h *History) Snapshot() sched.Predictor {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := &History{scheme: h.scheme, m: make(map[string]bool, len(h.m)), trials: h.trials}
	for k, v := range h.m {
		c.m[k] = v
	}
	return c
}

type historyFile struct {
	Version    int      `json:"version"`
	Scheme     string   `json:"scheme"`
	Trials     int      `json:"trials"`
	Seen       []string `json:"seen"`       // never conflicted
	Conflicted []string `json:"conflicted"` // conflicted at least once
}

// Save writes the table to path atomically (a temp file renamed over it).
func (h *History) Save(path string) error {
	h.mu.Lock()
	f := historyFile{Version: 1, Scheme: h.scheme.String(), Trials: h.trials, Seen: []string{}, Conflicted: []string{}}
	for k, c := range h.m {
		if c {
			f.Conflicted = append(f.Conflicted, k)
		} else {
			f.Seen = append(f.Seen, k)
		}
	}
	h.mu.Unlock()
	sort.Strings(f.Seen)
	sort.Strings(f.Conflicted)
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".history-*")
	if err != nil {
		return fmt.Errorf("history %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("history %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Load reads a table saved by Save; a missing file is an empty table. The
// file's scheme must be scheme.
func Load(path string, scheme Scheme) (*History, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return NewHistory(scheme), nil
	}
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", path, err)
	}
	var f historyFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("history %s: not a lockstep history file: %w", path, err)
	}
	if f.Version != 1 {
		return nil, fmt.Errorf("history %s: version %d, want 1", path, f.Version)
	}
	if f.Scheme != scheme.String() {
		return nil, fmt.Errorf("history %s: recorded with scheme %s, but this campaign uses %s", path, f.Scheme, scheme)
	}
	h := NewHistory(scheme)
	h.trials = f.Trials
	for _, k := range f.Seen {
		h.m[k] = false
	}
	for _, k := range f.Conflicted {
		h.m[k] = true
	}
	return h, nil
}

// Evaluation is how well a scheme's history would have predicted the
// conflicts of a sequence of trials, learning as it goes (Morpheus
// Table 4).
type Evaluation struct {
	Scheme         string  `json:"scheme"`
	Trials         int     `json:"trials"`
	Ops            int     `json:"ops"`
	Conflicting    int     `json:"conflicting"`
	FalseNegatives int     `json:"false_negatives"`
	FalsePositives int     `json:"false_positives"`
	FNRate         float64 `json:"fn_rate"` // false negatives / conflicting ops
	FPRate         float64 `json:"fp_rate"` // false positives / non-conflicting ops
}

// EvaluateSchemes replays trials (each a trial's records, in campaign
// order) through a fresh history per scheme: before each trial, every op
// is predicted from the trials before it, then the trial is learned. A
// scheme that counts ("+nth") reads the counts the records carry
// (sched.Op.Nth), which only a "+" strategy under such a scheme writes.
func EvaluateSchemes(trials [][]sched.Record, schemes []Scheme) []Evaluation {
	var out []Evaluation
	analyses := make([]*Analysis, len(trials))
	for i, recs := range trials {
		analyses[i] = Analyze(recs, DefaultScheme) // conflicts do not depend on the scheme
	}
	for _, s := range schemes {
		h := NewHistory(s)
		e := Evaluation{Scheme: s.String(), Trials: len(trials)}
		for _, a := range analyses {
			for i := range a.Records {
				op := &a.Records[i].Op
				if op.Kind.IsFault() {
					continue
				}
				e.Ops++
				c := a.Conflicting[i]
				may := h.MayConflict(op.Signature())
				switch {
				case c:
					e.Conflicting++
					if !may {
						e.FalseNegatives++
					}
				case may:
					e.FalsePositives++
				}
			}
			h.Update(a)
		}
		if e.Conflicting > 0 {
			e.FNRate = float64(e.FalseNegatives) / float64(e.Conflicting)
		}
		if n := e.Ops - e.Conflicting; n > 0 {
			e.FPRate = float64(e.FalsePositives) / float64(n)
		}
		out = append(out, e)
	}
	return out
}
