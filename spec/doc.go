// Package spec owns the test spec: it parses a YAML spec file, validates
// it, and gives back a typed Spec with its defaults filled in, or a
// one-line Error naming the file, the line and the field at fault.
// docs/spec.md documents the format.
//
// Validation may look at the host (its networks, the programs a spec
// names, execve's limits) so that a spec that loads can start, but the
// package must not start processes, touch namespaces or run trials: that
// is package engine's job. Expanding a node's command templates for a
// trial is pure and lives here.
package spec
