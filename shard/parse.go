package shard

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/lockstep-dev/lockstep/engine"
)

// IndexEnv is the variable a shard's index comes from when --shard gives
// only the count: a Kubernetes Indexed Job sets it in every pod.
const IndexEnv = "JOB_COMPLETION_INDEX"

// MaxShards bounds the shard count: more shards than that are a typo.
const MaxShards = 100000

// Parse reads a shard as --shard gives it: "I/N" (shard I of N, from 0),
// or "N" alone, the index then coming from the environment variable env
// (IndexEnv when empty), read with getenv.
func Parse(s, env string, getenv func(string) string) (engine.Shard, error) {
	if env == "" {
		env = IndexEnv
	}
	is, ns, explicit := strings.Cut(s, "/")
	if !explicit {
		is, ns = "", is
	}
	n, err := strconv.Atoi(ns)
	if err != nil || n < 1 || n > MaxShards {
		return engine.Shard{}, fmt.Errorf("--shard %q: want I/N or N, N a shard count between 1 and %d", s, MaxShards)
	}
	from := "--shard " + s
	if !explicit {
		is = getenv(env)
		if is == "" {
			return engine.Shard{}, fmt.Errorf("--shard %s: %s is not set (with the count alone, the shard's index comes from it)", s, env)
		}
		from = env + "=" + is
	}
	i, err := strconv.Atoi(is)
	if err != nil || i < 0 || i >= n {
		return engine.Shard{}, fmt.Errorf("%s: the shard index must be an integer between 0 and %d", from, n-1)
	}
	return engine.Shard{Index: i, Count: n}, nil
}

// DirName is the directory a shard writes below the campaign's output
// directory; merge finds shards by it.
func DirName(s engine.Shard) string { return fmt.Sprintf("shard-%d-of-%d", s.Index, s.Count) }
