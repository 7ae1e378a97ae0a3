package engine

import "github.com/lockstep-dev/lockstep/result"

// What a campaign produces is package result's, so that reports read it
// without importing the engine; these names keep the engine's callers
// short.
type (
	TrialResult    = result.TrialResult
	Summary        = result.Summary
	Shard          = result.Shard
	ConntrackStats = result.ConntrackStats
)
