package shard

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lockstep-dev/lockstep/conflict"
	"github.com/lockstep-dev/lockstep/engine"
	"github.com/lockstep-dev/lockstep/result"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/tracer"
)

// ResultFile is the name of a shard's result in its directory, and
// HistoryFile that of its conflict history ("+" strategies).
const (
	ResultFile  = "shard.json"
	HistoryFile = "history.json"
)

// version is the result file's format.
const version = 1

// Result is what one shard ran: the campaign it belongs to, which part of
// it, and every trial it finished. Paths inside are relative to the
// shard's directory, so that a merge reads them wherever the shared volume
// is mounted.
type Result struct {
	Version    int    `json:"version"`
	Spec       string `json:"spec"` // the spec's path where the shard ran
	SpecName   string `json:"spec_name"`
	SpecDigest string `json:"spec_digest"`
	Strategy   string `json:"strategy"`
	Seed       int64  `json:"seed"`
	Scheme     string `json:"scheme"`
	// Trials is the campaign's number of trials, all shards together.
	Trials int `json:"trials"`
	Shard  int `json:"shard"`
	Shards int `json:"shards"`
	// Started and Duration are the shard's real time.
	Started     time.Time     `json:"started"`
	Duration    time.Duration `json:"duration_ns"`
	Interrupted bool          `json:"interrupted,omitempty"`
	// History names the shard's conflict history ("+" strategies), which
	// started from a table of HistoryBase trials (the --history file).
	History     string  `json:"history,omitempty"`
	HistoryBase int     `json:"history_base,omitempty"`
	Results     []Trial `json:"results"`
	// Coverage are the features the shard's trials showed, each with the
	// first trial that did and how many did (result.MergeCoverage).
	Coverage []result.SeenFeature `json:"coverage,omitempty"`

	dir string // where the file was read from
}

// Trial is one trial of a shard: enough to rebuild the campaign's
// summary, its reports and --stats.
type Trial struct {
	Index    int           `json:"trial"`
	Seed     int64         `json:"seed"`
	Outcome  sched.Outcome `json:"outcome"`
	Dir      string        `json:"dir"`
	Trace    string        `json:"trace,omitempty"`
	Duration time.Duration `json:"duration_ns"`
	Stats    tracer.Stats  `json:"stats"`
	Launch   time.Duration `json:"launch_ns"`
	Teardown time.Duration `json:"teardown_ns"`
	Reset    time.Duration `json:"reset_ns"`
	NodesCPU time.Duration `json:"nodes_cpu_ns"`
	// Conntrack and Conflict as in engine.TrialResult.
	Conntrack engine.ConntrackStats `json:"conntrack"`
	Conflict  *conflict.Stats       `json:"conflict,omitempty"`
	// Reached and Verify as in engine.TrialResult: the sometimes
	// properties it reached, what replaying its trace showed.
	Reached []string             `json:"reached,omitempty"`
	Near    []result.Near        `json:"near,omitempty"`
	Verify  *result.Verification `json:"verify,omitempty"`
}

// Write saves a shard's summary into dir (the shard's output directory)
// as ResultFile, with its conflict history beside it. started is when the
// shard began.
func Write(dir string, sum *engine.Summary, started time.Time) error {
	if sum.Shard.Count == 0 {
		return fmt.Errorf("writing a shard result: the campaign ran unsharded")
	}
	sp := sum.Spec
	r := &Result{
		Version: version, Spec: sp.Path, SpecName: sp.Name, SpecDigest: sp.Digest,
		Strategy: sum.Strategy, Seed: sum.Seed, Scheme: sp.Scheduler.Conflict.Scheme, Trials: sum.Planned,
		Shard: sum.Shard.Index, Shards: sum.Shard.Count, Started: started.UTC(), Duration: sum.Duration,
		Interrupted: sum.Interrupted, Results: []Trial{},
	}
	if s, err := conflict.ParseScheme(r.Scheme); err == nil {
		r.Scheme = s.String() // the default spelled out
	}
	rel := func(p string) (string, error) {
		if p == "" {
			return "", nil
		}
		return filepath.Rel(dir, p)
	}
	for _, t := range sum.Results {
		d, err := rel(t.Dir)
		if err != nil {
			return fmt.Errorf("writing a shard result: %w", err)
		}
		tr, err := rel(t.TracePath)
		if err != nil {
			return fmt.Errorf("writing a shard result: %w", err)
		}
		r.Results = append(r.Results, Trial{
			Index: t.Index, Seed: t.Seed, Outcome: t.Outcome, Dir: d, Trace: tr, Duration: t.Duration,
			Stats: t.Stats, Launch: t.Launch, Teardown: t.Teardown, Reset: t.Reset, NodesCPU: t.NodesCPU,
			Conntrack: t.Conntrack, Conflict: t.Conflict, Reached: t.Reached, Near: t.Near, Verify: t.Verify,
		})
	}
	if sum.Coverage != nil {
		r.Coverage = sum.Coverage.Seen
	}
	if h := sum.History; h != nil {
		r.History = HistoryFile
		r.HistoryBase = h.Trials() - sum.Trials
		if err := h.Save(filepath.Join(dir, HistoryFile)); err != nil {
			return fmt.Errorf("writing a shard result: %w", err)
		}
	}
	b, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return fmt.Errorf("writing a shard result: %w", err)
	}
	// Written whole or not at all: a merge must never read half a shard.
	tmp, err := os.CreateTemp(dir, ".shard-*")
	if err != nil {
		return fmt.Errorf("writing a shard result: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", tmp.Name(), err)
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, ResultFile))
}

// Read reads a shard's result file.
func Read(path string) (*Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: not a lockstep shard result: %w", path, err)
	}
	if r.Version != version {
		return nil, fmt.Errorf("%s: version %d, want %d", path, r.Version, version)
	}
	if r.Shards < 1 || r.Shard < 0 || r.Shard >= r.Shards {
		return nil, fmt.Errorf("%s: shard %d/%d: the index must be between 0 and the count less one", path, r.Shard, r.Shards)
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	r.dir = dir
	return &r, nil
}

// path resolves a path of the result against where it was read.
func (r *Result) path(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(r.dir, p)
}
