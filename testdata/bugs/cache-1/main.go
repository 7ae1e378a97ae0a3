// cache-1: an application server caches what it reads from its database in
// a memcached-like cache, and sets the cache without waiting for the set's
// answer (memcached's noreply). A later write's delete can reach the cache
// before that set: the old value is then cached for good.
//
//	cache1 db PORT N                   a versioned key-value store, k1..kN = v0
//	cache1 mc PORT [--fixed]           the cache server
//	cache1 app PORT DB MC              the application server
//	cache1 client APP FIRST N          reads, updates and rereads kFIRST.. (N keys)
//
// The app serves GET k from the cache or, on a miss, from the database,
// and then sets the cache (SET k v rev noreply) before it answers; PUT k v
// writes the database, then deletes k from the cache (DEL k rev), then
// answers OK. It talks to the database and the cache over pools of two
// connections, one request at a time on each, so a set and a later delete
// travel on two connections. A client, for each of its keys: GET (v0), PUT
// v1, GET again, which must be v1, its own acknowledged write. If the set of
// the first GET's v0 reaches the cache after the PUT's delete, the cache
// answers v0 from then on and the client exits 1: a cache-aside "stale set",
// here with the reader and the writer the same client.
//
// The app and the database are Go's usual shape, a goroutine per
// connection (the two clients' in the app, the pools' in the database), on
// however many threads the runtime likes; the cache is one event loop.
//
// --fixed (mc): versioned sets, as memcache leases make them. Values carry
// the database's revision; a DEL k rev leaves a tombstone at rev, and a
// SET k v rev older than the tombstone is not stored.
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

// call sends one request and returns its one-line answer.
func (c *conn) call(format string, a ...any) string {
	c.send(format, a...)
	s, err := c.r.ReadString('\n')
	if err != nil {
		fail(2, "read: %v", err)
	}
	return strings.TrimSpace(s)
}

// serve accepts connections forever and answers each line of each with
// handle ("" is no answer), a goroutine per connection.
func serve(port, who string, handle func(f []string) string) {
	l, err := net.Listen("tcp4", ":"+port)
	if err != nil {
		fail(2, "%v", err)
	}
	fmt.Printf("%s: listening on %s\n", who, port)
	for {
		c, err := l.Accept()
		if err != nil {
			fail(2, "accept: %v", err)
		}
		go func(c *conn) {
			for {
				req, err := c.r.ReadString('\n')
				if err != nil {
					return
				}
				req = strings.TrimSpace(req)
				ans := handle(strings.Fields(req))
				fmt.Printf("%s: %s -> %s\n", who, req, ans)
				if ans == "" { // noreply
					continue
				}
				if _, err := fmt.Fprintf(c.c, "%s\n", ans); err != nil {
					return
				}
			}
		}(newConn(c))
	}
}

// entry is a value and the revision of the write that made it.
type entry struct {
	val string
	rev int
}

// db: GET k → VAL v rev | NONE; PUT k v → OK rev.
func runDB(port string, n int) {
	var mu sync.Mutex
	rev := 0
	vals := map[string]entry{}
	for i := 1; i <= n; i++ {
		rev++
		vals[fmt.Sprintf("k%d", i)] = entry{"v0", rev}
	}
	serve(port, "db", func(f []string) string {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case len(f) == 2 && f[0] == "GET":
			if e, ok := vals[f[1]]; ok {
				return fmt.Sprintf("VAL %s %d", e.val, e.rev)
			}
			return "NONE"
		case len(f) == 3 && f[0] == "PUT":
			rev++
			vals[f[1]] = entry{f[2], rev}
			return fmt.Sprintf("OK %d", rev)
		}
		return "ERROR"
	})
}

// mc: GET k → VAL v rev | MISS; SET k v rev [noreply] → STORED |
// NOT_STORED (nothing with noreply); DEL k rev → DELETED.
func runMC(port string, fixed bool) {
	vals := map[string]entry{}
	tomb := map[string]int{} // --fixed: the revision of each key's last delete
	serveLoop(port, "mc", func(f []string) string {
		switch {
		case len(f) == 2 && f[0] == "GET":
			if e, ok := vals[f[1]]; ok {
				return fmt.Sprintf("VAL %s %d", e.val, e.rev)
			}
			return "MISS"
		case (len(f) == 4 || len(f) == 5 && f[4] == "noreply") && f[0] == "SET":
			ans := "STORED"
			rev, _ := strconv.Atoi(f[3])
			if fixed && rev < tomb[f[1]] {
				ans = "NOT_STORED" // older than a delete: a stale set
				fmt.Printf("mc: %s=%s (rev %d) is older than its delete (rev %d): not stored\n", f[1], f[2], rev, tomb[f[1]])
			} else {
				vals[f[1]] = entry{f[2], rev}
			}
			if len(f) == 5 {
				return ""
			}
			return ans
		case len(f) == 3 && f[0] == "DEL":
			rev, _ := strconv.Atoi(f[2])
			delete(vals, f[1])
			if rev > tomb[f[1]] {
				tomb[f[1]] = rev
			}
			return "DELETED"
		}
		return "ERROR"
	})
}

