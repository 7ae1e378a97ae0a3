package tracer

import "log/slog"

// sockets holds the gates of the socket and descriptor syscalls (recv,
// send, connect, accept, poll, close, shutdown, the ways around them): each
// stop becomes a pending op, is refused, or runs natively.
type sockets struct {
	opts  *Options
	log   *slog.Logger
	stats *Stats
	pt    *procTable
	ops   *opTable
	net   *network
	vt    *vtime
}
