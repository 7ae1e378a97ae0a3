// retry-1: a producer retries a request whose answer was only slow, and the
// broker appends the record twice.
//
//	retry1 broker PORT
//	retry1 producer BROKER [--idempotent]
//
// The broker keeps an append-only log. The producer appends m1, then m2, each
// with PRODUCE and a 200 ms reply deadline; on a timeout it closes the
// connection and sends the same record again on a new one, as a Kafka
// producer does after request.timeout.ms. Finally it reads the log and
// expects exactly "m1 m2". If a PRODUCE or its OK is late by more than the
// deadline, the first attempt was (or will be) applied as well as the retry
// and the log holds the record twice: the producer exits 1.
//
// --idempotent (the fix, Kafka's enable.idempotence): every PRODUCE carries
// the producer's id and a sequence number that a retry keeps; the broker
// appends each (id, sequence) once and answers a duplicate with the offset
// of the first append, whenever and in whatever order the copies arrive.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	// requestTimeout bounds the wait for each answer. It is virtual time
	// under lockstep and far above a loopback round trip natively.
	requestTimeout = 200 * time.Millisecond
	// maxAttempts bounds the retries of one request. lockstep's default
	// delay budget (2) can make at most two attempts time out.
	maxAttempts = 5
	// producerID names the producer in idempotent requests; one producer
	// per run, as one Kafka producer instance gets one id from the broker.
	producerID = "p1"
)

func fail(code int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(code)
}

// dial retries while the broker is not listening yet.
func dial(addr string) net.Conn {
	for i := 0; i < 500; i++ {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			return c
		}
		time.Sleep(10 * time.Millisecond)
	}
	fail(2, "cannot connect to %s", addr)
	return nil
}

func send(c net.Conn, who, line string) error {
	fmt.Printf("%s: -> %s\n", who, line)
	_, err := fmt.Fprintf(c, "%s\n", line)
	return err
}

// broker is the log. A goroutine per connection; the mutex makes each
// request atomic.
type broker struct {
	mu      sync.Mutex
	records []string
	// applied maps a producer's (id, sequence) to the offset it was
	// appended at: idempotent requests are appended once.
	applied map[string]int
}

// handle answers one request line.
func (b *broker) handle(line string) string {
	f := strings.Fields(line)
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case len(f) == 2 && f[0] == "PRODUCE":
		b.records = append(b.records, f[1])
		return fmt.Sprintf("OK %d", len(b.records)-1)
	case len(f) == 4 && f[0] == "PRODUCE":
		key := f[2] + "/" + f[3]
		if off, ok := b.applied[key]; ok {
			return fmt.Sprintf("OK %d", off) // a retry or a late first copy
		}
		b.records = append(b.records, f[1])
		b.applied[key] = len(b.records) - 1
		return fmt.Sprintf("OK %d", len(b.records)-1)
	case len(f) == 1 && f[0] == "READ":
		return strings.TrimSpace("LOG " + strings.Join(b.records, " "))
	}
	return "ERR " + line
}

func (b *broker) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		s, err := r.ReadString('\n')
		if err != nil {
			return // the producer gave up on this connection
		}
		s = strings.TrimSpace(s)
		fmt.Printf("broker: <- %s\n", s)
		if send(c, "broker", b.handle(s)) != nil {
			return
		}
	}
}

func runBroker(port string) {
	l, err := net.Listen("tcp", ":"+port)
	if err != nil {
		fail(2, "broker: %v", err)
	}
	b := &broker{applied: map[string]int{}}
	for {
		c, err := l.Accept()
		if err != nil {
			fail(2, "broker: accept: %v", err)
		}
		go b.serve(c)
	}
}

// producer sends one request at a time and retries it on a new connection
// when its answer does not come within requestTimeout.
type producer struct {
	addr       string
	idempotent bool
	seq        int
	conn       net.Conn
	r          *bufio.Reader
}

func (p *producer) drop() {
	p.conn.Close()
	p.conn, p.r = nil, nil
}

// request returns the answer to line, sending it again after a timeout or a
// broken connection.
func (p *producer) request(line string) string {
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		if p.conn == nil {
			p.conn = dial(p.addr)
			p.r = bufio.NewReader(p.conn)
		}
		if err := send(p.conn, "producer", line); err != nil {
			fmt.Printf("producer: write: %v, retrying\n", err)
			p.drop()
			continue
		}
		p.conn.SetReadDeadline(time.Now().Add(requestTimeout))
		s, err := p.r.ReadString('\n')
		if err == nil {
			s = strings.TrimSpace(s)
			fmt.Printf("producer: <- %s\n", s)
			return s
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			fmt.Printf("producer: no answer to %q within %v (attempt %d), retrying on a new connection\n", line, requestTimeout, attempt)
		} else {
			fmt.Printf("producer: read: %v (attempt %d), retrying on a new connection\n", err, attempt)
		}
		p.drop()
	}
	fail(2, "producer: no answer to %q after %d attempts", line, maxAttempts)
	return ""
}

func (p *producer) produce(record string) {
	line := "PRODUCE " + record
	if p.idempotent {
		p.seq++
		line += fmt.Sprintf(" %s %d", producerID, p.seq)
	}
	if s := p.request(line); !strings.HasPrefix(s, "OK ") {
		fail(2, "producer: %q answered %q", line, s)
	}
}

func runProducer(addr string, idempotent bool) {
	p := &producer{addr: addr, idempotent: idempotent}
	want := []string{"m1", "m2"}
	for _, m := range want {
		p.produce(m)
	}
	got := p.request("READ")
	if got != "LOG "+strings.Join(want, " ") {
		fail(1, "producer: log is %q, want each record once: %q", strings.TrimPrefix(got, "LOG "), strings.Join(want, " "))
	}
	fmt.Println("producer: each record appended once")
}

func main() {
	a := os.Args[1:]
	switch {
	case len(a) == 2 && a[0] == "broker":
		if _, err := strconv.Atoi(a[1]); err != nil {
			fail(2, "broker: port %q: %v", a[1], err)
		}
		runBroker(a[1])
	case len(a) == 2 && a[0] == "producer":
		runProducer(a[1], false)
	case len(a) == 3 && a[0] == "producer" && a[2] == "--idempotent":
		runProducer(a[1], true)
	default:
		fail(2, "usage: retry1 broker PORT | retry1 producer BROKER [--idempotent]")
	}
}
