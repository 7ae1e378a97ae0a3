// kvserver is a small key-value store speaking a subset of Redis' RESP
// (GET, SET, PING), with primary-to-replica replication, for checking
// kvclient's histories under lockstep without Redis itself.
//
//	kvserver -listen :6379 -replicas replica1:6379    # a primary
//	kvserver -listen :6379                            # a replica (or a lone server)
//
// A primary applies a SET, forwards it to every replica (an internal REPL
// command on one connection per replica) and answers OK. By default it
// answers before the replicas have applied it (asynchronous replication,
// as Redis does): a client that reads from a replica can then miss its own
// acknowledged write, a stale read the linearizability checker reports.
// With -sync the primary answers only after every replica acknowledged,
// and reads from one replica are linearizable.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	listen := flag.String("listen", ":6379", "address to serve RESP on")
	replicas := flag.String("replicas", "", "comma-separated host:port of replicas (makes this a primary)")
	syncRepl := flag.Bool("sync", false, "answer a SET only after every replica applied it")
	flag.Parse()
	log.SetFlags(0)
	s := &server{data: map[string]string{}, sync: *syncRepl}
	if *replicas != "" {
		for _, addr := range strings.Split(*replicas, ",") {
			r := &replica{addr: addr, queue: make(chan repl, 1024)}
			s.replicas = append(s.replicas, r)
			go r.run()
		}
	}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("kvserver: serving on %s (%d replicas, sync %v)", *listen, len(s.replicas), *syncRepl)
	for {
		c, err := l.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go s.serve(c)
	}
}

type server struct {
	mu       sync.Mutex
	data     map[string]string
	replicas []*replica
	sync     bool
}

func (s *server) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	w := bufio.NewWriter(c)
	for {
		args, err := readCommand(r)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				log.Printf("kvserver: %v", err)
			}
			return
		}
		w.WriteString(s.do(args))
		if err := w.Flush(); err != nil {
			return
		}
	}
}

func (s *server) do(args []string) string {
	switch strings.ToUpper(args[0]) {
	case "PING":
		return "+PONG\r\n"
	case "GET":
		if len(args) != 2 {
			return "-ERR wrong number of arguments for 'get'\r\n"
		}
		s.mu.Lock()
		v, ok := s.data[args[1]]
		s.mu.Unlock()
		if !ok {
			return "$-1\r\n"
		}
		return "$" + strconv.Itoa(len(v)) + "\r\n" + v + "\r\n"
	case "SET", "REPL":
		if len(args) != 3 {
			return "-ERR wrong number of arguments for 'set'\r\n"
		}
		s.set(args[1], args[2], strings.ToUpper(args[0]) == "SET")
		return "+OK\r\n"
	}
	return "-ERR unknown command '" + args[0] + "'\r\n"
}

// set applies a write and, for a client's SET on a primary, forwards it.
// Holding mu while queueing keeps the replicas' order the primary's.
func (s *server) set(key, val string, forward bool) {
	s.mu.Lock()
	s.data[key] = val
	var acks []chan struct{}
	if forward {
		for _, r := range s.replicas {
			m := repl{key: key, val: val}
			if s.sync {
				m.done = make(chan struct{})
				acks = append(acks, m.done)
			}
			r.queue <- m
		}
	}
	s.mu.Unlock()
	for _, a := range acks {
		<-a
	}
}

// repl is one write on its way to a replica; done is closed once the
// replica acknowledged it (sync mode).
type repl struct {
	key, val string
	done     chan struct{}
}

// replica owns the primary's connection to one replica.
type replica struct {
	addr  string
	queue chan repl
}

func (r *replica) run() {
	var conn net.Conn
	var rd *bufio.Reader
	for m := range r.queue {
		for {
			if conn == nil {
				c, err := net.Dial("tcp", r.addr)
				if err != nil {
					time.Sleep(50 * time.Millisecond)
					continue
				}
				conn, rd = c, bufio.NewReader(c)
			}
			cmd := fmt.Sprintf("*3\r\n$4\r\nREPL\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(m.key), m.key, len(m.val), m.val)
			if _, err := io.WriteString(conn, cmd); err == nil {
				if line, err := rd.ReadString('\n'); err == nil && line == "+OK\r\n" {
					break
				}
			}
			// Resend on a new connection: REPL is idempotent in order.
			conn.Close()
			conn = nil
		}
		if m.done != nil {
			close(m.done)
		}
	}
}

// readCommand reads one RESP array of bulk strings.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(line, "*") {
		return nil, fmt.Errorf("expected an array, got %q", line)
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil || n < 1 || n > 16 {
		return nil, fmt.Errorf("bad array header %q", line)
	}
	args := make([]string, n)
	for i := range args {
		if line, err = r.ReadString('\n'); err != nil {
			return nil, err
		}
		if !strings.HasPrefix(line, "$") {
			return nil, fmt.Errorf("expected a bulk string, got %q", line)
		}
		l, err := strconv.Atoi(strings.TrimSpace(line[1:]))
		if err != nil || l < 0 || l > 1<<20 {
			return nil, fmt.Errorf("bad bulk header %q", line)
		}
		buf := make([]byte, l+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		args[i] = string(buf[:l])
	}
	return args, nil
}
