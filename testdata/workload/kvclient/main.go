// kvclient is a key-value workload for linearizability checking: N
// concurrent clients do random gets and puts on a few keys against a store
// (Redis over RESP, or etcd's v3 JSON gateway) and write what they saw as a
// history in lockstep's JSON-lines format (docs/history.md), to be checked
// with the kv model (`checker: {model: kv}`).
//
//	kvclient -proto resp -addr server1:6379 -clients 3 -ops 20 -keys 2 -history {{tmp}}/history.jsonl
//	kvclient -proto etcd -addr etcd1:2379 ...
//	kvclient -addr primary:6379 -read-addr replica:6379 ...   # reads from a replica
//	kvclient -sentinel r1:26379 -master mymaster ...           # the primary Sentinel names
//
// With -sentinel, every connection goes to the primary the Sentinel names at
// that moment, and a client whose write is refused (a demoted primary says
// READONLY) or whose connection broke asks again, as Sentinel-aware clients
// do. -gap spaces a client's operations in time, and -final-at makes each
// client read every key once more at that time since it started (after a
// fault's quiet period, say), which is when lost writes show.
//
// Every put writes a distinct value (name-client-seq), so a read names the
// write it saw. With -clock FILE, times are readings of a counter shared by
// every client that names FILE (see sharedCounter), not nanoseconds.
// An operation whose reply was not seen (a timeout, a broken connection) is
// written with no return time (outcome unknown); the client then goes on
// on a fresh connection as a new process, since the old one may still be
// in flight. A store's error reply to a put means it was not applied
// ("status":"fail"). The exit status is 0 unless the store could not be
// reached at all or the history could not be written.
package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// op is one line of the history (docs/history.md).
type op struct {
	Process int             `json:"process"`
	Name    string          `json:"op"`
	Key     string          `json:"key"`
	Input   json.RawMessage `json:"input,omitempty"`
	Output  json.RawMessage `json:"output,omitempty"`
	Call    int64           `json:"call"`
	Return  *int64          `json:"return,omitempty"`
	Status  string          `json:"status,omitempty"`
}

// store is one connection to the store under test.
type store interface {
	// get returns the key's value, or ok false if it has none.
	get(key string) (val string, ok bool, err error)
	put(key, val string) error
	close()
}

// rejected is a store's definite refusal: the operation was not applied.
type rejected struct{ msg string }

func (e *rejected) Error() string { return "rejected: " + e.msg }

type config struct {
	proto, addr, readAddr, history, clock, name string
	sentinel, master                            string
	clients, ops, keys                          int
	seed                                        int64
	timeout, wait, gap, finalAt                 time.Duration
}

func main() {
	var c config
	flag.StringVar(&c.proto, "proto", "resp", "resp (Redis) or etcd (v3 JSON gateway)")
	flag.StringVar(&c.addr, "addr", "127.0.0.1:6379", "the store's host:port")
	flag.StringVar(&c.readAddr, "read-addr", "", "send gets here instead (a replica); default -addr")
	flag.StringVar(&c.name, "name", "", "this client's name, prefixed to every value it writes and mixed into the seed (default: its pid)")
	flag.StringVar(&c.history, "history", "history.jsonl", "where to write the history")
	flag.IntVar(&c.clients, "clients", 3, "concurrent clients")
	flag.IntVar(&c.ops, "ops", 20, "operations per client")
	flag.IntVar(&c.keys, "keys", 2, "keys k0..k(N-1)")
	flag.Int64Var(&c.seed, "seed", 1, "seed of the operation mix")
	flag.DurationVar(&c.timeout, "timeout", 2*time.Second, "per operation; past it the outcome is unknown")
	flag.StringVar(&c.clock, "clock", "", "order events by a counter shared through this file (every client of a run names the same one) instead of the clock")
	flag.DurationVar(&c.wait, "wait", 10*time.Second, "how long to retry a connection")
	flag.StringVar(&c.sentinel, "sentinel", "", "a Redis Sentinel's host:port: connect to the primary it names (then -addr is unused)")
	flag.StringVar(&c.master, "master", "mymaster", "the primary's name at the Sentinel")
	flag.DurationVar(&c.gap, "gap", 0, "pause between a client's operations")
	flag.DurationVar(&c.finalAt, "final-at", 0, "read every key once more this long after the start (0: no final reads)")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "kvclient:", err)
		os.Exit(1)
	}
}

