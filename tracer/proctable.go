package tracer

import (
	"log/slog"
	"net/netip"
)

// procTable owns the nodes, the traced processes and threads, and the
// processes' descriptors: who exists and in what state. It knows nothing of
// ops, deliveries or time.
type procTable struct {
	opts  *Options
	log   *slog.Logger
	stats *Stats

	nodes    map[string]*nodeInfo
	nodeList []*nodeInfo // nodes in launch order, for the loops run per op
	byAddr   map[netip.Addr]*nodeInfo
	threads  map[int]*thread
	procs    map[int]*process
	// nState counts the threads in threads in each state (setState,
	// addThread, removeThread).
	nState [numStates]int
	// sockOptsGen numbers the settings fdInfo.opts caches (see sockOpts);
	// changingSockOpts counts threads between the stop at a change of
	// them and their next event.
	sockOptsGen      uint64
	changingSockOpts int
	// expect says an event may come even when every thread is held (see
	// collect).
	expect bool
	// resumed says cont let a thread go since the last settle.
	resumed bool
}

func newProcTable(opts *Options, log *slog.Logger, stats *Stats) *procTable {
	return &procTable{
		opts: opts, log: log, stats: stats,
		nodes:   map[string]*nodeInfo{},
		byAddr:  map[netip.Addr]*nodeInfo{},
		threads: map[int]*thread{},
		procs:   map[int]*process{},
		// An fdInfo's zero sockOpts were never read.
		sockOptsGen: 1,
	}
}