// serveLoop is serve as one event loop on raw sockets, the shape of
// memcached's worker or Redis: epoll reports connections in the order
// their data came, so requests are served in arrival order. (A goroutine
// per connection serves two requests that came on two connections within
// the runtime's wake-up latency in either order: on a busy machine, often
// the later one first.)
func serveLoop(port, who string, handle func(f []string) string) {
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
	// Edge-triggered: a connection joins epoll's ready list when data comes
	// and leaves it when reported. (Level-triggered, a connection just
	// reported is queued again at once, and its next request, however late,
	// would come before one that came on another connection in between.)
	add := func(fd int, events uint32) {
		ev := syscall.EpollEvent{Events: events, Fd: int32(fd)}
		must(syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, fd, &ev), "epoll_ctl")
	}
	add(lfd, syscall.EPOLLIN)
	fmt.Printf("%s: listening on %s\n", who, port)
	bufs := map[int][]byte{}
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
				if cfd, _, err := syscall.Accept4(lfd, syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC); err == nil {
					syscall.SetsockoptInt(cfd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
					add(cfd, syscall.EPOLLIN|-syscall.EPOLLET) // EPOLLET is negative in package syscall
				}
				continue
			}
			// Edge-triggered: read until the socket is empty.
			for {
				m, err := syscall.Read(fd, buf)
				if err == syscall.EINTR {
					continue
				}
				if err == syscall.EAGAIN {
					break
				}
				if m <= 0 {
					syscall.Close(fd) // closing removes it from the epoll set
					delete(bufs, fd)
					break
				}
				b := append(bufs[fd], buf[:m]...)
				for {
					i := bytes.IndexByte(b, '\n')
					if i < 0 {
						break
					}
					req := strings.TrimSpace(string(b[:i]))
					b = b[i+1:]
					ans := handle(strings.Fields(req))
					fmt.Printf("%s: %s -> %s\n", who, req, ans)
					if ans != "" {
						syscall.Write(fd, []byte(ans+"\n"))
					}
				}
				bufs[fd] = b
			}
		}
	}
}

// pool hands out connections to one server, one request at a time each.
type pool chan *conn

func newPool(addr string, n int) pool {
	p := make(pool, n)
	for i := 0; i < n; i++ {
		p <- newConn(dial(addr))
	}
	return p
}

// send sends a request that has no answer.
func (p pool) send(format string, a ...any) {
	c := <-p
	defer func() { p <- c }()
	c.send(format, a...)
}

func (p pool) call(format string, a ...any) string {
	c := <-p
	defer func() { p <- c }()
	return c.call(format, a...)
}

type app struct {
	db, mc pool
}

func (a *app) get(k string) string {
	if ans := a.mc.call("GET %s", k); strings.HasPrefix(ans, "VAL ") {
		return ans
	}
	ans := a.db.call("GET %s", k)
	var v string
	var rev int
	if n, _ := fmt.Sscanf(ans, "VAL %s %d", &v, &rev); n == 2 {
		// Fill the cache without waiting for it (memcached's noreply): the
		// reader does not wait for the cache.
		a.mc.send("SET %s %s %d noreply", k, v, rev)
	}
	return ans
}

func (a *app) put(k, v string) string {
	ans := a.db.call("PUT %s %s", k, v)
	var rev int
	if n, _ := fmt.Sscanf(ans, "OK %d", &rev); n != 1 {
		return ans
	}
	a.mc.call("DEL %s %d", k, rev)
	return ans
}

func runApp(port, dbAddr, mcAddr string) {
	a := &app{db: newPool(dbAddr, 2), mc: newPool(mcAddr, 2)}
	serve(port, "app", func(f []string) string {
		switch {
		case len(f) == 2 && f[0] == "GET":
			return a.get(f[1])
		case len(f) == 3 && f[0] == "PUT":
			return a.put(f[1], f[2])
		}
		return "ERROR"
	})
}

func client(appAddr string, first, n int) {
	c := newConn(dial(appAddr))
	ask := func(format string, a ...any) string {
		ans := c.call(format, a...)
		fmt.Printf("client: %s -> %s\n", fmt.Sprintf(format, a...), ans)
		return ans
	}
	for i := first; i < first+n; i++ {
		ask("GET k%d", i)
		if ans := ask("PUT k%d v1", i); !strings.HasPrefix(ans, "OK ") {
			fail(2, "client: unexpected %q", ans)
		}
		if ans := ask("GET k%d", i); !strings.HasPrefix(ans, "VAL v1 ") {
			fail(1, "client: stale read: k%d=v1 was acknowledged, the app answers %s", i, ans)
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
	switch {
	case len(a) == 3 && a[0] == "db":
		runDB(a[1], num(a[2]))
	case (len(a) == 2 || len(a) == 3 && a[2] == "--fixed") && a[0] == "mc":
		runMC(a[1], len(a) == 3)
	case len(a) == 4 && a[0] == "app":
		runApp(a[1], a[2], a[3])
	case len(a) == 4 && a[0] == "client":
		client(a[1], num(a[2]), num(a[3]))
	default:
		fail(2, "usage: cache1 db PORT N | cache1 mc PORT [--fixed] | cache1 app PORT DB MC | cache1 client APP FIRST N")
	}
}