func run(c config) error {
	if c.clients < 1 || c.ops < 0 || c.keys < 1 {
		return errors.New("need -clients >= 1, -ops >= 0, -keys >= 1")
	}
	if c.name == "" {
		c.name = strconv.Itoa(os.Getpid())
	}
	c.name += "-"
	dial, err := dialer(c)
	if err != nil {
		return err
	}
	start := time.Now()
	now := func() int64 { return time.Now().UnixNano() }
	if c.clock != "" {
		if now, err = sharedCounter(c.clock); err != nil {
			return fmt.Errorf("opening the shared clock: %w", err)
		}
	}
	f, err := os.Create(c.history)
	if err != nil {
		return err
	}
	h := &history{w: bufio.NewWriter(f)}
	var wg sync.WaitGroup
	errs := make([]error, c.clients)
	for i := 0; i < c.clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = client(c, i, dial, now, h, start)
		}()
	}
	wg.Wait()
	if err := h.flush(); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", c.history, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	return errors.Join(errs...)
}

// history serializes the clients' lines.
type history struct {
	mu  sync.Mutex
	w   *bufio.Writer
	err error
}

func (h *history) add(o op) {
	b, err := json.Marshal(o)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil {
		_, err = h.w.Write(append(b, '\n'))
	}
	if h.err == nil {
		h.err = err
	}
}

func (h *history) flush() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil {
		return h.err
	}
	return h.w.Flush()
}

func dialer(c config) (func() (store, error), error) {
	var dial func(addr string) (store, error)
	switch c.proto {
	case "resp":
		dial = func(addr string) (store, error) { return dialRESP(addr, c.timeout) }
		if c.sentinel != "" {
			return func() (store, error) {
				addr, err := askSentinel(c.sentinel, c.master, c.timeout)
				if err != nil {
					return nil, err
				}
				return dial(addr)
			}, nil
		}
	case "etcd":
		dial = func(addr string) (store, error) { return newEtcd(addr, c.timeout), nil }
	default:
		return nil, fmt.Errorf("unknown -proto %q (want resp or etcd)", c.proto)
	}
	if c.readAddr == "" || c.readAddr == c.addr {
		return func() (store, error) { return dial(c.addr) }, nil
	}
	return func() (store, error) {
		w, err := dial(c.addr)
		if err != nil {
			return nil, err
		}
		r, err := dial(c.readAddr)
		if err != nil {
			w.close()
			return nil, err
		}
		return split{r: r, w: w}, nil
	}, nil
}

// split reads from one store (a replica) and writes to another.
type split struct{ r, w store }

func (s split) get(key string) (string, bool, error) { return s.r.get(key) }
func (s split) put(key, val string) error            { return s.w.put(key, val) }
func (s split) close()                               { s.r.close(); s.w.close() }

