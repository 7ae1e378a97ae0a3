// fanout-1: a coordinator replicates every write to three replicas and
// acknowledges it once two of them have (a write quorum, W=2 of N=3); a
// client reads back from its nearest replica alone (R=1, Cassandra's
// consistency ONE). W+R is not more than N: the replica read may be the
// one whose copy of the write is still in flight, and the client reads
// its own acknowledged write as the value before it.
//
//	fanout1 replica NAME PORT                 a versioned key-value replica
//	fanout1 coord PORT W REPLICA...           the coordinator, acknowledges after W acks
//	fanout1 client COORD N REPLICA... [--fixed]  N writes, each read back from the first replica
//
// Replicas: REPL seq k v → applies v if seq is newer than k's, answers
// ACK seq; GET k → VAL v seq or NONE. Each replica is one event loop
// (epoll, edge-triggered), as Redis or memcached serve: requests in the
// order they came, whatever their connection.
//
// The coordinator keeps one connection to each replica. PUT k v from a
// client: the next sequence number s, REPL s k v written to every replica
// in turn, then OK s once W replicas answered ACK s; the other ACKs are
// only logged. The client, for i = 1..N: PUT x vi (OK s), then GET x from
// the first replica, which must answer VAL vi s: else exit 1.
//
// --fixed (client): reads at a quorum, from the first two replicas, and
// takes the newest answer: with W=2 and R=2 of 3 replicas, one of the two
// holds every acknowledged write.
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

func fail(code int, format string, a ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", a...)
	os.Exit(code)
}

// dial connects to addr, retrying while the peer is not up yet.
func dial(addr string) *conn {
	for i := 0; i < 500; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			return &conn{c: c, r: bufio.NewReader(c)}
		}
		time.Sleep(10 * time.Millisecond)
	}
	fail(2, "cannot connect to %s", addr)
	return nil
}

// conn is one connection, read and written a line at a time.
type conn struct {
	c net.Conn
	r *bufio.Reader
}

func (c *conn) send(format string, a ...any) {
	if _, err := fmt.Fprintf(c.c, format+"\n", a...); err != nil {
		fail(2, "write to %s: %v", c.c.RemoteAddr(), err)
	}
}

func (c *conn) line() string {
	s, err := c.r.ReadString('\n')
	if err != nil {
		fail(2, "read from %s: %v", c.c.RemoteAddr(), err)
	}
	return strings.TrimSpace(s)
}

// entry is a replica's value of a key and the sequence number of the
// write that made it.
type entry struct {
	val string
	seq int
}

// runReplica serves REPL and GET from one event loop.
func runReplica(name, port string) {
	vals := map[string]entry{}
	eventLoop(name, port, func(f []string) string {
		switch {
		case len(f) == 4 && f[0] == "REPL":
			seq, err := strconv.Atoi(f[1])
			if err != nil {
				return "ERROR"
			}
			if seq > vals[f[2]].seq { // a late, older copy changes nothing
				vals[f[2]] = entry{f[3], seq}
			}
			return fmt.Sprintf("ACK %d", seq)
		case len(f) == 2 && f[0] == "GET":
			if e, ok := vals[f[1]]; ok {
				return fmt.Sprintf("VAL %s %d", e.val, e.seq)
			}
			return "NONE"
		}
		return "ERROR"
	})
}

