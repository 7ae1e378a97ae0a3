// locks-2: a probe-then-register atomicity violation loses a release
// notification, and the waiter hangs.
//
//	locks2 server PORT [--fixed]   the lock server
//	locks2 holder SERVER PORT      takes x, releases it when the waiter says READY
//	locks2 waiter SERVER HOLDER    probes x, registers for a release notification
//
// The waiter probes lock x (BUSY: the holder has it), sends REGISTER x to
// the server (notify me on release), then READY to the holder, which
// releases x. The server decided "busy" at PROBE and trusts it at REGISTER.
// If REGISTER is delayed past READY and the holder's RELEASE, the server
// frees x with nobody registered, then registers the waiter on a free lock:
// NOTIFY never comes. --fixed: REGISTER on a free lock notifies at once.
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

// listen binds 0.0.0.0:port (Go sets SO_REUSEADDR on Linux listeners).
func listen(port string) net.Listener {
	l, err := net.Listen("tcp4", "0.0.0.0:"+port)
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

func (p *peer) send(who, line string) {
	fmt.Printf("%s: send %s\n", who, line)
	if _, err := fmt.Fprintf(p.c, "%s\n", line); err != nil {
		fmt.Fprintln(os.Stderr, who, "write:", err)
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

// server state: one lock x with an owner, a queue of ACQUIREs, and the
// waiters registered for a release notification.
type server struct {
	mu      sync.Mutex
	fixed   bool
	owner   *peer
	queue   []*peer
	waiters []*peer
}

func (s *server) handle(p *peer) {
	for {
		line, err := p.r.ReadString('\n')
		if err != nil {
			return // a client left; the server stays up
		}
		line = strings.TrimSpace(line)
		fmt.Printf("server: got %s\n", line)
		s.mu.Lock()
		switch line {
		case "ACQUIRE x":
			if s.owner == nil {
				s.owner = p
				p.send("server", "GRANTED x")
			} else {
				s.queue = append(s.queue, p)
			}
		case "PROBE x":
			if s.owner == nil {
				p.send("server", "FREE x")
			} else {
				p.send("server", "BUSY x")
			}
		case "REGISTER x":
			if s.fixed && s.owner == nil {
				p.send("server", "NOTIFY x") // released since the probe
			} else {
				// BUG: trusts the earlier PROBE that x is still busy.
				s.waiters = append(s.waiters, p)
			}
		case "RELEASE x":
			if s.owner == p {
				for _, w := range s.waiters {
					w.send("server", "NOTIFY x")
				}
				s.waiters = nil
				s.owner = nil
				if len(s.queue) > 0 {
					s.owner, s.queue = s.queue[0], s.queue[1:]
					s.owner.send("server", "GRANTED x")
				}
			}
			p.send("server", "RELEASED x")
		default:
			p.send("server", "ERROR "+line)
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
		fmt.Printf("server: listening on %s fixed=%v\n", a[1], s.fixed)
		for {
			c, err := l.Accept()
			if err != nil {
				fmt.Fprintln(os.Stderr, "accept:", err)
				os.Exit(2)
			}
			go s.handle(newPeer(c))
		}
	case len(a) == 3 && a[0] == "holder":
		srv := newPeer(dial(a[1]))
		srv.send("holder", "ACQUIRE x")
		if srv.recv("holder") != "GRANTED x" {
			os.Exit(1)
		}
		l := listen(a[2])
		c, err := l.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, "accept:", err)
			os.Exit(2)
		}
		w := newPeer(c)
		if w.recv("holder") != "READY" {
			os.Exit(1)
		}
		srv.send("holder", "RELEASE x")
		if srv.recv("holder") != "RELEASED x" {
			os.Exit(1)
		}
		fmt.Println("holder: done")
	case len(a) == 3 && a[0] == "waiter":
		h := newPeer(dial(a[2]))
		srv := newPeer(dial(a[1]))
		for {
			srv.send("waiter", "PROBE x")
			if srv.recv("waiter") == "BUSY x" {
				break
			}
			time.Sleep(10 * time.Millisecond) // the holder has not taken x yet
		}
		srv.send("waiter", "REGISTER x")
		h.send("waiter", "READY")
		if srv.recv("waiter") != "NOTIFY x" {
			os.Exit(1)
		}
		srv.send("waiter", "ACQUIRE x")
		if srv.recv("waiter") != "GRANTED x" {
			os.Exit(1)
		}
		fmt.Println("waiter: done")
	default:
		fmt.Fprintln(os.Stderr, "usage: locks2 server PORT [--fixed] | locks2 holder SERVER PORT | locks2 waiter SERVER HOLDER")
		os.Exit(2)
	}
}
