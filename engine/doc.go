// Package engine owns the trial loop, campaigns of trials, outcome
// detection, and the per-trial directories, logs and traces. It runs a
// spec that package spec has decoded and validated.
//
// A trial's directory is its nodes' to write, and lockstep runs as root:
// the engine writes its own files there only through internal/safefs
// (trialFiles), never through a path a node could have changed, and it
// bounds what a node may put there (each node's {{tmp}} is a tmpfs of its
// limits.node.tmp, nodeTmps).
//
// It drives the tracer through its plain API and must not know ptrace
// details.
package engine