// client runs one client's operations, then its final reads. Process
// numbers are i, then i+clients, i+2*clients, ... after each unknown outcome.
func client(c config, i int, dial func() (store, error), now func() int64, h *history, start time.Time) error {
	seed := fnv.New64a()
	fmt.Fprintf(seed, "%d/%s/%d", c.seed, c.name, i)
	rng := rand.New(rand.NewSource(int64(seed.Sum64())))
	proc := i
	s, err := connect(dial, c.wait)
	if err != nil {
		return fmt.Errorf("client %d: %w", i, err)
	}
	defer func() { s.close() }()
	// do runs one operation and records it; after an unknown outcome the
	// client goes on as a new process on a new connection, since the old
	// request may still be in flight.
	do := func(key string, get bool, val string) error {
		o := op{Process: proc, Key: key}
		var err error
		if get {
			o.Name = "get"
			o.Call = now()
			var val string
			var ok bool
			val, ok, err = s.get(key)
			if err == nil {
				o.Output = []byte("null")
				if ok {
					o.Output = quote(val)
				}
			}
		} else {
			o.Name = "put"
			o.Input = quote(val)
			o.Call = now()
			err = s.put(key, val)
		}
		ret := now()
		var rej *rejected
		switch {
		case err == nil:
			o.Return = &ret
		case errors.As(err, &rej):
			o.Return, o.Status = &ret, "fail"
		default:
			o.Status = "unknown"
		}
		h.add(o)
		switch {
		case err == nil:
			return nil
		case errors.As(err, &rej):
			if c.sentinel == "" {
				return nil
			}
			// A demoted primary refuses writes: ask the Sentinel again.
		default:
			proc += c.clients
		}
		s.close()
		if s, err = connect(dial, c.wait); err != nil {
			return fmt.Errorf("client %d: %w", i, err)
		}
		return nil
	}
	for n := 0; n < c.ops; n++ {
		if n > 0 && c.gap > 0 {
			time.Sleep(c.gap)
		}
		key := "k" + strconv.Itoa(rng.Intn(c.keys))
		get := rng.Intn(2) == 0
		if err := do(key, get, fmt.Sprintf("%s%d-%d", c.name, i, n)); err != nil {
			return err
		}
	}
	if c.finalAt <= 0 {
		return nil
	}
	time.Sleep(time.Until(start.Add(c.finalAt)))
	for k := 0; k < c.keys; k++ {
		if err := do("k"+strconv.Itoa(k), true, ""); err != nil {
			return err
		}
	}
	return nil
}

// askSentinel asks a Redis Sentinel where the primary named master is.
func askSentinel(addr, master string, timeout time.Duration) (string, error) {
	r, err := dialRESP(addr, timeout)
	if err != nil {
		return "", err
	}
	defer r.close()
	reply, err := r.array("SENTINEL", "get-master-addr-by-name", master)
	if err != nil {
		return "", fmt.Errorf("asking the Sentinel at %s: %w", addr, err)
	}
	if len(reply) != 2 {
		return "", fmt.Errorf("the Sentinel at %s knows no primary %q", addr, master)
	}
	return net.JoinHostPort(reply[0], reply[1]), nil
}

// sharedCounter returns a clock whose readings are a counter in a file
// that every client process maps: each reading is distinct, and readings
// are ordered as they were taken, across processes. Under lockstep the
// virtual clock does not move while operations run, so its readings tie;
// this counter orders the events exactly, and since it is read just
// before a request is sent and just after its reply arrived, an operation
// whose return reading is below another's call reading really finished
// before the other began.
func sharedCounter(path string) (func() int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	const size = 8
	// Growing to 8 bytes is harmless if another client already did.
	if st, err := f.Stat(); err != nil {
		return nil, err
	} else if st.Size() < size {
		if err := f.Truncate(size); err != nil {
			return nil, err
		}
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	ctr := (*atomic.Int64)(unsafe.Pointer(&mem[0]))
	return func() int64 { return ctr.Add(1) }, nil
}

func quote(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// connect retries until the store answers or wait passes: under lockstep
// the servers may start after the clients.
func connect(dial func() (store, error), wait time.Duration) (store, error) {
	deadline := time.Now().Add(wait)
	delay := 10 * time.Millisecond
	for {
		s, err := dial()
		if err == nil {
			return s, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("connecting: %w", err)
		}
		time.Sleep(delay)
		delay = min(2*delay, 500*time.Millisecond)
	}
}

// resp speaks Redis' RESP2 on one connection.
type resp struct {
	conn    net.Conn
	r       *bufio.Reader
	timeout time.Duration
}

func dialRESP(addr string, timeout time.Duration) (*resp, error) {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	return &resp{conn: conn, r: bufio.NewReader(conn), timeout: timeout}, nil
}

func (r *resp) close() { r.conn.Close() }

// do sends a command and reads one reply: a simple string, an error, an
// integer, or a bulk string (nil as ok false).
func (r *resp) do(args ...string) (reply string, ok bool, err error) {
	if err := r.send(args); err != nil {
		return "", false, err
	}
	return r.reply()
}

func (r *resp) send(args []string) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if err := r.conn.SetDeadline(time.Now().Add(r.timeout)); err != nil {
		return err
	}
	_, err := r.conn.Write(b.Bytes())
	return err
}

// reply reads one reply that is not an array.
func (r *resp) reply() (reply string, ok bool, err error) {
	line, err := r.line()
	if err != nil {
		return "", false, err
	}
	switch line[0] {
	case '+', ':':
		return line[1:], true, nil
	case '-':
		return "", false, &rejected{msg: line[1:]}
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < -1 {
			return "", false, fmt.Errorf("bad bulk length %q", line)
		}
		if n == -1 {
			return "", false, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r.r, buf); err != nil {
			return "", false, err
		}
		if string(buf[n:]) != "\r\n" {
			return "", false, errors.New("bulk string not ended by CRLF")
		}
		return string(buf[:n]), true, nil
	}
	return "", false, fmt.Errorf("unexpected reply %q", line)
}

// array sends a command whose reply is an array of bulk strings.
func (r *resp) array(args ...string) ([]string, error) {
	if err := r.send(args); err != nil {
		return nil, err
	}
	line, err := r.line()
	if err != nil {
		return nil, err
	}
	if line[0] == '-' {
		return nil, &rejected{msg: line[1:]}
	}
	if line[0] != '*' {
		return nil, fmt.Errorf("expected an array, got %q", line)
	}
	n, err := strconv.Atoi(line[1:])
	if err != nil {
		return nil, fmt.Errorf("bad array length %q", line)
	}
	var out []string
	for ; n > 0; n-- {
		v, ok, err := r.reply()
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, v)
		}
	}
	return out, nil
}

