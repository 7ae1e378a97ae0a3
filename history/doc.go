// Package history reads client operation histories (JSON lines, one
// operation a line, format in docs/history.md), merges the histories of
// several clients, and checks them for linearizability against a sequential
// model (a register, a key-value map partitioned by key, a set) with
// porcupine, writing porcupine's HTML visualization of a violation.
//
// It owns histories and models only: it runs nothing and knows nothing of
// traces or the tracer; package engine decides when a history is checked.
package history
