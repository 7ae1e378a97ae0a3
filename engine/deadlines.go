package engine

import (
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/tracer"
)

// minOwnSleep is the least time a main thread's sleep must have left to be
// a delay target before its thread used the network: a runtime's spin
// waits (Go's usleep(3) when stealing work) are shorter, a program's
// start-up pause longer.
const minOwnSleep = time.Millisecond

// housekeeping are the names (prefixes, as /proc/…/comm truncates them to
// 15 bytes) of threads a managed runtime runs for itself: their timed waits
// never stand for the program's.
var housekeeping = []string{
	// HotSpot.
	"VM Thread", "VM Periodic Tas", "Monitor Deflati", "GC Thread", "G1 ", "C1 CompilerThre", "C2 CompilerThre",
	"Signal Dispatch", "Service Thread", "Common-Cleaner", "Notification Th", "Reference Handl", "Finalizer",
	"Sweeper thread", "Attach Listener", "VM Operation", "ConcurrentGC", "ZDirector", "ZDriver", "ZStat",
	"Shenandoah",
}

// ownSleep says whether a sleep or timed wait (d.Kind Sleep) is the
// program's own although its thread has not used the network yet: a wait
// of a process's main thread (lpid …/t0), with at least minOwnSleep to
// run, on a thread not named as a runtime's. A C or Rust program's
// start-up sleep is one (a service that sleeps before it registers); Go's
// sysmon (a thread of its own, 20 µs–10 ms nanosleeps) and a JVM's VM and
// GC threads (futex waits of 250 ms–1 s) are not, measured on
// testdata/specs/pingpong-{go,java}.yaml. The sleeps of a Go program's
// goroutines are netpoller waits (Poll), offered anyway.
func ownSleep(d tracer.Deadline, now time.Duration) bool {
	if !strings.HasSuffix(d.LPID, "/t0") || d.At-now < minOwnSleep {
		return false
	}
	for _, h := range housekeeping {
		if strings.HasPrefix(d.Thread, h) {
			return false
		}
	}
	return true
}