func (r *resp) line() (string, error) {
	s, err := r.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	s = strings.TrimSuffix(s, "\r\n")
	if s == "" {
		return "", errors.New("empty reply line")
	}
	return s, nil
}

func (r *resp) get(key string) (string, bool, error) { return r.do("GET", key) }

func (r *resp) put(key, val string) error {
	reply, _, err := r.do("SET", key, val)
	if err == nil && reply != "OK" {
		return fmt.Errorf("SET answered %q", reply)
	}
	return err
}

// etcd speaks etcd's v3 JSON gateway (keys and values base64) over one
// keep-alive HTTP connection.
type etcd struct {
	base string
	c    *http.Client
}

func newEtcd(addr string, timeout time.Duration) *etcd {
	// A transport per client keeps the clients' connections apart.
	tr := &http.Transport{MaxIdleConns: 1, MaxConnsPerHost: 1, DisableCompression: true}
	return &etcd{base: "http://" + addr + "/v3/kv/", c: &http.Client{Transport: tr, Timeout: timeout}}
}

func (e *etcd) close() { e.c.CloseIdleConnections() }

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func (e *etcd) call(path string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	r, err := e.c.Post(e.base+path, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer r.Body.Close()
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	if r.StatusCode != http.StatusOK {
		// The gateway's errors (a lost leader, a timeout inside the
		// cluster) do not say whether a put was applied.
		return fmt.Errorf("%s: %s: %s", path, r.Status, bytes.TrimSpace(data))
	}
	return json.Unmarshal(data, resp)
}

func (e *etcd) get(key string) (string, bool, error) {
	var out struct {
		Kvs []struct {
			Value string `json:"value"`
		} `json:"kvs"`
	}
	if err := e.call("range", map[string]string{"key": b64(key)}, &out); err != nil {
		return "", false, err
	}
	if len(out.Kvs) == 0 {
		return "", false, nil
	}
	v, err := base64.StdEncoding.DecodeString(out.Kvs[0].Value)
	if err != nil {
		return "", false, fmt.Errorf("range: value: %w", err)
	}
	return string(v), true, nil
}

func (e *etcd) put(key, val string) error {
	var out struct{}
	return e.call("put", map[string]string{"key": b64(key), "value": b64(val)}, &out)
}
