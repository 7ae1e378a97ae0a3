// ra-1: a command buffered while a follower catches up loses its requester,
// and the follower crashes when it finally applies it.
//
//	ra1 leader PORT                 sends its snapshot, then tells the client
//	ra1 follower PORT LEADER [--fixed]
//	ra1 client LEADER FOLLOWER
//
// The follower asks the leader for a snapshot (SYNC) and buffers the
// commands it gets until the last chunk (SNAPEND) is in. The leader sends
// the chunks and then READY to the client, which opens a session with the
// follower, casts CMD k1 v1 and ends the session (BYE). If SNAPEND is
// delayed past READY, the client's CMD and its BYE, the command sits in the
// buffer when its session is removed; applying it after catch-up
// dereferences the dead session and the follower panics. --fixed: buffered
// commands whose session has gone are dropped.
//
// The follower is a single-threaded epoll loop that reads the leader first
// (see runFollower); leader and client use the net package.
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

func listen(port string) net.Listener {
	l, err := net.Listen("tcp", ":"+port)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	return l
}

func send(c net.Conn, line string) {
	if _, err := fmt.Fprintf(c, "%s\n", line); err != nil {
		fmt.Fprintln(os.Stderr, "write:", err)
		os.Exit(2)
	}
}

func lines(c net.Conn, who string, each func(string) bool) {
	r := bufio.NewReader(c)
	for {
		s, err := r.ReadString('\n')
		if err != nil {
			return
		}
		s = strings.TrimSpace(s)
		fmt.Printf("%s: %s\n", who, s)
		if !each(s) {
			return
		}
	}
}

type session struct {
	id       int
	fd       int
	commands int
}

type buffered struct {
	session int
	cmd     string
}

// The follower is one thread around epoll. Of the descriptors that are ready
// together it reads the leader's first, as a process with a priority inbox
// would: natively the snapshot's end is always in before a client's command
// can be (the leader writes SNAPEND before READY), so only a reordering of
// the messages themselves, not the follower's thread scheduling, can show
// the bug.
type follower struct {
	fixed      bool
	catchingUp bool
	leader     int // fd
	store      map[string]string
	sessions   map[int]*session // by id
	byFd       map[int]*session
	pending    map[int][]byte // partial lines, by fd
	buffer     []buffered
	waiting    []int // sessions whose WAITSYNC waits for the end of catch-up
}

func must(err error, what string) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "follower: %s: %v\n", what, err)
		os.Exit(2)
	}
}

func rawListen(port int) int {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	must(err, "socket")
	must(syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1), "setsockopt")
	must(syscall.Bind(fd, &syscall.SockaddrInet4{Port: port}), "bind")
	must(syscall.Listen(fd, 16), "listen")
	return fd
}

func rawDial(addr string) int {
	for i := 0; i < 500; i++ {
		if a, err := net.ResolveTCPAddr("tcp4", addr); err == nil {
			sa := &syscall.SockaddrInet4{Port: a.Port}
			copy(sa.Addr[:], a.IP.To4())
			fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
			must(err, "socket")
			if syscall.Connect(fd, sa) == nil {
				return fd
			}
			syscall.Close(fd)
		}
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Fprintf(os.Stderr, "cannot connect to %s\n", addr)
	os.Exit(2)
	return -1
}

func rawSend(fd int, line string) {
	if _, err := syscall.Write(fd, []byte(line+"\n")); err != nil {
		fmt.Fprintln(os.Stderr, "follower: write:", err)
	}
}

// apply runs one command of session id.
func (f *follower) apply(id int, cmd string) {
	s := f.sessions[id]
	if s == nil && f.fixed {
		fmt.Printf("follower: session %d gone, dropping %q\n", id, cmd)
		return
	}
	s.commands++ // the bug: s is nil when the session ended while buffered
	var k, v string
	fmt.Sscanf(cmd, "CMD %s %s", &k, &v)
	f.store[k] = v
	fmt.Printf("follower: applied %q for session %d\n", cmd, id)
}

func (f *follower) fromLeader(s string) {
	var n int
	var kv string
	if _, err := fmt.Sscanf(s, "SNAP %d %s", &n, &kv); err == nil {
		k, v, _ := strings.Cut(kv, "=")
		f.store[k] = v
		return
	}
	if s == "SNAPEND" {
		f.catchingUp = false
		for _, b := range f.buffer {
			f.apply(b.session, b.cmd)
		}
		f.buffer = nil
		for _, id := range f.waiting {
			if w := f.sessions[id]; w != nil {
				rawSend(w.fd, "SYNCED")
			}
		}
		f.waiting = nil
	}
}

func (f *follower) end(s *session) {
	delete(f.sessions, s.id)
	delete(f.byFd, s.fd)
	delete(f.pending, s.fd)
	syscall.Close(s.fd) // also leaves the epoll set
}

// fromClient handles one line of session s; false when the session ended.
func (f *follower) fromClient(s *session, line string) bool {
	switch {
	case strings.HasPrefix(line, "CMD "):
		if f.catchingUp {
			f.buffer = append(f.buffer, buffered{s.id, line})
		} else {
			f.apply(s.id, line)
		}
	case line == "WAITSYNC":
		if f.catchingUp {
			f.waiting = append(f.waiting, s.id)
		} else {
			rawSend(s.fd, "SYNCED")
		}
	case line == "BYE":
		f.end(s)
		return false
	}
	return true
}

// readable reads what fd has and handles its complete lines.
func (f *follower) readable(fd int) {
	buf := make([]byte, 4096)
	n, err := syscall.Read(fd, buf)
	if err == syscall.EINTR || err == syscall.EAGAIN {
		return
	}
	s := f.byFd[fd]
	if n <= 0 {
		if s != nil {
			f.end(s) // the client went away without BYE: its session ends too
		} else {
			syscall.Close(fd)
		}
		return
	}
	data := append(f.pending[fd], buf[:n]...)
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		line := strings.TrimSpace(string(data[:i]))
		data = data[i+1:]
		fmt.Printf("follower: %s\n", line)
		if fd == f.leader {
			f.fromLeader(line)
		} else if !f.fromClient(s, line) {
			return
		}
	}
	f.pending[fd] = data
}

