// Package stats holds the tracer's counters and timings of a trial
// (tracer.Stats): plain data, so that trial results and reports read them
// without importing the tracer.
package stats
