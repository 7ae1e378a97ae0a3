package bpf

import (
	"context"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/internal/testutil"
	"golang.org/x/sys/unix"
)

// tcpPair returns both ends of a loopback TCP connection with Nagle off,
// so every write is its own send.
func tcpPair(t *testing.T) (client, server *net.TCPConn) {
	t.Helper()
	l, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	client, err = net.DialTCP("tcp4", nil, l.Addr().(*net.TCPAddr))
	if err != nil {
		t.Fatal(err)
	}
	server, err = l.AcceptTCP()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// waitQueued waits until n bytes sit unread in c's receive queue, so a
// later read takes them all at once.
func waitQueued(t *testing.T, c *net.TCPConn, n int) {
	t.Helper()
	raw, _ := c.SyscallConn()
	for i := 0; i < 1000; i++ {
		var q int
		raw.Control(func(fd uintptr) { q, _ = unix.IoctlGetInt(int(fd), unix.SIOCINQ) })
		if q >= n {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("%d bytes never arrived", n)
}

func readN(t *testing.T, c *net.TCPConn, n int) {
	t.Helper()
	b := make([]byte, n)
	if got, err := c.Read(b); err != nil || got != n {
		t.Fatalf("read %d of %d: %v", got, n, err)
	}
}

// watchSelf loads the programs and watches this process's network
// namespace, with what was recorded before drained; skipped without root
// or BPF.
func watchSelf(t *testing.T) *Conntrack {
	t.Helper()
	testutil.RequireRoot(t)
	testutil.RequireBPF(t)
	ct, err := NewConntrack("", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ct.Close() })
	if err := ct.WatchNetns("/proc/self/ns/net"); err != nil {
		t.Fatal(err)
	}
	ct.Drain()
	return ct
}

// TestConntrackMatchesBytes: a recv that consumes two sends overlaps both
// exactly, a send consumed by two recvs overlaps each by what it read, a
// peek is not recorded, and the establishment events carry the ISNs that
// turn sequence numbers into stream offsets.
func TestConntrackMatchesBytes(t *testing.T) {
	ct := watchSelf(t)
	client, server := tcpPair(t)

	client.Write([]byte("aaaa"))
	client.Write([]byte("bbbbbb"))
	waitQueued(t, server, 10)
	readN(t, server, 10) // one recv over two sends
	client.Write([]byte("cccccccc"))
	waitQueued(t, server, 8)
	peek := make([]byte, 8)
	raw, _ := server.SyscallConn()
	raw.Read(func(fd uintptr) bool { unix.Recvfrom(int(fd), peek, unix.MSG_PEEK); return true })
	readN(t, server, 3) // one send over two recvs
	readN(t, server, 5)
	client.Write([]byte("dd"))
	client.CloseWrite()
	waitQueued(t, server, 2)
	time.Sleep(10 * time.Millisecond) // the FIN too
	readN(t, server, 2)               // data and FIN in one read

	local := client.LocalAddr().(*net.TCPAddr).AddrPort()
	var sends, recvs []Event
	deadline := time.Now().Add(5 * time.Second)
	for (len(sends) < 4 || len(recvs) < 4) && time.Now().Before(deadline) {
		evs, err := ct.Drain()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			f := e.Flow()
			if f.Src.Port() != local.Port() {
				continue // other sockets of the namespace
			}
			switch e.Kind {
			case EvSend:
				sends = append(sends, e)
			case EvRecv:
				recvs = append(recvs, e)
			}
		}
		time.Sleep(time.Millisecond)
	}
	lens := func(es []Event) []int {
		var l []int
		for _, e := range es {
			l = append(l, e.Len)
		}
		return l
	}
	if !slices.Equal(lens(sends), []int{4, 6, 8, 2}) || !slices.Equal(lens(recvs), []int{10, 3, 5, 2}) {
		t.Fatalf("sends %v recvs %v (a peek must not count)", lens(sends), lens(recvs))
	}
	tests := []struct {
		recv int
		want []int // overlap with sends 0, 1, 2, 3
	}{
		{0, []int{4, 6, 0, 0}},
		{1, []int{0, 0, 3, 0}},
		{2, []int{0, 0, 5, 0}},
		{3, []int{0, 0, 0, 2}}, // the FIN's sequence number is not data
	}
	for _, tc := range tests {
		for s := range sends {
			if got := Overlap(sends[s], recvs[tc.recv]); got != tc.want[s] {
				t.Errorf("recv %d (seq %d len %d) vs send %d (seq %d len %d): overlap %d, want %d",
					tc.recv, recvs[tc.recv].Seq, recvs[tc.recv].Len, s, sends[s].Seq, sends[s].Len, got, tc.want[s])
			}
		}
	}
	if sends[0].PID != unix.Getpid() {
		t.Errorf("send attributed to pid %d, want %d", sends[0].PID, unix.Getpid())
	}
}

// TestConntrackOwnPidns: a process in a PID namespace of its own, as
// lockstep is in a container, finds its sends under the pid os.Getpid
// gives there (the engine tells its deliveries by it), not the kernel's.
// The test runs itself again as the first process of a new namespace.
func TestConntrackOwnPidns(t *testing.T) {
	if os.Getenv("LOCKSTEP_TEST_OWN_PIDNS") == "1" {
		ownPidnsSend(t)
		return
	}
	testutil.RequireRoot(t)
	testutil.RequireBPF(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestConntrackOwnPidns$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "LOCKSTEP_TEST_OWN_PIDNS=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("in a PID namespace of its own: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestConntrackOwnPidns") {
		t.Fatalf("the test did not run in the new namespace:\n%s", out)
	}
}

// ownPidnsSend is TestConntrackOwnPidns in its namespace: pid 1 there.
func ownPidnsSend(t *testing.T) {
	if os.Getpid() != 1 {
		t.Fatalf("pid %d, want 1: not the first process of a new PID namespace", os.Getpid())
	}
	ct := watchSelf(t)
	client, server := tcpPair(t)
	client.Write([]byte("x"))
	waitQueued(t, server, 1)
	readN(t, server, 1)
	local := client.LocalAddr().(*net.TCPAddr).AddrPort()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		evs, err := ct.Drain()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.Kind == EvSend && e.Flow().Src == local {
				if e.PID != os.Getpid() {
					t.Fatalf("send attributed to pid %d, want %d (this namespace's)", e.PID, os.Getpid())
				}
				return
			}
		}
	}
	t.Fatal("the send was never recorded")
}

