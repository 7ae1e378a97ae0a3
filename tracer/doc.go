// Package tracer runs unmodified programs under ptrace with a seccomp filter
// so that only the gated syscalls stop: connect, accept, the send and recv
// families, socket reads and writes, polls, sleeps, clock reads and a few
// bookkeeping calls. Each gated stop becomes a pending sched.Op.
//
// It owns launching process trees (a fork of the tracer thread that runs
// raw syscalls only: it joins the node's cgroup, mount and network
// namespaces, disables ASLR, waits to be seized and installs the filter
// before it execs the target), decoding syscall arguments,
// enabledness probes on duplicated fds (pidfd_getfd + poll), quiescence,
// resuming, skipping and faking results, call-site extraction, messages in
// flight (sends are captured and delivered later as their own operations),
// answering clock reads from virtual time, and tearing trees down.
//
// It must not choose what runs next: that is the scheduler's job. All ptrace
// calls happen on one locked OS thread; the exported API may be called from
// any goroutine.
package tracer
