// locks-2: a probe-then-register atomicity violation loses a release
// notification, and the waiter hangs.
//
//	locks2 server PORT [--fixed]   the lock server
//	locks2 holder SERVER PORT      takes the lock, releases it when told
//	locks2 waiter SERVER HOLDER    probes, registers for a notification
//
// The waiter probes lock x (BUSY: the holder has it), registers to be
// notified on release, and then tells the holder READY; the holder
// releases. The server decided "busy" at PROBE and trusts it at REGISTER.
// If REGISTER is delayed past READY and the holder's RELEASE, the server
// frees x with no waiter registered, then registers the waiter on a free
// lock: no NOTIFY ever comes. --fixed: REGISTER on a free lock notifies at
// once.
package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"
)

func dial(addr string) net.Conn {
	for i := 0; i < 500; i++ {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			return c
		}
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Fprintf(os.Stderr, "cannot connect to %s\n", addr)
	os.Exit(2)
	return nil
}

func listen(port string) net.Listener {
	l, err := net.Listen("tcp", ":"+port)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	return l
}

// peer is one connection with line reads and writes.
type peer struct {
	c net.Conn
	r *bufio.Reader
}

func newPeer(c net.Conn) *peer { return &peer{c: c, r: bufio.NewReader(c)} }

func (p *peer) send(line string) {
	if _, err := fmt.Fprintf(p.c, "%s\n", line); err != nil {
		fmt.Fprintln(os.Stderr, "write:", err)
		os.Exit(2)
	}
}

func (p *peer) recv(who string) string {
	s, err := p.r.ReadString('\n')
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: connection closed: %v\n", who, err)
		os.Exit(1)
	}
	s = strings.TrimSpace(s)
	fmt.Printf("%s: got %s\n", who, s)
	return s
}

// server state: one lock with an owner and registered waiters.
type server struct {
	mu      sync.Mutex
	fixed   bool
	owner   *peer
	waiters []*peer
}

func (s *server) handle(p *peer) {
	for {
		line, err := p.r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimSpace(line)
		fmt.Printf("server: %s\n", line)
		s.mu.Lock()
		switch line {
		case "ACQUIRE x":
			if s.owner == nil {
				s.owner = p
				p.send("GRANTED x")
			} else {
				p.send("BUSY x")
			}
		case "PROBE x":
			if s.owner == nil {
				p.send("FREE x")
			} else {
				p.send("BUSY x")
			}
		case "REGISTER x":
			if s.fixed && s.owner == nil {
				p.send("NOTIFY x")
			} else {
				// trusts the earlier PROBE: x is still busy
				s.waiters = append(s.waiters, p)
			}
		case "STATUS x":
			if s.owner == p {
				p.send("OWNER holder")
			} else {
				p.send("OWNER other")
			}
		case "RELEASE x":
			s.owner = nil
			for _, w := range s.waiters {
				w.send("NOTIFY x")
			}
			s.waiters = nil
			p.send("RELEASED x")
		}
		s.mu.Unlock()
	}
}

func main() {
	a := os.Args[1:]
	switch {
	case len(a) >= 2 && a[0] == "server":
		s := &server{fixed: len(a) == 3 && a[2] == "--fixed"}
		l := listen(a[1])
		for {
			c, err := l.Accept()
			if err != nil {
				os.Exit(2)
			}
			go s.handle(newPeer(c))
		}
	case len(a) == 3 && a[0] == "holder":
		srv := newPeer(dial(a[1]))
		srv.send("ACQUIRE x")
		if srv.recv("holder") != "GRANTED x" {
			os.Exit(1)
		}
		l := listen(a[2])
		c, err := l.Accept()
		if err != nil {
			os.Exit(2)
		}
		w := newPeer(c)
		if w.recv("holder") != "READY" {
			os.Exit(1)
		}
		// Check it still owns x before releasing (a round trip the server
		// answers after it has long read the waiter's REGISTER).
		srv.send("STATUS x")
		if srv.recv("holder") != "OWNER holder" {
			os.Exit(1)
		}
		srv.send("RELEASE x")
		for srv.recv("holder") != "RELEASED x" {
		}
		fmt.Println("holder: done")
	case len(a) == 3 && a[0] == "waiter":
		h := newPeer(dial(a[2]))
		srv := newPeer(dial(a[1]))
		for {
			srv.send("PROBE x")
			if srv.recv("waiter") == "BUSY x" {
				break
			}
			time.Sleep(10 * time.Millisecond) // the holder has not taken it yet
		}
		srv.send("REGISTER x")
		h.send("READY")
		for srv.recv("waiter") != "NOTIFY x" {
		}
		srv.send("ACQUIRE x")
		if srv.recv("waiter") != "GRANTED x" {
			os.Exit(1)
		}
		fmt.Println("waiter: done")
	default:
		fmt.Fprintln(os.Stderr, "usage: locks2 server PORT [--fixed] | locks2 holder SERVER PORT | locks2 waiter SERVER HOLDER")
		os.Exit(2)
	}
}
