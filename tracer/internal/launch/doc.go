// Package launch starts a node's first process, ready to be seized: a fork
// that runs only raw syscalls (or a zygote process that does the forking)
// joins the node's network namespace, builds its sandbox (PID, mount
// and IPC namespaces, capabilities), installs the seccomp filter and waits
// to be let go before it execs the program. It also builds the seccomp
// program from the list of gated syscalls, with the refusals every node
// gets (other ABIs, ways out of the sandbox, around the gate, or off
// lockstep's CPU scheduling).
//
// It does not trace: seizing the child and everything after is package
// tracer's, as is the choice of which syscalls are gated.
package launch
