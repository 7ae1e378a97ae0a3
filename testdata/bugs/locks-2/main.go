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
	"bytes"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
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

// The server is a single epoll loop on raw sockets: it handles the lines of
// each connection in the order the kernel made them readable, so the only
// way it sees RELEASE before REGISTER is that RELEASE arrived first.

// server state: one lock x with an owner, a queue of ACQUIREs, and the
// waiters registered for a release notification (all connection fds).
type server struct {
	fixed   bool
	owner   int // fd, -1 when x is free
	queue   []int
	waiters []int
	bufs    map[int][]byte
}

func ssend(fd int, line string) {
	fmt.Printf("server: send %s (fd %d)\n", line, fd)
	if _, err := syscall.Write(fd, []byte(line+"\n")); err != nil {
		fmt.Fprintln(os.Stderr, "server: write:", err)
	}
}

func (s *server) handle(fd int, line string) {
	fmt.Printf("server: got %s (fd %d)\n", line, fd)
	switch line {
	case "ACQUIRE x":
		if s.owner < 0 {
			s.owner = fd
			ssend(fd, "GRANTED x")
		} else {
			s.queue = append(s.queue, fd)
		}
	case "PROBE x":
		if s.owner < 0 {
			ssend(fd, "FREE x")
		} else {
			ssend(fd, "BUSY x")
		}
	case "REGISTER x":
		if s.fixed && s.owner < 0 {
			ssend(fd, "NOTIFY x") // released since the probe
		} else {
			// BUG: trusts the earlier PROBE that x is still busy.
			s.waiters = append(s.waiters, fd)
		}
	case "RELEASE x":
		if s.owner == fd {
			for _, w := range s.waiters {
				ssend(w, "NOTIFY x")
			}
			s.waiters = nil
			s.owner = -1
			if len(s.queue) > 0 {
				s.owner, s.queue = s.queue[0], s.queue[1:]
				ssend(s.owner, "GRANTED x")
			}
		}
		ssend(fd, "RELEASED x")
	default:
		ssend(fd, "ERROR "+line)
	}
}

func must(err error, what string) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "server:", what+":", err)
		os.Exit(2)
	}
}

func (s *server) run(port int) {
	lfd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	must(err, "socket")
	must(syscall.SetsockoptInt(lfd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1), "setsockopt")
	must(syscall.Bind(lfd, &syscall.SockaddrInet4{Port: port}), "bind") // 0.0.0.0
	must(syscall.Listen(lfd, 16), "listen")
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	must(err, "epoll_create1")
	add := func(fd int) {
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(fd)}
		must(syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, fd, &ev), "epoll_ctl")
	}
	add(lfd)
	fmt.Printf("server: listening on %d fixed=%v\n", port, s.fixed)
	var evs [16]syscall.EpollEvent
	buf := make([]byte, 4096)
	for {
		n, err := syscall.EpollWait(ep, evs[:], -1)
		if err == syscall.EINTR {
			continue
		}
		must(err, "epoll_wait")
		for _, ev := range evs[:n] { // in the order the fds became ready
			fd := int(ev.Fd)
			if fd == lfd {
				cfd, _, err := syscall.Accept4(lfd, syscall.SOCK_CLOEXEC)
				if err == nil {
					add(cfd)
				}
				continue
			}
			m, err := syscall.Read(fd, buf)
			if err == syscall.EINTR || err == syscall.EAGAIN {
				continue
			}
			if m <= 0 { // a client left; the server stays up
				syscall.EpollCtl(ep, syscall.EPOLL_CTL_DEL, fd, nil)
				syscall.Close(fd)
				delete(s.bufs, fd)
				continue
			}
			b := append(s.bufs[fd], buf[:m]...)
			for {
				i := bytes.IndexByte(b, '\n')
				if i < 0 {
					break
				}
				s.handle(fd, strings.TrimSpace(string(b[:i])))
				b = b[i+1:]
			}
			s.bufs[fd] = b
		}
	}
}

func main() {
	a := os.Args[1:]
	switch {
	case len(a) >= 2 && a[0] == "server":
		port, err := strconv.Atoi(a[1])
		must(err, "port")
		s := &server{fixed: len(a) == 3 && a[2] == "--fixed", owner: -1, bufs: map[int][]byte{}}
		s.run(port)
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
