// Package faults owns a trial's fault plan and its fault operations: which
// faults (crash, restart, partition, one-way and link cuts, bipartitions,
// holds, slow and flapping links, heal, pause, clock, drift, reset, drop;
// and on the disk power, corrupt, ioerror, stall) may happen to which nodes,
// within what budget and virtual-time window, and what each chosen fault
// holds back. Faults are ops like any other: they are offered beside the
// enabled ops, chosen by the strategy, recorded in the trace and replayed.
// When each injection may first be offered is drawn from the seed over the
// window, a virtual time or a step of it (Placer), so that faults spread
// over it whatever the strategy, bursts of ops at one virtual instant
// included.
//
// A fault kind is its sched.Kind constant (the name traces and specs use),
// its kindDef (whether it can be drawn now, what it draws, what choosing
// it does, what it holds back, how a replay treats it) and the init
// function that defines it. The older kinds are grouped by the mechanism
// they share: kinds.go (crash, pause, partition, clock, drift, reset,
// drop and the recoveries), network.go (the cuts and hold), storage.go
// (power, corrupt, ioerror, stall). A new kind can have a file of its own
// (slow.go and flap.go are). Adding one that reuses a mechanism is that
// file with its own test, its constant and row in spec/faults.go's
// keyword table, and its section in docs/spec.md. Only a kind that needs
// a mechanism the engine does not have yet adds an Act here, its applier
// line in engine/faultkinds.go and the tracer change it needs; flap.go
// needed none. Kinds that act on a link between two units (slow, which
// delays its deliveries; flap, which holds its deliveries and blocking
// connects while it is down) draw, name and cross it with links.go.
//
// It decides nothing about ptrace, namespaces or processes: the engine
// applies a chosen fault's Effect through the tracer and netns, and runs the
// probe that aims a fault (Injector.Aim).
package faults
