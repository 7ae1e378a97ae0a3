// Package sched owns the vocabulary of scheduling (Op, Kind, Signature), the
// strategies that choose which enabled operation runs next (random walk, PCT,
// POS, POS*, replay and their conflict-analysis "+" variants), and the trace
// record with its JSON Lines encoding.
//
// It must not import tracer, netns or bpf: a strategy sees operations, never
// ptrace. Conflict analysis plugs in through the small Predictor interface so
// that sched never imports package conflict.
package sched