func runFollower(port int, leader string, fixed bool) {
	f := &follower{fixed: fixed, catchingUp: true, store: map[string]string{},
		sessions: map[int]*session{}, byFd: map[int]*session{}, pending: map[int][]byte{}}
	l := rawListen(port)
	f.leader = rawDial(leader)
	rawSend(f.leader, "SYNC")
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	must(err, "epoll_create1")
	watch := func(fd int) {
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(fd)}
		must(syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, fd, &ev), "epoll_ctl")
	}
	watch(l)
	watch(f.leader)
	events := make([]syscall.EpollEvent, 64)
	nextID := 1
	for {
		n, err := syscall.EpollWait(ep, events, -1)
		if err == syscall.EINTR {
			continue
		}
		must(err, "epoll_wait")
		ready := make([]int, 0, n)
		for _, ev := range events[:n] {
			if int(ev.Fd) == f.leader {
				ready = append([]int{f.leader}, ready...) // the leader first
			} else {
				ready = append(ready, int(ev.Fd))
			}
		}
		for _, fd := range ready {
			if fd != l {
				f.readable(fd)
				continue
			}
			c, _, err := syscall.Accept4(l, syscall.SOCK_CLOEXEC)
			if err != nil {
				continue
			}
			s := &session{id: nextID, fd: c}
			nextID++
			f.sessions[s.id], f.byFd[c] = s, s
			watch(c)
		}
	}
}

func main() {
	a := os.Args[1:]
	switch {
	case len(a) == 2 && a[0] == "leader":
		l := listen(a[1])
		var client net.Conn
		ready := make(chan struct{})
		for {
			c, err := l.Accept()
			if err != nil {
				os.Exit(2)
			}
			go lines(c, "leader", func(s string) bool {
				switch s {
				case "CLIENT":
					client = c
					close(ready)
				case "SYNC":
					for i, kv := range []string{"a=1", "b=2", "c=3"} {
						send(c, fmt.Sprintf("SNAP %d %s", i+1, kv))
					}
					send(c, "SNAPEND")
					<-ready
					send(client, "READY")
				}
				return true
			})
		}
	case (len(a) == 3 || len(a) == 4) && a[0] == "follower":
		port, err := strconv.Atoi(a[1])
		must(err, "port")
		runFollower(port, a[2], len(a) == 4 && a[3] == "--fixed")
	case len(a) == 3 && a[0] == "client":
		ld := dial(a[1])
		send(ld, "CLIENT")
		r := bufio.NewReader(ld)
		if s, err := r.ReadString('\n'); err != nil || strings.TrimSpace(s) != "READY" {
			fmt.Fprintln(os.Stderr, "client: no READY from the leader")
			os.Exit(1)
		}
		fmt.Println("client: follower is ready")
		fc := dial(a[2])
		send(fc, "CMD k1 v1")
		send(fc, "BYE")
		fc.Close()
		// A new session waits until the follower has caught up (and so
		// applied what it buffered, or crashed). The value of k1 is not
		// checked: a GET on another connection is not ordered after CMD,
		// and --fixed drops the CMD of a session that has ended.
		q := dial(a[2])
		send(q, "WAITSYNC")
		s, err := bufio.NewReader(q).ReadString('\n')
		if err != nil || strings.TrimSpace(s) != "SYNCED" {
			fmt.Fprintf(os.Stderr, "client: WAITSYNC answered %q, %v\n", strings.TrimSpace(s), err)
			os.Exit(1)
		}
		fmt.Println("client: follower caught up")
		send(q, "BYE")
	default:
		fmt.Fprintln(os.Stderr, "usage: ra1 leader PORT | ra1 follower PORT LEADER [--fixed] | ra1 client LEADER FOLLOWER")
		os.Exit(2)
	}
}
