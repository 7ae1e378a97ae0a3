// cache-1: a look-aside cache fills a key with a value it fetched before
// the key's invalidation, after the invalidation: the stale value stays.
//
//	cache1 store PORT N            a versioned key-value store, k1..kN = old
//	cache1 cache PORT STORE [--fixed]
//	cache1 writer STORE N READER   writes kN..k1 = new, then tells the reader
//	cache1 reader CACHE N PORT     reads k1..kN through the cache, twice
//
// The store numbers its writes (revisions). A cache subscribes to it (SUB)
// and a write is acknowledged to its writer only once every subscriber has
// acknowledged its INVAL k rev: after OK, no cache holds the old value. The
// cache answers GET k from its map or, on a miss, fetches k from the store
// in a goroutine of its own over a pool of store connections and fills the
// map with the answer (VAL k v rev). The fetch and the invalidation come on
// two connections and are read by two goroutines. If the store answers a
// fetch, then takes a write of the same key, and the cache applies that
// write's INVAL before the fetch's answer, the fill puts the old value back
// after the invalidation and nothing ever removes it: Facebook's "stale
// set" of memcache (NSDI 2013), which leases fix. The reader reads every
// key through the cache while the writer writes, waits for the writer's
// DONE and reads every key again: an old value then is a stale cache, exit 1.
//
// --fixed (cache): the cache remembers, per key, the highest revision it
// was told to invalidate, and does not fill a value older than that.
package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
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

func listen(port string) net.Listener {
	l, err := net.Listen("tcp4", ":"+port)
	if err != nil {
		fail(2, "%v", err)
	}
	return l
}

// conn is one connection read and written a line at a time.
type conn struct {
	c net.Conn
	r *bufio.Reader
}

func newConn(c net.Conn) *conn { return &conn{c: c, r: bufio.NewReader(c)} }

func (c *conn) send(format string, a ...any) error {
	_, err := fmt.Fprintf(c.c, format+"\n", a...)
	return err
}

func (c *conn) line() (string, error) {
	s, err := c.r.ReadString('\n')
	return strings.TrimSpace(s), err
}

// serve accepts connections forever, each served by a goroutine of its own.
func serve(l net.Listener, each func(*conn)) {
	for {
		c, err := l.Accept()
		if err != nil {
			fail(2, "accept: %v", err)
		}
		go each(newConn(c))
	}
}

// store

type entry struct {
	val string
	rev int
}

// subscriber is a cache's SUB connection: a goroutine writes the INVALs
// queued on out, another reads the ACKs and wakes the writes waiting.
type subscriber struct {
	out     chan string
	mu      sync.Mutex
	waiting map[int]chan struct{}
}

type store struct {
	mu   sync.Mutex
	rev  int
	vals map[string]entry
	subs []*subscriber
}

func (s *store) handle(c *conn) {
	for {
		req, err := c.line()
		if err != nil {
			return
		}
		fmt.Printf("store: %s\n", req)
		f := strings.Fields(req)
		switch {
		case len(f) == 2 && f[0] == "GET":
			s.mu.Lock()
			e, ok := s.vals[f[1]]
			s.mu.Unlock()
			if !ok {
				e = entry{"-", 0}
			}
			c.send("VAL %s %s %d", f[1], e.val, e.rev)
		case len(f) == 3 && f[0] == "PUT":
			rev := s.put(f[1], f[2])
			c.send("OK %d", rev)
		case len(f) == 1 && f[0] == "SUB":
			s.subscribe(c)
			return
		default:
			c.send("ERR %s", req)
		}
	}
}

