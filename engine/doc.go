// Package engine owns the spec (YAML → validated Spec with file:line
// errors), the trial loop, campaigns of trials, outcome detection, and the
// per-trial directories, logs and traces.
//
// It drives the tracer through its plain API and must not know ptrace
// details.
package engine
