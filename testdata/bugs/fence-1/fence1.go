// fence-1: two writers take turns leading one log in a store, fenced by
// epochs, and the store learns a new epoch only from that epoch's appends,
// not from its recovery. The old leader's last append, still in flight at
// a leadership transfer, can land between the new leader's recovery and
// its first append: the store takes it, and the new leader never has it.
//
//	fence1 store PORT [--fixed]            the log store
//	fence1 node a STORE PORT TERMS         writer a: odd epochs, listens
//	fence1 node b STORE a:PORT TERMS       writer b: even epochs
//
// The store keeps one log and a fence, the highest epoch it has seen.
// APPEND e k=v → FENCED f when e < f, else the fence becomes e and the
// entry is appended: OK pos. END e → END n, where the log ends; GET i j →
// LOG e/k=v ... (entries i..j). PING → PONG. One event loop (epoll), so
// requests are served in the order they came.
//
// Epochs 1..TERMS alternate between a (1, 3, ...) and b (2, 4, ...). A
// term: the leader recovers (END e, then GET the log two entries at a
// time, replaying each into its state, a key-value map) and appends three
// entries, the first two each after the last one's OK, telling the other
// writer of each commit (HB e pos). Then it hands over, as a rolling
// restart does: it sends the third append and, without waiting for its
// answer, TRANSFER e+1 to the other writer (Raft's TimeoutNow). The fence
// is what makes that safe, or so it thinks: an append of epoch e that the
// store reads after epoch e+1 took over is refused. It reads the answer,
// OK or FENCED, both fine to it. The last leader appends all three and
// sends DONE.
//
// A leader numbers its entries, as QJM's or BookKeeper's writers do: its
// first goes right after the end its recovery found. An append that lands
// further on means the log has an entry the leader never replayed, a write
// acknowledged by the store that the log's leader does not have: exit 1.
//
// The bug (store): END e does not raise the fence. Until the new leader's
// first APPEND, the store still takes the old epoch's appends.
//
// --fixed (store): END e is fenced like APPEND (FENCED when e is below the
// fence) and raises the fence to e, as QJM's newEpoch does before the new
// writer reads the journal: after the recovery's first request the old
// epoch can append nothing, so every append it got acknowledged is in what
// the new leader replays.
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func fail(code int, format string, a ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", a...)
	os.Exit(code)
}