// put applies a write and returns once every subscriber acknowledged its
// invalidation.
func (s *store) put(k, v string) int {
	s.mu.Lock()
	s.rev++
	rev := s.rev
	s.vals[k] = entry{v, rev}
	subs := append([]*subscriber(nil), s.subs...)
	s.mu.Unlock()
	var acks []chan struct{}
	for _, sub := range subs {
		done := make(chan struct{})
		sub.mu.Lock()
		sub.waiting[rev] = done
		sub.mu.Unlock()
		sub.out <- fmt.Sprintf("INVAL %s %d", k, rev)
		acks = append(acks, done)
	}
	for _, done := range acks {
		<-done
	}
	return rev
}

func (s *store) subscribe(c *conn) {
	sub := &subscriber{out: make(chan string, 64), waiting: map[int]chan struct{}{}}
	s.mu.Lock()
	s.subs = append(s.subs, sub)
	s.mu.Unlock()
	c.send("SUBSCRIBED")
	go func() {
		for m := range sub.out {
			if err := c.send("%s", m); err != nil {
				return
			}
		}
	}()
	for {
		ack, err := c.line()
		if err != nil {
			return
		}
		rev, err := strconv.Atoi(strings.TrimPrefix(ack, "ACK "))
		if err != nil {
			fail(2, "store: bad ack %q", ack)
		}
		sub.mu.Lock()
		if done, ok := sub.waiting[rev]; ok {
			close(done)
			delete(sub.waiting, rev)
		}
		sub.mu.Unlock()
	}
}

// cache

// flight is one fetch of a key, which every GET that misses it waits for.
type flight struct {
	done chan struct{}
	val  string
}

type cache struct {
	fixed   bool
	pool    chan *conn // connections to the store for fetches
	mu      sync.Mutex
	vals    map[string]string
	flights map[string]*flight
	inval   map[string]int // --fixed: the highest revision invalidated, per key
}

func (c *cache) get(k string) string {
	c.mu.Lock()
	if v, ok := c.vals[k]; ok {
		c.mu.Unlock()
		fmt.Printf("cache: hit %s=%s\n", k, v)
		return v
	}
	f, ok := c.flights[k]
	if !ok {
		f = &flight{done: make(chan struct{})}
		c.flights[k] = f
		go c.fetch(k, f)
	}
	c.mu.Unlock()
	<-f.done
	return f.val
}

// fetch reads k from the store and fills the map with it.
func (c *cache) fetch(k string, f *flight) {
	sc := <-c.pool
	if err := sc.send("GET %s", k); err != nil {
		fail(2, "cache: store: %v", err)
	}
	ans, err := sc.line()
	if err != nil {
		fail(2, "cache: store: %v", err)
	}
	c.pool <- sc
	var key, val string
	var rev int
	if n, _ := fmt.Sscanf(ans, "VAL %s %s %d", &key, &val, &rev); n != 3 || key != k {
		fail(2, "cache: unexpected %q", ans)
	}
	c.mu.Lock()
	if c.fixed && rev < c.inval[k] {
		fmt.Printf("cache: %s=%s (rev %d) is older than its invalidation (rev %d): not filled\n", k, val, rev, c.inval[k])
	} else {
		c.vals[k] = val // the bug: an invalidation since the fetch is not looked at
		fmt.Printf("cache: filled %s=%s (rev %d)\n", k, val, rev)
	}
	delete(c.flights, k)
	c.mu.Unlock()
	f.val = val
	close(f.done)
}

// invalidations applies the store's INVALs and acknowledges each.
func (c *cache) invalidations(sub *conn) {
	for {
		m, err := sub.line()
		if err != nil {
			fail(2, "cache: the store closed the subscription: %v", err)
		}
		var k string
		var rev int
		if n, _ := fmt.Sscanf(m, "INVAL %s %d", &k, &rev); n != 2 {
			fail(2, "cache: unexpected %q", m)
		}
		c.mu.Lock()
		delete(c.vals, k)
		if rev > c.inval[k] {
			c.inval[k] = rev
		}
		c.mu.Unlock()
		fmt.Printf("cache: invalidated %s (rev %d)\n", k, rev)
		if err := sub.send("ACK %d", rev); err != nil {
			fail(2, "cache: store: %v", err)
		}
	}
}

