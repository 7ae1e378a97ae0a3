// Package coverage owns the features of a trial and a campaign's coverage
// of them: what a search that learns from what it sees (strategy explore,
// docs/architecture.md "Exploring") counts, read from what lockstep records anyway,
// with no instrumentation of the system under test.
//
// A trial's features are of three classes:
//
//   - message kinds: each delivered message (or a send no delivery
//     carried) classified by the protocol it belongs to (the serving
//     side's port) and the Shape of its first bytes, values masked. Kinds
//     numbers them in the order first seen (k1, k2, …) and labels them
//     (`k7 "\x01{Addr:s Candidate:s …"`, `k3 "PUT"`);
//   - log templates: each line a node printed, with timestamps, numbers,
//     ids, addresses and hex masked (TemplateOf), numbered t1, t2, … by
//     Templates;
//   - orderings: at each node, a kind or template followed shortly by
//     another (the next Window distinct ones), with the faults in force
//     then.
//
// Coverage is the set of features a campaign has seen, with how many
// trials showed each; Add returns what a trial showed first (its novelty)
// and Rarity how rare a feature is. Features are keyed by what they are
// (a kind by its protocol and shape, not its number), so the same traces
// in the same order give the same numbers, and campaigns agree on keys.
//
// Shapes and templates are generic: the formats (text verbs, HTTP, RESP,
// JSON, msgpack, protobuf, HTTP/2, length-prefixed binary) are recognized
// by their bytes, never by the system or port. The package reads traces
// and trial directories; it runs nothing and must not import tracer,
// netns, bpf, engine or faults (which fault kinds are recoveries comes in
// as a sched.FaultReplays).
package coverage
