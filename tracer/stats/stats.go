package stats

import "time"

// Trial counts what the tracer did in one trial, for benchmarks and
// reports (tracer.Stats).
type Trial struct {
	Stops      uint64 // seccomp stops
	Released   uint64 // stops released at once (not ops)
	ClockReads uint64
	Ops        uint64
	Deliveries uint64
	// ArrivalPolls counts extra sock_diag polls while delivered bytes
	// crossed the network.
	ArrivalPolls int
	// ArrivalsLate counts deliveries whose bytes had not reached the
	// receiver when lockstep stopped waiting: from then on, whether the
	// receiver's ops are enabled depends on timing.
	ArrivalsLate int
	// WindowFull counts deliveries whose bytes the sending socket held
	// back because the receiver's window was full (not waited for: they
	// move when the receiver reads).
	WindowFull  int
	TimedWaits  uint64
	SettleSpins uint64
	TSCReads    uint64 // rdtsc/rdtscp answered from virtual time
	Alone       uint64 // disk syscalls held until nothing else ran (onAlone)
	Clones      uint64 // thread and process creations held until nothing else ran (onCreate)
	// ClockSpins counts the times held clones and disk syscalls ran
	// because every thread still running looped on the stopped clock
	// (tracer/quiescence_clockspin.go), not after the grace period.
	ClockSpins uint64
	DiskSyncs  uint64 // flushes to the disk answered at once (onDiskSync)
	AcksLate   uint64 // ACKs a partition did not wait for (flushAcks)
	// FinWaits counts closes after which lockstep waited for a FIN to
	// reach the peer; FinWaitsExpired those it waited for in vain (real
	// time lost: finWaitLimit each).
	FinWaits, FinWaitsExpired int
	// Resets counts connections a reset fault aborted, Drops datagrams a
	// drop fault discarded.
	Resets, Drops int
	// Starved counts states reported while threads were still runnable
	// but got no CPU for several grace periods (a machine overloaded by
	// other work): the schedule from there may differ from a quiet run's.
	Starved int
	// BooksMissed counts the states in which an op lockstep's books held
	// not ready (see known) was ready when nothing else was: the books
	// missed something, which a poll made up for.
	BooksMissed int
	// SleepersSkipped counts the /proc reads of sleeping threads that
	// quiescence skipped because their node had not run since they were
	// seen asleep (tracer/proc_node.go).
	SleepersSkipped uint64
	// Time spent, for the benchmark's breakdown: handling stops (register
	// reads, decoding, call sites included), call sites alone, waiting for
	// tracees to run (quiescence), the caller's decisions, releases.
	HandleTime  time.Duration
	SiteTime    time.Duration
	SettleTime  time.Duration
	DecideTime  time.Duration
	ReleaseTime time.Duration
	// Of SettleTime: yielding the CPU to running tracees, confirming that
	// sleeping ones stay asleep, and blocked waits for an event.
	SettleYield, SettleConfirm, SettleBlocked time.Duration
}
