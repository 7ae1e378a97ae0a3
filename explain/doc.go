// Package explain turns a failing trace into its cause, by replays only: it
// finds the trace's departures from a default order (sched.Decisions),
// delta-debugs them to a set that keeps the same failure and checks it
// 1-minimal by a run per decision flipped, names the pair of ops each
// remaining decision ordered (among the ops it found there to reorder,
// causally related or not as conflict.HappensBefore says) and confirms it
// by a run with the pair flipped, and symbolizes their call sites; its
// probability curve continues prefixes of the trace with the faults and
// delays drawn afresh and marks where it jumps. It drives the engine
// (engine.Rerunner) and leaves rendering to package report; it knows
// nothing of ptrace.
package explain
