// Package tracer runs unmodified programs under ptrace with a seccomp filter
// so that only the gated syscalls stop: connect, accept, the send and recv
// families, socket reads and writes, polls, sleeps, clock reads and a few
// bookkeeping calls. Each gated stop becomes a pending sched.Op.
//
// It owns the policy: which syscalls are gated and what each becomes (the
// gate table, gateTable), whether a pending op is enabled, how it is
// released, messages in flight (sends are captured and delivered later as
// their own operations), virtual time (clock page, sleeps, timed waits,
// kernel timers, the time-stamp counter rewritten where it does not trap),
// quiescence (disk syscalls and clones run alone), the ways around the gate it
// refuses (sockets_bypass.go: splice and sendfile on sockets;
// sockets_unix.go: Unix sockets the node did not bind, however their path
// names them; sends it cannot read), faults, and tearing trees down.
//
// A Tracer composes parts with one job each, and each part's methods touch
// only its own state and the parts it was given:
//
//   - procTable: nodes, processes, threads and their descriptors; a
//     stopped thread is the handle a stop's handler works through (thread:
//     registers, memory, cont, fake, inject);
//   - opTable: pending ops, their numbering and batched readiness polls,
//     and the kind table (kindTable) that says, per op kind, what readiness
//     depends on, when an op is enabled and how it is released;
//   - network: messages in flight, connections, datagrams, FINs, and the
//     cuts in force (a netcut.Set, which alone writes Options.Firewall);
//   - vtime: clock answers, clock faults, sleeps, timed waits, kernel
//     timers, and the one queue of every virtual deadline of a trial
//     (vtime.go). The owner's deadlines join it (Options.Wakes,
//     vtime_deadlines.go: the engine's node starts, delay-hold ends, fault
//     triggers and fault ends): each is a function of the owner's state, read
//     whenever the queue is read, so the owner never tells the tracer
//     when one moves and none goes stale. State.Queue reads the queue
//     during the Step (Next: where the clock jumps; List: the advance
//     targets); State.Deadlines is the tracer's own at the settle;
//   - quiescence: collecting events until no thread can move, the
//     sentinel, disk syscalls and clones held until nothing else runs
//     (clones in their creators' LPID order; a thread is named by its
//     creator, so that names do not race);
//   - sockets: the gates of the socket syscalls and the release of the
//     socket op kinds;
//   - disks: the storage faults' stops on data files (disk.go).
//
// The gate table binds each gated syscall to the part that owns what its
// handler changes. The syscall table (syscalls.go) names every syscall the
// tracer knows and lays out its arguments; a stop's registers are decoded
// through it once (decodeCall), and handlers read the decoded call's
// fields by role, never an argument by its number.
//
// Each file holds one part's code and is named for it (proc_, ops_,
// vtime_, network_, quiescence_, sockets_, tracer_; disk.go the disks';
// api.go, gate.go, syscalls.go and procfs.go hold what every part uses).
// A file names only files on its own line of this list or on the lines
// before it, from the ground up:
//
//   - procfs.go, syscalls.go (the syscall table, the decoded call),
//     vtime_images.go (the executables' counter reads),
//     vtime_vdso*.go (the vDSO and the clock page), quiescence_alarm.go;
//   - api.go: the exported types (Options, State, Action, Deadline, ...);
//   - proc_fdinfo.go, proc_node.go, proc.go (the thread handle, processes
//     and their table), proc_fds.go, proc_stat.go (a process's own stat
//     files, their resident set size fixed), proc_table.go;
//   - gate.go, ops.go, ops_table.go: the gate type, pending ops and their
//     table;
//   - vtime.go and network.go: those parts' state (the deadline queue and
//     the timers; connections, chunks, datagrams), then their jobs:
//     vtime_*.go (clock answers, clock page, counter, timers, waits,
//     deadlines) and network_*.go (capture, connections, delivery, faults,
//     datagrams, FIN checks, bytes in flight (network_inflight.go), and network_kinds.go, the network's side of
//     the op kinds);
//   - quiescence.go, quiescence_wait.go; sockets.go, sockets_bypass.go,
//     sockets_unix.go, sockets_gates.go, sockets_release.go; disk.go;
//   - ops_release.go: enabledness and release by kind;
//   - tracer.go (the Tracer), tracer_*.go (events, launch, settle, dump,
//     the trial loop), and at the top tracer_new.go, which composes the
//     parts and holds the two tables that name their handlers (gateTable,
//     kindTable).
//
// Only the parts' state types name each other both ways: a thread and
// the op it is stopped at, an op and its chunk, the op table with the
// network and vtime.
//
// Below the policy, in packages of its own that know nothing of ops:
//
//   - internal/ptrace: every ptrace request, wait statuses as kinds,
//     registers (x86-64 in its _amd64 files), tracee memory, injected
//     syscalls;
//   - internal/launch: forking a node's first process (or asking the
//     zygote to), its sandbox and seccomp program;
//   - internal/sockdiag: looking up and destroying a TCP socket, finding
//     the Unix socket bound to a file;
//   - internal/callsite: naming the code that made a syscall.
//
// It must not choose what runs next: that is the scheduler's job. All ptrace
// calls happen on one locked OS thread (Tracer.loop); the functions that
// must run there say so with a "Precondition:" line. The exported API may
// be called from any goroutine.
package tracer
