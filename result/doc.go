// Package result holds what a campaign produced: each trial's result and
// the campaign's summary. The engine fills them; reports, shard merging and
// the CLI read them without importing the engine. It is plain data.
package result
