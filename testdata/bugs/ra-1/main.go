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
	conn     net.Conn
	commands int
}

type buffered struct {
	session int
	cmd     string
}

type follower struct {
	mu         sync.Mutex
	fixed      bool
	catchingUp bool
	store      map[string]string
	sessions   map[int]*session
	buffer     []buffered
	gets       []func() // WAITSYNCs parked until catch-up ends
}

// apply runs one command of session id; the caller holds f.mu.
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

func (f *follower) syncWith(leader string) {
	c := dial(leader)
	send(c, "SYNC")
	lines(c, "follower", func(s string) bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		var n int
		var kv string
		if _, err := fmt.Sscanf(s, "SNAP %d %s", &n, &kv); err == nil {
			k, v, _ := strings.Cut(kv, "=")
			f.store[k] = v
			return true
		}
		if s == "SNAPEND" {
			f.catchingUp = false
			for _, b := range f.buffer {
				f.apply(b.session, b.cmd)
			}
			f.buffer = nil
			for _, g := range f.gets {
				g()
			}
			f.gets = nil
		}
		return true
	})
}

func (f *follower) serve(c net.Conn, id int) {
	f.mu.Lock()
	f.sessions[id] = &session{id: id, conn: c}
	f.mu.Unlock()
	lines(c, "follower", func(s string) bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		switch {
		case strings.HasPrefix(s, "CMD "):
			if f.catchingUp {
				f.buffer = append(f.buffer, buffered{id, s})
			} else {
				f.apply(id, s)
			}
		case s == "WAITSYNC":
			answer := func() { send(c, "SYNCED") }
			if f.catchingUp {
				f.gets = append(f.gets, answer)
			} else {
				answer()
			}
		case s == "BYE":
			delete(f.sessions, id)
			c.Close()
			return false
		}
		return true
	})
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
		f := &follower{fixed: len(a) == 4 && a[3] == "--fixed", catchingUp: true,
			store: map[string]string{}, sessions: map[int]*session{}}
		l := listen(a[1])
		go f.syncWith(a[2])
		for id := 1; ; id++ {
			c, err := l.Accept()
			if err != nil {
				os.Exit(2)
			}
			go f.serve(c, id)
		}
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
		// applied what it buffered); the commands' values are not checked:
		// another connection's GET is not ordered after CMD.
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
