// Package faults owns a trial's fault plan and its fault operations: which
// faults (crash, restart, partition, one-way and link cuts, bipartitions,
// holds, slow and flapping links, heal, pause, clock, reset, drop; and on the disk power, corrupt, ioerror,
// stall) may happen to which nodes, within what budget and virtual-time
// window, and what each chosen fault holds back. Faults are ops like any
// other: they are offered beside the enabled ops, chosen by the strategy,
// recorded in the trace and replayed.
// When each injection may first be offered is drawn from the seed over the
// window, a virtual time or a step of it (Placer), so that faults spread
// over it whatever the strategy, bursts of ops at one virtual instant
// included.
//
// Each fault kind lives in a file of its own: its sched.Kind constant (the
// name traces and specs use), its kindDef (whether it can be drawn now,
// what it draws, what choosing it does, the engine mechanism it is
// carried out by, what it holds back, how a replay treats it) and the
// init function that defines it. Adding a kind is that file and its
// keyword in spec; a tracer change only if it needs a mechanism the
// tracer does not have (flap.go was added that way). Kinds that act on
// the deliveries across a link between two units (slow, flap) draw, name
// and cross it with links.go.
//
// It decides nothing about ptrace, namespaces or processes: the engine
// applies a chosen fault's Effect through the tracer and netns, and runs the
// probe that aims a fault (Injector.Aim).
package faults
