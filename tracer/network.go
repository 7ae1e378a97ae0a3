package tracer

import (
	"log/slog"
	"net/netip"
)

// network owns delivery (DESIGN.md "Messages in flight"): the connections
// lockstep tracks, the bytes in flight, datagrams, FINs held or waited for,
// partitions and what they hold.
type network struct {
	opts  *Options
	log   *slog.Logger
	stats *Stats
	pt    *procTable
	ops   *opTable

	cut map[[2]netip.Addr]bool // address pairs a partition separates
	// cutConnects are non-blocking connects released into a partition.
	cutConnects []cutConnect
	finsHeld    []*conn // connections whose FIN waits for a heal
	conns       map[string]*conn
	connects    map[string][]uint64 // released connects per listener, for accept causes
	finWaits    []finWait
	held        []*conn // connections whose sender holds delivered bytes back for want of window
	bufs        bufPool // capture buffers
	// nativeSends names the connections (by their sender's key) on which
	// a send ran natively (see stirOp).
	nativeSends map[string]bool
	// netGen numbers the spans in which no socket can have gained an end
	// of stream, an error or bytes lockstep's books miss (see known).
	netGen uint64
	// lateFins names the connections (by their receiver's inKey) whose FIN
	// lockstep stopped waiting for (netSettled).
	lateFins map[string]bool
}

func newNetwork(opts *Options, log *slog.Logger, stats *Stats, pt *procTable, ops *opTable) *network {
	return &network{
		opts: opts, log: log, stats: stats, pt: pt, ops: ops,
		conns:    map[string]*conn{},
		connects: map[string][]uint64{},
		netGen:   1, // a zero calmRecv or calmSend was never read
	}
}
