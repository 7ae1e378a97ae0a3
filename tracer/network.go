package tracer

import (
	"log/slog"
	"net/netip"
	"time"

	"github.com/lockstep-dev/lockstep/netcut"
)

// network owns delivery (docs/architecture.md "Messages in flight"): the connections
// lockstep tracks, the bytes in flight, datagrams, FINs held or waited for,
// partitions and what they hold.
type network struct {
	opts  *Options
	log   *slog.Logger
	stats *Stats
	rt    *realTime
	pt    *procTable
	ops   *opTable

	cuts *netcut.Set[netip.Addr] // the cuts in force, written through to the firewall
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
		cuts:     netcut.NewSet(opts.Firewall),
		conns:    map[string]*conn{},
		connects: map[string][]uint64{},
		netGen:   1, // a zero calmRecv or calmSend was never read
	}
}

// connOf is the connection whose sender's key is key, or nil.
func (nw *network) connOf(key string) *conn { return nw.conns[key] }

// invalidate says a socket may have gained an end of stream, an error or
// bytes lockstep's books miss (a FIN, a reset, a close, a native send, a
// process's event): what a poll found calm no longer vouches for its
// readiness (knownRecv, knownSend). Every such change calls it; nothing
// else moves netGen.
func (nw *network) invalidate() { nw.netGen++ }

// conn is one direction of a TCP connection whose sends lockstep captured:
// the bytes wait here, in order, until their deliver ops are released.
type conn struct {
	key      string // "sender local>sender peer"
	src, dst netip.AddrPort
	// dup is lockstep's duplicate of the sender's socket; it keeps the
	// connection open past the tracee's close until the queue is empty, so
	// the FIN follows the data as TCP would order it.
	dup     int
	queue   []*pendingOp
	queued  int
	sent    uint64 // bytes delivered so far
	closing bool   // the tracee closed its fd
	shutWr  bool   // the tracee shut down writing
	blocked bool   // the last delivery hit a full send buffer
	// delivered are ranges delivered but not yet consumed by a recv,
	// so a recv can name the deliveries it read.
	delivered []deliveredRange
	consumed  uint64
	// movingSince is when held bytes (see flowHeld) were first seen
	// moving again, zero while they are not.
	movingSince time.Time
	// owed is a recv with MSG_WAITALL asleep in the kernel until bytes up
	// to owedUntil arrive: the deliveries that bring them are its causes
	// too (Released.Completes). Zero when none waits.
	owed      uint64
	owedUntil uint64
	// acked: the sending socket had every byte delivered acknowledged
	// after the last delivery, so the unread ones sit in the receiving
	// socket (see unread).
	acked bool
}

type deliveredRange struct {
	start, end uint64
	id         uint64
	// head is the range's first bytes (up to Options.Data), so a recv can
	// say what it read.
	head []byte
}

// chunk is the payload of one deliver op: bytes of a connection's stream,
// or one datagram.
type chunk struct {
	data []byte
	// buf is the pooled buffer data lies in (see bufPool), returned once
	// every byte of it was delivered; nil when data is not pooled.
	buf    []byte
	conn   *conn  // a stream's
	dg     *dgram // a datagram's
	sendID uint64
}

// dgram is a captured UDP datagram on its way. Datagrams are independent:
// each is a deliver op of its own, in no order with the others (UDP may
// reorder), and lockstep sends it from its own duplicate of the sender's
// socket, so it leaves from the sender's address and port.
type dgram struct {
	fd  int // lockstep's duplicate of the sender's socket, closed once sent or dropped
	dst netip.AddrPort
}

// cutConnect is a non-blocking connect released into a partition.
type cutConnect struct {
	node        *nodeInfo
	local, peer netip.AddrPort
}

// finWait is a FIN on its way to a peer: until the peer's socket has left
// ESTABLISHED, whether its recv sees the end of the stream depends on timing.
type finWait struct {
	closer, node  *nodeInfo      // the closing side's node and the peer's
	local, remote netip.AddrPort // the peer's view
	until         time.Time
	// sent: the closing side was seen to have sent it (finSent).
	sent bool
	// releasing: no process of the closing node holds the socket any
	// more and lockstep does not either (unheld), yet it has not sent
	// the FIN: the kernel is releasing it, which a loaded CPU can hold up.
	releasing bool
}

