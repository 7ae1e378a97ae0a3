// Package faults owns a trial's fault plan and its fault operations: which
// faults (crash, restart, partition, one-way and link cuts, bipartitions,
// holds, heal, pause, clock; and on the disk power, corrupt, ioerror,
// stall) may happen to which nodes, within what budget and virtual-time
// window, and what each chosen fault holds back. Faults are ops like any
// other: they are offered beside the enabled ops, chosen by the strategy,
// recorded in the trace and replayed.
// When each injection may first be offered is drawn from the seed over the
// window, a virtual time or a step of it (Placer), so that faults spread
// over it whatever the strategy, bursts of ops at one virtual instant
// included.
//
// It decides nothing about ptrace, namespaces or processes: the engine
// applies a chosen fault's Effect through the tracer and netns, and runs the
// probe that aims a fault (Injector.Aim).
package faults
