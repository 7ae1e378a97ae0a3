// Package explain turns a failing trace into its cause, by replays only: it
// finds the trace's departures from a default order (sched.Decisions),
// delta-debugs them to a 1-minimal set that keeps the same failure, names
// the pair of ops each remaining decision ordered and confirms it by a run
// with the pair flipped, and symbolizes their call sites. It drives the
// engine (engine.Rerunner) and leaves rendering to package report; it knows
// nothing of ptrace.
package explain
