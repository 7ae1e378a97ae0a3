// Package shard splits a campaign over processes or machines and joins
// the parts again: it reads a shard's name from the command line or a job
// engine's environment (a Kubernetes Indexed Job's JOB_COMPLETION_INDEX, a
// Slurm array's task id), writes what a shard ran as a result file, and
// merges the result files of every shard into the summary and conflict
// history of the whole campaign. Which trials a shard runs is the
// engine's (engine.Shard); this package never runs a trial.
package shard