func (c *cache) handle(cl *conn) {
	for {
		req, err := cl.line()
		if err != nil {
			return
		}
		if k, ok := strings.CutPrefix(req, "GET "); ok {
			cl.send("VAL %s", c.get(k))
		} else {
			cl.send("ERR %s", req)
		}
	}
}

func runCache(port, storeAddr string, fixed bool) {
	c := &cache{fixed: fixed, pool: make(chan *conn, 2), vals: map[string]string{},
		flights: map[string]*flight{}, inval: map[string]int{}}
	// Subscribe before serving: no fill can predate the subscription.
	sub := newConn(dial(storeAddr))
	sub.send("SUB")
	if m, err := sub.line(); err != nil || m != "SUBSCRIBED" {
		fail(2, "cache: subscribe: %q %v", m, err)
	}
	go c.invalidations(sub)
	for i := 0; i < cap(c.pool); i++ {
		c.pool <- newConn(dial(storeAddr))
	}
	fmt.Printf("cache: listening on %s, fixed=%v\n", port, fixed)
	serve(listen(port), c.handle)
}

// clients

func ask(c *conn, who, format string, a ...any) string {
	if err := c.send(format, a...); err != nil {
		fail(2, "%s: %v", who, err)
	}
	ans, err := c.line()
	if err != nil {
		fail(2, "%s: %v", who, err)
	}
	fmt.Printf("%s: %s -> %s\n", who, fmt.Sprintf(format, a...), ans)
	return ans
}

func writer(storeAddr string, n int, readerAddr string) {
	s := newConn(dial(storeAddr))
	// Backwards: the reader goes forwards, so that the two meet at about
	// one key (and natively the race is as rare as one meeting makes it).
	for i := n; i >= 1; i-- {
		if ans := ask(s, "writer", "PUT k%d new", i); !strings.HasPrefix(ans, "OK ") {
			fail(2, "writer: unexpected %q", ans)
		}
	}
	r := dial(readerAddr)
	fmt.Fprintf(r, "DONE\n")
	r.Close()
}

func reader(cacheAddr string, n int, port string) {
	l := listen(port)
	c := newConn(dial(cacheAddr))
	for i := 1; i <= n; i++ {
		ask(c, "reader", "GET k%d", i) // old or new: the writer is at work
	}
	w, err := l.Accept()
	if err != nil {
		fail(2, "reader: accept: %v", err)
	}
	if m, _ := newConn(w).line(); m != "DONE" {
		fail(2, "reader: unexpected %q from the writer", m)
	}
	// Every write is acknowledged, so every invalidation is applied: the
	// cache may miss, but what it answers must be the new value.
	for i := 1; i <= n; i++ {
		if ans := ask(c, "reader", "GET k%d", i); ans != "VAL new" {
			fail(1, "reader: stale cache: k%d is new in the store, the cache answers %s", i, ans)
		}
	}
	fmt.Println("reader: every key is new")
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
	case len(a) == 3 && a[0] == "store":
		s := &store{vals: map[string]entry{}}
		for i := 1; i <= num(a[2]); i++ {
			s.rev++
			s.vals[fmt.Sprintf("k%d", i)] = entry{"old", s.rev}
		}
		fmt.Printf("store: listening on %s\n", a[1])
		serve(listen(a[1]), s.handle)
	case (len(a) == 3 || len(a) == 4 && a[3] == "--fixed") && a[0] == "cache":
		runCache(a[1], a[2], len(a) == 4)
	case len(a) == 4 && a[0] == "writer":
		writer(a[1], num(a[2]), a[3])
	case len(a) == 4 && a[0] == "reader":
		reader(a[1], num(a[2]), a[3])
	default:
		fail(2, "usage: cache1 store PORT N | cache1 cache PORT STORE [--fixed] | cache1 writer STORE N READER | cache1 reader CACHE N PORT")
	}
}
