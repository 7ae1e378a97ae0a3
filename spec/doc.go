// Package spec owns the test spec: it parses a YAML spec file, validates
// it, and gives back a typed Spec with its defaults filled in, or a
// one-line Error naming the file, the line and the field at fault.
// docs/spec.md documents the format.
//
// Validation may look at the host (its networks, the programs a spec
// names, execve's limits) so that a spec that loads can start, but the
// package must not start processes, touch namespaces or run trials: that
// is package engine's job. Nor does it read images: a node's image: is a
// reference until package image's Resolve unpacks it (Spec.ResolveImages),
// which the engine and the CLI do before they run a spec's nodes.
// Expanding a node's command templates for a trial is pure and lives here.
//
// The decoder is driven by tables: each section (spec.go, nodes.go,
// network.go, scheduler.go, limits.go, timing.go, trace.go, faults.go,
// hold.go, storage.go) is a table of fields, each a key and the setter that
// decodes its value, so that a new key is a row and no function grows
// with the format; checks across fields follow the table's decoding.
//
// spec is data: it imports none of the packages that act on a spec
// (tracer, netns, sched, faults, conflict, history). The words it shares
// with them (strategies, schemes, fault kinds, models, capabilities) it
// checks itself (vocab.go), and the engine maps them onto those packages'
// options.
package spec
