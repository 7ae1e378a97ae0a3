// Package engine owns the trial loop, campaigns of trials, outcome
// detection, and the per-trial directories, logs and traces. It runs a
// spec that package spec has decoded and validated.
//
// It drives the tracer through its plain API and must not know ptrace
// details.
package engine
