// Package vclock owns a cluster's virtual time: the current instant, the
// clocks' readings, moving forward (the engine jumps to the next deadline
// when nothing else can run) and the limit past which a trial that never
// ends is a liveness failure. The deadlines themselves are the tracer's
// (one queue: sleeps, timeouts, timed waits, kernel timers) and the
// engine's (delayed starts, delay and fault triggers). It also holds the per-node
// seeded random stream, the other source of nondeterminism lockstep pins.
//
// Operations cost no virtual time. The monotonic clocks read the elapsed
// virtual time plus a fixed boot offset (runtimes such as Go refuse a zero
// monotonic reading); the realtime clocks read a fixed epoch plus the
// elapsed virtual time.
//
// It must not import tracer: the tracer reads the clock through a small
// interface.
package vclock