// eventLoop accepts connections on port and answers every line of each
// with handle, from one loop over raw sockets: epoll, edge-triggered,
// reports connections in the order their data came. (A goroutine per
// connection would let the runtime run two requests that arrived close
// together in either order once both are waiting, which on a loaded
// machine reorders them without any help from the network.)
func eventLoop(who, port string, handle func(f []string) string) {
	must := func(err error, what string) {
		if err != nil {
			fail(2, "%s: %s: %v", who, what, err)
		}
	}
	p, err := strconv.Atoi(port)
	must(err, "port")
	lfd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	must(err, "socket")
	must(syscall.SetsockoptInt(lfd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1), "setsockopt")
	must(syscall.Bind(lfd, &syscall.SockaddrInet4{Port: p}), "bind")
	must(syscall.Listen(lfd, 16), "listen")
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	must(err, "epoll_create1")
	watch := func(fd int, events uint32) {
		ev := syscall.EpollEvent{Events: events, Fd: int32(fd)}
		must(syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, fd, &ev), "epoll_ctl")
	}
	watch(lfd, syscall.EPOLLIN)
	fmt.Printf("%s: listening on %s\n", who, port)
	partial := map[int][]byte{} // each connection's unfinished line
	var evs [16]syscall.EpollEvent
	buf := make([]byte, 4096)
	for {
		n, err := syscall.EpollWait(ep, evs[:], -1)
		if err == syscall.EINTR {
			continue
		}
		must(err, "epoll_wait")
		for _, ev := range evs[:n] {
			fd := int(ev.Fd)
			if fd == lfd {
				cfd, _, err := syscall.Accept4(lfd, syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC)
				if err == nil {
					syscall.SetsockoptInt(cfd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
					// Edge-triggered: a connection is reported once per arrival, not
					// again and again while it has data, which would put its next
					// request ahead of another connection's earlier one.
					watch(cfd, syscall.EPOLLIN|-syscall.EPOLLET) // EPOLLET is negative in package syscall
				}
				continue
			}
			for { // edge-triggered: read until the socket is empty
				m, err := syscall.Read(fd, buf)
				if err == syscall.EINTR {
					continue
				}
				if err == syscall.EAGAIN {
					break
				}
				if m <= 0 {
					syscall.Close(fd) // closing removes it from the epoll set
					delete(partial, fd)
					break
				}
				b := append(partial[fd], buf[:m]...)
				for {
					i := bytes.IndexByte(b, '\n')
					if i < 0 {
						break
					}
					req := strings.TrimSpace(string(b[:i]))
					b = b[i+1:]
					ans := handle(strings.Fields(req))
					fmt.Printf("%s: %s -> %s\n", who, req, ans)
					syscall.Write(fd, []byte(ans+"\n"))
				}
				partial[fd] = b
			}
		}
	}
}

// coord replicates writes: one connection per replica, a reader goroutine
// on each that hands ACKs to the write waiting for them.
type coord struct {
	w        int
	replicas []string
	conns    []*conn
	mu       sync.Mutex // guards seq, waiting and every write to a replica
	seq      int
	waiting  map[int]chan string // by sequence number: the names of the replicas that acked
}

func runCoord(port string, w int, replicas []string) {
	co := &coord{w: w, replicas: replicas, waiting: map[int]chan string{}}
	for _, addr := range replicas {
		co.conns = append(co.conns, dial(addr))
	}
	for i := range co.conns {
		go co.readAcks(i)
	}
	l, err := net.Listen("tcp4", ":"+port)
	if err != nil {
		fail(2, "coord: %v", err)
	}
	fmt.Printf("coord: listening on %s, W=%d of %d replicas\n", port, w, len(replicas))
	for {
		c, err := l.Accept()
		if err != nil {
			fail(2, "coord: accept: %v", err)
		}
		go co.serve(&conn{c: c, r: bufio.NewReader(c)})
	}
}

// readAcks passes replica i's ACKs to the writes that wait for them.
func (co *coord) readAcks(i int) {
	for {
		var seq int
		if _, err := fmt.Sscanf(co.conns[i].line(), "ACK %d", &seq); err != nil {
			fail(2, "coord: from %s: %v", co.replicas[i], err)
		}
		co.mu.Lock()
		ch := co.waiting[seq]
		co.mu.Unlock()
		ch <- co.replicas[i] // buffered for every replica: never blocks
	}
}