// TestConntrackCgroupHooks: connect4 and sockops on a cgroup report a
// connect and both opens with ISNs that match the first byte sent.
func TestConntrackCgroupHooks(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireBPF(t)
	root := "/sys/fs/cgroup/unified"
	testutil.RequireCgroup2(t, root)
	// The test process itself is in the root cgroup's subtree, so hooking
	// the root sees it; other processes' events are filtered by port.
	ct, err := NewConntrack(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ct.Close()
	if err := ct.WatchNetns("/proc/self/ns/net"); err != nil {
		t.Fatal(err)
	}
	client, server := tcpPair(t)
	client.Write([]byte("x"))
	waitQueued(t, server, 1)
	readN(t, server, 1)
	cport := client.LocalAddr().(*net.TCPAddr).AddrPort().Port()
	sport := server.LocalAddr().(*net.TCPAddr).AddrPort().Port()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var connect, est, acc, send *Event
	for connect == nil || est == nil || acc == nil || send == nil {
		e, err := ct.Next(ctx)
		if err != nil {
			t.Fatalf("waiting for events (connect %v est %v acc %v send %v): %v", connect, est, acc, send, err)
		}
		switch {
		case e.Kind == EvConnect && e.Remote.Port() == sport:
			connect = &e
		case e.Kind == EvEstablished && e.Local.Port() == cport:
			est = &e
		case e.Kind == EvAccepted && e.Remote.Port() == cport:
			acc = &e
		case e.Kind == EvSend && e.Local.Port() == cport:
			send = &e
		}
	}
	if est.Seq != acc.PeerISN || acc.Seq != est.PeerISN {
		t.Errorf("ISNs disagree: client %d/%d server %d/%d", est.Seq, est.PeerISN, acc.Seq, acc.PeerISN)
	}
	if send.Seq != est.Seq+1 {
		t.Errorf("first byte sent at seq %d, want ISN+1 = %d", send.Seq, est.Seq+1)
	}
}

// waitState waits until c's TCP state is state (TCP_INFO).
func waitState(t *testing.T, c *net.TCPConn, state uint8) {
	t.Helper()
	raw, _ := c.SyscallConn()
	var got uint8
	for i := 0; i < 1000; i++ {
		raw.Control(func(fd uintptr) {
			if info, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
				got = info.State
			}
		})
		if got == state {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("TCP state %d, never %d", got, state)
}

// TestConntrackResetIsNotFIN: a read that takes the last bytes of a
// connection its peer reset (no FIN, so nothing in sequence space after the
// data) is recorded at the bytes it read; and where a FIN came before the
// reset, the read that takes the data and the FIN is too. The reset shuts
// the socket down for reading as a FIN does; taking it for one put the
// read a byte early (a NATS server's connection, its peer crashed while
// bytes were unread, 2026-12-05).
func TestConntrackResetIsNotFIN(t *testing.T) {
	const (
		tcpCloseWait = 8
		tcpClose     = 7
	)
	tests := []struct {
		name string
		// finFirst: the peer shuts its side down (a FIN) before it resets.
		finFirst bool
	}{
		{"reset alone", false},
		{"FIN, then reset", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ct := watchSelf(t)
			client, server := tcpPair(t)
			client.Write([]byte("eeee"))
			waitQueued(t, server, 4)
			readN(t, server, 2)
			if tt.finFirst {
				client.CloseWrite()
				waitState(t, server, tcpCloseWait)
			}
			// Bytes the client leaves unread make its close a reset, as
			// a crashed process's close is; linger 0 makes it one anyway.
			server.Write([]byte("x"))
			client.SetLinger(0)
			client.Close()
			waitState(t, server, tcpClose)
			readN(t, server, 2) // the rest (and the FIN, if one came)

			local := client.LocalAddr().(*net.TCPAddr).AddrPort()
			var send *Event
			var recvs []Event
			deadline := time.Now().Add(5 * time.Second)
			for (send == nil || len(recvs) < 2) && time.Now().Before(deadline) {
				evs, err := ct.Drain()
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range evs {
					if e.Flow().Src.Port() != local.Port() {
						continue
					}
					switch e.Kind {
					case EvSend:
						send = &e
					case EvRecv:
						recvs = append(recvs, e)
					}
				}
				time.Sleep(time.Millisecond)
			}
			if send == nil || len(recvs) != 2 {
				t.Fatalf("send %v, recvs %v: want one send and two recvs", send, recvs)
			}
			for i, r := range recvs {
				if got := Overlap(*send, r); got != 2 || r.Seq != send.Seq+uint32(2*i) {
					t.Errorf("recv %d (seq %d len %d) against the send (seq %d len %d): overlap %d at offset %d, want 2 at %d",
						i, r.Seq, r.Len, send.Seq, send.Len, got, r.Seq-send.Seq, 2*i)
				}
			}
		})
	}
}
