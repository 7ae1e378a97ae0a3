package shard

import (
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/engine"
)

func TestParse(t *testing.T) {
	env := map[string]string{IndexEnv: "3", "SLURM_ARRAY_TASK_ID": "7", "BAD": "x"}
	getenv := func(k string) string { return env[k] }
	for _, tc := range []struct {
		spec, env string
		want      engine.Shard
		err       string // what the one-line error says
	}{
		{spec: "0/1", want: engine.Shard{Index: 0, Count: 1}},
		{spec: "2/8", want: engine.Shard{Index: 2, Count: 8}},
		{spec: "8", want: engine.Shard{Index: 3, Count: 8}},
		{spec: "8", env: "SLURM_ARRAY_TASK_ID", want: engine.Shard{Index: 7, Count: 8}},
		{spec: "8/8", err: "--shard 8/8: the shard index must be an integer between 0 and 7"},
		{spec: "-1/8", err: "between 0 and 7"},
		{spec: "a/8", err: "between 0 and 7"},
		{spec: "1/0", err: `--shard "1/0": want I/N or N`},
		{spec: "", err: `--shard "": want I/N or N`},
		{spec: "1/2/3", err: "want I/N or N"},
		{spec: "3", err: "JOB_COMPLETION_INDEX=3: the shard index must be an integer between 0 and 2"},
		{spec: "8", env: "NOPE", err: "--shard 8: NOPE is not set"},
		{spec: "8", env: "BAD", err: "BAD=x: the shard index must be"},
	} {
		got, err := Parse(tc.spec, tc.env, getenv)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("Parse(%q, %q) = %v, %v; want %v", tc.spec, tc.env, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "\n")):
			t.Errorf("Parse(%q, %q): error %v, want one line with %q", tc.spec, tc.env, err, tc.err)
		}
	}
}

// TestShardTrials: the shards of a campaign run each of its trials once.
func TestShardTrials(t *testing.T) {
	for _, total := range []int{0, 1, 7, 8, 9, 1000} {
		for _, n := range []int{1, 2, 3, 8, 11} {
			seen := make([]int, total)
			for i := range n {
				sh := engine.Shard{Index: i, Count: n}
				for p := range sh.Size(total) {
					seen[sh.Trial(p)]++
				}
			}
			for i, c := range seen {
				if c != 1 {
					t.Fatalf("%d trials in %d shards: trial %d run %d times", total, n, i, c)
				}
			}
		}
	}
}