func (co *coord) serve(c *conn) {
	for {
		s, err := c.r.ReadString('\n')
		if err != nil {
			return
		}
		f := strings.Fields(s)
		if len(f) != 3 || f[0] != "PUT" {
			c.send("ERROR")
			continue
		}
		seq, acks := co.replicate(f[1], f[2])
		var by []string
		for len(by) < co.w {
			by = append(by, <-acks)
		}
		// The write is acknowledged with the other copies still on their way
		// (the bug is the client's: it reads from one replica).
		fmt.Printf("coord: %s=%s (seq %d) acked by %s: OK\n", f[1], f[2], seq, strings.Join(by, ", "))
		c.send("OK %d", seq)
		go co.drain(seq, acks, len(by))
	}
}

// replicate numbers a write and sends it to every replica, in turn.
func (co *coord) replicate(k, v string) (int, chan string) {
	co.mu.Lock()
	defer co.mu.Unlock()
	co.seq++
	acks := make(chan string, len(co.conns))
	co.waiting[co.seq] = acks
	for _, rc := range co.conns {
		rc.send("REPL %d %s %s", co.seq, k, v)
	}
	return co.seq, acks
}

// drain logs the ACKs that come after a write was acknowledged.
func (co *coord) drain(seq int, acks chan string, got int) {
	for ; got < len(co.conns); got++ {
		fmt.Printf("coord: seq %d also acked by %s\n", seq, <-acks)
	}
	co.mu.Lock()
	delete(co.waiting, seq)
	co.mu.Unlock()
}

// client writes x = v1..vN through the coordinator and reads each back.
func client(coordAddr string, n int, replicas []string, fixed bool) {
	co := dial(coordAddr)
	readFrom := replicas[:1] // its nearest replica
	if fixed {
		readFrom = replicas[:2] // a quorum: W + R > N
	}
	var rs []*conn
	for _, addr := range readFrom {
		rs = append(rs, dial(addr))
	}
	for i := 1; i <= n; i++ {
		want := fmt.Sprintf("v%d", i)
		co.send("PUT x %s", want)
		ans := co.line()
		var seq int
		if _, err := fmt.Sscanf(ans, "OK %d", &seq); err != nil {
			fail(2, "client: PUT x %s: unexpected %q", want, ans)
		}
		fmt.Printf("client: PUT x %s -> %s\n", want, ans)
		got, from, newest := "NONE", "", -1
		for j, r := range rs {
			r.send("GET x")
			ans := r.line()
			fmt.Printf("client: GET x from %s -> %s\n", readFrom[j], ans)
			var v string
			var s int
			if k, _ := fmt.Sscanf(ans, "VAL %s %d", &v, &s); k == 2 && s > newest {
				got, from, newest = ans, readFrom[j], s
			} else if from == "" {
				got, from = ans, readFrom[j]
			}
		}
		if got != fmt.Sprintf("VAL %s %d", want, seq) {
			fail(1, "client: stale read: x=%s was acknowledged (OK %d), %s answers %s", want, seq, from, got)
		}
	}
	fmt.Printf("client: read back all %d writes\n", n)
}

func main() {
	a := os.Args[1:]
	num := func(s string) int {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			fail(2, "bad number %q", s)
		}
		return n
	}
	fixed := len(a) > 0 && a[len(a)-1] == "--fixed"
	if fixed {
		a = a[:len(a)-1]
	}
	switch {
	case len(a) == 3 && a[0] == "replica" && !fixed:
		runReplica(a[1], a[2])
	case len(a) >= 4 && a[0] == "coord" && !fixed:
		runCoord(a[1], num(a[2]), a[3:])
	case len(a) >= 4 && a[0] == "client" && (!fixed || len(a) >= 5):
		client(a[1], num(a[2]), a[3:], fixed)
	default:
		fail(2, "usage: fanout1 replica NAME PORT | fanout1 coord PORT W REPLICA... | fanout1 client COORD N REPLICA... [--fixed]")
	}
}
