package shard

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/conflict"
	"github.com/lockstep-dev/lockstep/engine"
	"github.com/lockstep-dev/lockstep/result"
	"github.com/lockstep-dev/lockstep/spec"
)

// Campaign is a campaign joined from its shards.
type Campaign struct {
	// Summary is the campaign's, as one process would have reported it;
	// its Duration is real time from the first shard's start to the last
	// one's end.
	Summary *engine.Summary
	// History is the union of the shards' conflict histories ("+"
	// strategies; nil otherwise).
	History *conflict.History
	Shards  []*Result // by shard index
}

// Find lists the shard result files under dirs: each dir is a shard's
// directory (holding ResultFile) or a campaign's output directory (holding
// shard-I-of-N directories).
func Find(dirs []string) ([]string, error) {
	var files []string
	for _, d := range dirs {
		if st, err := os.Stat(d); err != nil {
			return nil, err
		} else if !st.IsDir() {
			return nil, fmt.Errorf("%s: not a directory", d)
		}
		if f := filepath.Join(d, ResultFile); exists(f) {
			files = append(files, f)
			continue
		}
		found, err := filepath.Glob(filepath.Join(d, "shard-*-of-*", ResultFile))
		if err != nil {
			return nil, err
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("%s: no shard result (%s) in it or in its shard-I-of-N directories", d, ResultFile)
		}
		files = append(files, found...)
	}
	return files, nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Merge reads the shard results under dirs (see Find) and joins them.
// They must be every shard of one campaign: the same spec, strategy,
// seed, scheme, trial count and shard count, each shard once, each trial
// in its shard with its seed; a shard cut short by a signal is allowed
// and makes the campaign Interrupted.
func Merge(dirs []string) (*Campaign, error) {
	files, err := Find(dirs)
	if err != nil {
		return nil, err
	}
	var rs []*Result
	for _, f := range files {
		r, err := Read(f)
		if err != nil {
			return nil, err
		}
		rs = append(rs, r)
	}
	if err := check(rs, files); err != nil {
		return nil, err
	}
	slices.SortFunc(rs, func(a, b *Result) int { return a.Shard - b.Shard })
	first := rs[0]
	sp := &spec.Spec{Name: first.SpecName, Path: first.Spec, Digest: first.SpecDigest}
	sum := &engine.Summary{Spec: sp, Strategy: first.Strategy, Seed: first.Seed, Planned: first.Trials,
		ByKind: map[engine.OutcomeKind]int{}}
	var all []*engine.TrialResult
	var start, end time.Time
	for _, r := range rs {
		for _, t := range r.Results {
			all = append(all, &engine.TrialResult{
				Index: t.Index, Seed: t.Seed, Outcome: t.Outcome, Dir: r.path(t.Dir), TracePath: r.path(t.Trace),
				Duration: t.Duration, Stats: t.Stats, Launch: t.Launch, Teardown: t.Teardown, Reset: t.Reset,
				NodesCPU: t.NodesCPU, Conntrack: t.Conntrack, Conflict: t.Conflict, Reached: t.Reached, Near: t.Near, Verify: t.Verify,
			})
		}
		if start.IsZero() || r.Started.Before(start) {
			start = r.Started
		}
		if e := r.Started.Add(r.Duration); e.After(end) {
			end = e
		}
		sum.Interrupted = sum.Interrupted || r.Interrupted
	}
	slices.SortFunc(all, func(a, b *engine.TrialResult) int { return a.Index - b.Index })
	var seen [][]result.SeenFeature
	for _, r := range rs {
		if r.Coverage != nil {
			seen = append(seen, r.Coverage)
		}
	}
	if len(seen) > 0 {
		indices := make([]int, len(all))
		for i, t := range all {
			indices[i] = t.Index
		}
		sum.Coverage = result.MergeCoverage(seen, indices)
	}
	for _, t := range all {
		sum.Add(t)
		if t.Conflict != nil {
			sum.Stats = append(sum.Stats, *t.Conflict)
		}
	}
	sum.Duration = end.Sub(start)
	c := &Campaign{Summary: sum, Shards: rs}
	if first.History != "" {
		if c.History, err = mergeHistories(rs); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// check says why results rs (read from files) are not the shards of one
// campaign, in one line.
func check(rs []*Result, files []string) error {
	if len(rs) == 0 {
		return errors.New("no shard results")
	}
	a := rs[0]
	for k, b := range rs[1:] {
		for _, f := range []struct {
			what string
			x, y any
		}{
			{"spec", a.SpecDigest, b.SpecDigest},
			{"spec name", a.SpecName, b.SpecName},
			{"strategy", a.Strategy, b.Strategy},
			{"seed", a.Seed, b.Seed},
			{"conflict scheme", a.Scheme, b.Scheme},
			{"trials", a.Trials, b.Trials},
			{"shard count", a.Shards, b.Shards},
			{"history (trials it started from)", a.HistoryBase, b.HistoryBase},
			{"history file", a.History != "", b.History != ""},
		} {
			if f.x != f.y {
				x, y := fmt.Sprint(f.x), fmt.Sprint(f.y)
				if f.what == "spec" {
					x, y = "digest "+x[:min(12, len(x))], "digest "+y[:min(12, len(y))]
				}
				return fmt.Errorf("shard results of different campaigns: %s has %s %s, %s has %s", files[0], f.what, x, files[k+1], y)
			}
		}
	}
	seen := map[int]string{}
	for k, r := range rs {
		if o, ok := seen[r.Shard]; ok {
			return fmt.Errorf("shard %d/%d twice: %s and %s", r.Shard, r.Shards, o, files[k])
		}
		seen[r.Shard] = files[k]
		sh := engine.Shard{Index: r.Shard, Count: r.Shards}
		if want := sh.Size(r.Trials); len(r.Results) != want && !r.Interrupted || len(r.Results) > want {
			return fmt.Errorf("%s: %d trials, but shard %v of %d trials has %d", files[k], len(r.Results), sh, r.Trials, want)
		}
		prev := -1
		for _, t := range r.Results {
			switch {
			case t.Index%r.Shards != r.Shard || t.Index >= r.Trials:
				return fmt.Errorf("%s: trial %d is not shard %v's", files[k], t.Index, sh)
			case t.Index <= prev:
				return fmt.Errorf("%s: trial %d out of order or twice", files[k], t.Index)
			case t.Seed != engine.TrialSeed(r.Seed, t.Index):
				return fmt.Errorf("%s: trial %d has seed %d, but campaign seed %d gives it %d", files[k], t.Index, t.Seed, r.Seed, engine.TrialSeed(r.Seed, t.Index))
			}
			prev = t.Index
		}
	}
	if len(seen) < a.Shards {
		var missing []string
		for i := range a.Shards {
			if _, ok := seen[i]; !ok {
				missing = append(missing, strconv.Itoa(i))
			}
			if len(missing) == 10 {
				missing = append(missing, "…")
				break
			}
		}
		return fmt.Errorf("%d of %d shards: missing shard %s", len(seen), a.Shards, strings.Join(missing, ", "))
	}
	return nil
}

// mergeHistories joins the shards' conflict histories.
func mergeHistories(rs []*Result) (*conflict.History, error) {
	scheme, err := conflict.ParseScheme(rs[0].Scheme)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rs[0].path(ResultFile), err)
	}
	merged := conflict.NewHistory(scheme)
	for _, r := range rs {
		p := r.path(r.History)
		if !exists(p) {
			return nil, fmt.Errorf("%s: its conflict history %s is missing", r.path(ResultFile), p)
		}
		h, err := conflict.Load(p, scheme)
		if err != nil {
			return nil, err
		}
		if err := merged.Merge(h, r.HistoryBase); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
	}
	return merged, nil
}
