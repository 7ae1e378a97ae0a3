// Package ptrace is the tracer's mechanism layer: the ptrace requests it
// makes, the wait statuses it decodes, a stopped thread's registers (in the
// architecture's files), its memory, and syscalls injected into it.
//
// It owns no policy: it never decides whether a syscall runs, what it
// returns or when a thread resumes; package tracer does. Every function that
// takes a thread id must run on the OS thread that seized that thread (the
// kernel accepts ptrace requests from the tracer thread only); package tracer
// keeps them all on one locked OS thread. Each says so as "Precondition:".
package ptrace
