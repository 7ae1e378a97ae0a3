// Package nsexec runs code inside a network namespace on a locked OS
// thread, and brings the thread back to its own namespace afterwards.
// It is the one place lockstep switches namespaces from Go (a forked
// child's setns before exec is the launcher's, in raw syscalls).
package nsexec
