// Package report renders what lockstep found for people and for CI: the
// campaign summary, the `show` listing of a trace, an HTML space-time
// diagram of a trace, JUnit XML and JSON summaries, and the bench
// hit-ratio tables.
//
// It only formats: it runs no trials and touches no namespaces, so
// everything here is testable without root.
package report