func dial(addr string) net.Conn {
	for i := 0; i < 500; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			return c
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

func newConn(c net.Conn) *conn { return &conn{c: c, r: bufio.NewReader(c)} }

func (c *conn) send(format string, a ...any) {
	if _, err := fmt.Fprintf(c.c, format+"\n", a...); err != nil {
		fail(2, "write: %v", err)
	}
}

func (c *conn) recv() string {
	s, err := c.r.ReadString('\n')
	if err != nil {
		fail(2, "read: %v", err)
	}
	return strings.TrimSpace(s)
}

// call sends one request and returns its one-line answer.
func (c *conn) call(format string, a ...any) string {
	c.send(format, a...)
	return c.recv()
}

// entry is one record of the log: the epoch that wrote it and k=v.
type entry struct {
	epoch int
	kv    string
}

func (e entry) String() string { return fmt.Sprintf("%d/%s", e.epoch, e.kv) }

// runStore serves the log.
func runStore(port string, fixed bool) {
	var log []entry
	fence := 0
	handle := func(f []string) string {
		switch {
		case len(f) == 1 && f[0] == "PING":
			return "PONG"
		case len(f) == 3 && f[0] == "APPEND":
			e, _ := strconv.Atoi(f[1])
			if e < fence {
				fmt.Printf("store: append %s of epoch %d refused: fenced at epoch %d\n", f[2], e, fence)
				return fmt.Sprintf("FENCED %d", fence)
			}
			fence = e
			log = append(log, entry{e, f[2]})
			fmt.Printf("store: append %s of epoch %d at %d\n", f[2], e, len(log))
			return fmt.Sprintf("OK %d", len(log))
		case len(f) == 2 && f[0] == "END":
			e, _ := strconv.Atoi(f[1])
			if fixed {
				if e < fence {
					return fmt.Sprintf("FENCED %d", fence)
				}
				if e > fence {
					fmt.Printf("store: end of epoch %d raises the fence from %d\n", e, fence)
				}
				fence = e
			}
			fmt.Printf("store: end of epoch %d: %d entries (fence %d)\n", e, len(log), fence)
			return fmt.Sprintf("END %d", len(log))
		case len(f) == 3 && f[0] == "GET":
			from, _ := strconv.Atoi(f[1])
			to, _ := strconv.Atoi(f[2])
			if from < 1 || to > len(log) || from > to {
				return "ERROR"
			}
			s := "LOG"
			for _, en := range log[from-1 : to] {
				s += " " + en.String()
			}
			return s
		}
		return "ERROR"
	}
	serveLoop(port, handle)
}

// serveLoop answers each line of each connection with handle, in one event
// loop on raw sockets (the shape of Redis or etcd's raft loop): epoll
// reports connections in the order their data came, so requests are served
// in arrival order. (A goroutine per connection would serve two requests
// that came on two connections close together in either order, on a busy
// machine often the later one first.)
func serveLoop(port string, handle func(f []string) string) {
	must := func(err error, what string) {
		if err != nil {
			fail(2, "store: %s: %v", what, err)
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
	watch := func(fd int) {
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(fd)}
		must(syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, fd, &ev), "epoll_ctl")
	}
	watch(lfd)
	fmt.Printf("store: listening on %s\n", port)
	pending := map[int][]byte{} // each connection's bytes short of a line
	buf := make([]byte, 4096)
	evs := make([]syscall.EpollEvent, 16)
	for {
		n, err := syscall.EpollWait(ep, evs, -1)
		if err == syscall.EINTR {
			continue
		}
		must(err, "epoll_wait")
		for _, ev := range evs[:n] {
			fd := int(ev.Fd)
			if fd == lfd {
				cfd, _, err := syscall.Accept4(lfd, syscall.SOCK_CLOEXEC)
				must(err, "accept")
				watch(cfd)
				continue
			}
			m, err := syscall.Read(fd, buf)
			if m <= 0 || err != nil {
				syscall.Close(fd) // also leaves the epoll set
				delete(pending, fd)
				continue
			}
			in := append(pending[fd], buf[:m]...)
			for {
				i := bytes.IndexByte(in, '\n')
				if i < 0 {
					break
				}
				ans := handle(strings.Fields(string(in[:i])))
				in = in[i+1:]
				if _, err := syscall.Write(fd, []byte(ans+"\n")); err != nil {
					break
				}
			}
			pending[fd] = in
		}
	}
}

// recoverLog asks the store where the log ends (END e) and reads it up to
// there, two entries a request (GET from to), replaying each entry into a
// state; it returns the log's length and the state.
func recoverLog(who string, st *conn, epoch int) (int, map[string]string) {
	ans := st.call("END %d", epoch)
	f := strings.Fields(ans)
	if len(f) != 2 || f[0] != "END" {
		fail(2, "%s: end: %s", who, ans)
	}
	n, _ := strconv.Atoi(f[1])
	state := map[string]string{}
	for from := 1; from <= n; from += 2 {
		to := min(from+1, n)
		ans := st.call("GET %d %d", from, to)
		f := strings.Fields(ans)
		if len(f) != to-from+2 || f[0] != "LOG" {
			fail(2, "%s: get %d %d: %s", who, from, to, ans)
		}
		for _, en := range f[1:] {
			_, kv, _ := strings.Cut(en, "/")
			k, v, _ := strings.Cut(kv, "=")
			state[k] = v
		}
	}
	fmt.Printf("%s: epoch %d recovered %d entries\n", who, epoch, n)
	return n, state
}

// committed checks an append's answer against the writer's next position
// and returns false if the entry was fenced.
func committed(who string, st *conn, epoch int, kv, ans string, next, recovered int) bool {
	f := strings.Fields(ans)
	switch {
	case len(f) == 2 && f[0] == "FENCED":
		fmt.Printf("%s: %s fenced by epoch %s: not written\n", who, kv, f[1])
		return false
	case len(f) != 2 || f[0] != "OK":
		fail(2, "%s: append %s: %s", who, kv, ans)
	}
	pos, _ := strconv.Atoi(f[1])
	if pos != next {
		// Entries the writer never replayed: name them.
		lost := st.call("GET %d %d", next, pos-1)
		fail(1, "%s: lost write: %s went to %d, not %d: the log has %s, appended after epoch %d's "+
			"recovery found %d entries; the state of epoch %d lacks it",
			who, kv, pos, next, strings.TrimPrefix(lost, "LOG "), epoch, recovered, epoch)
	}
	fmt.Printf("%s: %s committed at %d\n", who, kv, pos)
	return true
}

// node: one of the two writers, a or b. Terms 1..terms alternate between
// them, a first (odd epochs), b (even ones); epoch t is term t.
func node(who, storeAddr, peer string, terms int) {
	var pr *conn
	first := !strings.Contains(peer, ":")
	st := newConn(dial(storeAddr))
	if ans := st.call("PING"); ans != "PONG" {
		fail(2, "%s: ping: %s", who, ans)
	}
	if first { // a listens, b dials
		l, err := net.Listen("tcp4", ":"+peer)
		if err != nil {
			fail(2, "%v", err)
		}
		c, err := l.Accept()
		if err != nil {
			fail(2, "accept: %v", err)
		}
		pr = newConn(c)
	} else {
		pr = newConn(dial(peer))
	}
	epoch := 2
	if first {
		epoch = 1
	}
	for ; epoch <= terms; epoch += 2 {
		// Wait for the term: the other writer's TRANSFER epoch.
		for epoch > 1 {
			f := strings.Fields(pr.recv())
			if len(f) == 3 && f[0] == "HB" {
				fmt.Printf("%s: epoch %s committed up to %s\n", who, f[1], f[2])
				continue
			}
			if len(f) != 2 || f[0] != "TRANSFER" || f[1] != strconv.Itoa(epoch) {
				fail(2, "%s: from the peer: %v", who, f)
			}
			break
		}
		fmt.Printf("%s: leader at epoch %d\n", who, epoch)
		n, state := recoverLog(who, st, epoch)
		next := n + 1
		for i := 1; i <= 3; i++ {
			kv := fmt.Sprintf("k%d=e%d.%d", 3*(epoch-1)+i, epoch, i)
			if i == 3 && epoch < terms {
				// The handover: the last append is sent, and the other writer
				// told to take over before its answer; the fence refuses it
				// if it comes too late.
				st.send("APPEND %d %s", epoch, kv)
				pr.send("TRANSFER %d", epoch+1)
				fmt.Printf("%s: %s sent, leadership transferred to epoch %d\n", who, kv, epoch+1)
				committed(who, st, epoch, kv, st.recv(), next, n)
				break
			}
			if !committed(who, st, epoch, kv, st.call("APPEND %d %s", epoch, kv), next, n) {
				fail(2, "%s: fenced while leader", who)
			}
			k, v, _ := strings.Cut(kv, "=")
			state[k] = v
			pr.send("HB %d %d", epoch, next)
			next++
		}
	}
	if epoch-2 != terms {
		// Not the last leader: wait for the last one to finish.
		for {
			f := strings.Fields(pr.recv())
			if len(f) == 1 && f[0] == "DONE" {
				break
			}
			if len(f) != 3 || f[0] != "HB" {
				fail(2, "%s: from the peer: %v", who, f)
			}
			fmt.Printf("%s: epoch %s committed up to %s\n", who, f[1], f[2])
		}
	} else {
		pr.send("DONE")
	}
	fmt.Printf("%s: done\n", who)
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
	switch {
	case (len(a) == 2 || len(a) == 3 && a[2] == "--fixed") && a[0] == "store":
		runStore(a[1], len(a) == 3)
	case len(a) == 5 && a[0] == "node" && (a[1] == "a" || a[1] == "b"):
		node(a[1], a[2], a[3], num(a[4]))
	default:
		fail(2, "usage: fence1 store PORT [--fixed] | fence1 node a STORE PORT TERMS | fence1 node b STORE a:PORT TERMS")
	}
}