// bufPool keeps capture buffers for reuse. A bulk transfer captures and
// delivers its bytes in chunks of up to maxCapture; allocating (and
// zeroing) each anew kept the garbage collector busy on the tracer thread:
// the release of a 64 KiB send took 200-350 µs, 20-70 µs with the pool.
type bufPool struct {
	free  [poolClasses][][]byte // by size class: poolMin << class
	bytes int                   // what free holds
}

const (
	poolMin     = 16 << 10 // smaller buffers are allocated each time
	poolClasses = 7        // up to poolMin<<6 = maxCapture
	poolLimit   = 8 << 20  // most bytes kept
)

func poolClass(n int) int {
	c := 0
	for poolMin<<c < n {
		c++
	}
	return c
}

// get returns a buffer of length n, its contents undefined.
func (bp *bufPool) get(n int) []byte {
	if n < poolMin || n > poolMin<<(poolClasses-1) {
		return make([]byte, n)
	}
	c := poolClass(n)
	if l := len(bp.free[c]); l > 0 {
		b := bp.free[c][l-1]
		bp.free[c][l-1] = nil
		bp.free[c] = bp.free[c][:l-1]
		bp.bytes -= cap(b)
		return b[:n]
	}
	return make([]byte, n, poolMin<<c)
}

// put takes back a buffer get returned, once nothing refers to it.
func (bp *bufPool) put(b []byte) {
	n := cap(b)
	if n < poolMin || n > poolMin<<(poolClasses-1) || poolMin<<poolClass(n) != n || bp.bytes+n > poolLimit {
		return
	}
	c := poolClass(n)
	bp.free[c] = append(bp.free[c], b[:0])
	bp.bytes += n
}

// finWaitLimit bounds the real time a packet lockstep knows to be on its
// way between namespaces (a FIN, delivered bytes, a handshake) is waited
// for. It crosses a veth in microseconds, in softirq; but when the kernel
// defers that work to ksoftirqd, an ordinary thread, the real-time threads
// of busy campaigns on the same CPU (tracees run SCHED_RR) leave it only
// what real-time throttling spares, 50 ms a second: a FIN was seen to
// take over a second. Past the limit the schedule may differ from a quiet
// run's, so it is long; the waits that would be in vain (a partition, a
// reset, a full window, a lost SYN) are told by the sockets' states and end
// at once, and every other wait ends as soon as the packet is there.
const finWaitLimit = 10 * time.Second

const (
	tcpEstablished = 1
	tcpSynSent     = 2
	tcpClose       = 7
	tcpCloseWait   = 8
)

// connectWaitLimit is how long lockstep waits, in real time, for a
// handshake between two nodes before it asks whether the SYN was lost
// (handshaking); past it, a lost one (a full backlog, a dead peer) leaves
// the connect to the kernel's timing.
const connectWaitLimit = 200 * time.Millisecond

// Ephemeral ports lockstep binds, within Linux's default local port range,
// and those it binds a connect within a node to, above them; the kernel's
// own picks come from above both (netns sets the nodes' range).
const (
	firstEphemeral = 32768
	lastEphemeral  = 60999
	firstLocal     = 61000
	lastLocal      = 62999
)

// arrivalPolls bounds the wait for a datagram to reach its receiver, and
// for ACKs owed across a partition about to be cut (each poll a few µs):
// a datagram may be dropped (a full receive buffer) and an ACK lost, with
// nothing to tell, so these waits stay short.
const arrivalPolls = 2000

// maxCapture bounds one captured send; a stream send may legally be partial.
const maxCapture = 1 << 20

// head copies the first Options.Data bytes of b: what a record keeps of
// a message. Nil when the spec keeps none.
func (nw *network) head(b []byte) []byte {
	if nw.opts.Data <= 0 || len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b[:min(len(b), nw.opts.Data)]...)
}
