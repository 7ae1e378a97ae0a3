package sockdiag

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pair returns both ends of a loopback TCP connection.
func pair(t *testing.T) (client, server *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

func addrs(c net.Conn) (local, remote netip.AddrPort) {
	return c.LocalAddr().(*net.TCPAddr).AddrPort(), c.RemoteAddr().(*net.TCPAddr).AddrPort()
}

func TestLookupAndRQueue(t *testing.T) {
	d, err := Open("")
	if err != nil {
		t.Skipf("skipping: no sock_diag here: %v", err)
	}
	defer d.Close()
	c, s := pair(t)
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	sl, sr := addrs(s)
	var rq uint32
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if rq, err = d.RQueue(sl, sr); err != nil || rq == 5 {
			break
		}
	}
	if err != nil || rq != 5 {
		t.Fatalf("RQueue = %d, %v; want 5 bytes waiting", rq, err)
	}
	const tcpEstablished = 1
	if _, state, err := d.Lookup(addrs(c)); err != nil || state != tcpEstablished {
		t.Fatalf("Lookup: state %d, %v; want ESTABLISHED", state, err)
	}
	none := netip.MustParseAddrPort("127.0.0.1:1")
	if _, _, err := d.Lookup(none, sr); !errors.Is(err, ErrNoSocket) {
		t.Fatalf("Lookup of no socket: %v, want ErrNoSocket", err)
	}
}

// TestInode names the file that holds a socket, as fstat sees it.
func TestInode(t *testing.T) {
	d, err := Open("")
	if err != nil {
		t.Skipf("skipping: no sock_diag here: %v", err)
	}
	defer d.Close()
	c, _ := pair(t)
	f, err := c.File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	const tcpEstablished = 1
	state, ino, err := d.Inode(addrs(c))
	if err != nil || state != tcpEstablished || uint64(ino) != st.Ino {
		t.Fatalf("Inode: state %d, inode %d, %v; want ESTABLISHED and inode %d", state, ino, err, st.Ino)
	}
}

func TestDestroy(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: SOCK_DESTROY needs CAP_NET_ADMIN (run as root)")
	}
	d, err := Open("")
	if err != nil {
		t.Skipf("skipping: no sock_diag here: %v", err)
	}
	defer d.Close()
	c, s := pair(t)
	if err := d.Destroy(addrs(c)); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	s.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = s.Read(make([]byte, 1))
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("the peer read %v, want ECONNRESET", err)
	}
	if err := d.Destroy(addrs(c)); !errors.Is(err, ErrNoSocket) {
		t.Fatalf("second Destroy: %v, want ErrNoSocket", err)
	}
}

func TestTCPDumpAndTimeWait(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: SOCK_DESTROY needs CAP_NET_ADMIN (run as root)")
	}
	d, err := Open("")
	if err != nil {
		t.Skipf("skipping: no sock_diag here: %v", err)
	}
	defer d.Close()
	c, s := pair(t)
	cl, cr := addrs(c)
	// The side that closes first goes through FIN_WAIT to TIME_WAIT.
	c.Close()
	s.Close()
	const timeWait = 6
	var found Conn
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && found.State != timeWait; time.Sleep(time.Millisecond) {
		conns, err := d.TCP()
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range conns {
			if x.Local == cl && x.Remote == cr {
				found = x
			}
		}
	}
	if found.State != timeWait {
		t.Fatalf("the closed connection is in state %d, want TIME_WAIT", found.State)
	}
	if err := d.Destroy(cl, cr); err != nil {
		t.Fatalf("destroying a TIME_WAIT socket: %v", err)
	}
	conns, err := d.TCP()
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range conns {
		if x.Local == cl && x.Remote == cr {
			t.Fatalf("still there after Destroy: %+v", x)
		}
	}
}

func TestSendingWindowFull(t *testing.T) {
	d, err := Open("")
	if err != nil {
		t.Skipf("skipping: no sock_diag here: %v", err)
	}
	defer d.Close()
	c, s := pair(t)
	cl, cr := addrs(c)
	if st, err := d.Sending(cl, cr); err != nil || st.WindowFull() || st.NotSent != 0 || st.MSS == 0 {
		t.Fatalf("idle: Sending = %+v, %v; want nothing held, an MSS", st, err)
	}
	// Write until the peer's window and our send buffer are full: the
	// peer does not read.
	c.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
	n, _ := c.Write(make([]byte, 64<<20))
	var st Sending
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if st, err = d.Sending(cl, cr); err != nil || st.WindowFull() {
			break
		}
	}
	if err != nil || !st.WindowFull() {
		t.Fatalf("after %d bytes with no reader: Sending = %+v, %v; want the window full", n, st, err)
	}
	// Read everything: nothing is held any more.
	s.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 1<<20)
	for got := 0; got < n; {
		m, err := s.Read(buf)
		if err != nil {
			t.Fatalf("reading: %v after %d of %d", err, got, n)
		}
		got += m
	}
	if st, err := d.Sending(cl, cr); err != nil || st.WindowFull() || st.NotSent != 0 {
		t.Fatalf("all read: Sending = %+v, %v; want nothing held", st, err)
	}
}

func TestListening(t *testing.T) {
	d, err := Open("")
	if err != nil {
		t.Skipf("skipping: no sock_diag here: %v", err)
	}
	defer d.Close()
	port := func(ln net.Listener) uint16 { return uint16(ln.Addr().(*net.TCPAddr).Port) }
	v4, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer v4.Close()
	// A dual-stack listener, as Go and Java open them, is an IPv6 socket.
	v6, err := net.Listen("tcp", "[::]:0")
	if err != nil {
		t.Skipf("skipping: no IPv6 here: %v", err)
	}
	defer v6.Close()
	// A connected socket on some port does not listen on it.
	c, _ := pair(t)
	connected, _ := addrs(c)
	closed, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := port(closed)
	closed.Close()
	for _, tc := range []struct {
		name string
		port uint16
		want bool
	}{
		{"ipv4 listener", port(v4), true},
		{"dual-stack listener", port(v6), true},
		{"connected socket's port", connected.Port(), false},
		{"closed listener", closedPort, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := d.Listening(tc.port)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Listening(%d) = %v, want %v", tc.port, got, tc.want)
			}
		})
	}
}

// Bound lists UDP sockets (bound or connected) and TCP listeners, IPv4
// and IPv6, and neither a TCP connection nor a closed socket.
func TestBound(t *testing.T) {
	d, err := Open("")
	if err != nil {
		t.Skipf("skipping: no sock_diag here: %v", err)
	}
	defer d.Close()
	u4, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer u4.Close()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, _ := pair(t)
	connected, _ := addrs(c)
	gone, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gonePort := gone.LocalAddr().(*net.UDPAddr).AddrPort()
	gone.Close()
	want := map[netip.AddrPort]bool{
		u4.LocalAddr().(*net.UDPAddr).AddrPort(): true,
		ln.Addr().(*net.TCPAddr).AddrPort():      true,
		connected:                                false,
		gonePort:                                 false,
	}
	if u6, err := net.ListenPacket("udp6", "[::1]:0"); err == nil {
		defer u6.Close()
		want[u6.LocalAddr().(*net.UDPAddr).AddrPort()] = true
	}
	bound, err := d.Bound()
	if err != nil {
		t.Fatal(err)
	}
	got := map[netip.AddrPort]bool{}
	for _, b := range bound {
		got[b.Local] = true
		if b.Local == u4.LocalAddr().(*net.UDPAddr).AddrPort() {
			f, err := u4.(*net.UDPConn).File()
			if err != nil {
				t.Fatal(err)
			}
			var st unix.Stat_t
			err = unix.Fstat(int(f.Fd()), &st)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			if uint64(b.Inode) != st.Ino {
				t.Errorf("%v: inode %d, want %d", b.Local, b.Inode, st.Ino)
			}
		}
	}
	for a, w := range want {
		if got[a] != w {
			t.Errorf("%v: listed %v, want %v (listed %v)", a, got[a], w, bound)
		}
	}
}

// TestTCPLeavesOutBound: TCP lists a connection and not a socket that is
// only bound (TCP_BOUND_INACTIVE, which the kernel lists from Linux 6.5
// when asked for).
func TestTCPLeavesOutBound(t *testing.T) {
	d, err := Open("")
	if err != nil {
		t.Skipf("skipping: no sock_diag here: %v", err)
	}
	defer d.Close()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	bound := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(sa.(*unix.SockaddrInet4).Port))
	c, _ := pair(t)
	cl, cr := addrs(c)
	conns, err := d.TCP()
	if err != nil {
		t.Fatal(err)
	}
	connected := false
	for _, x := range conns {
		if x.Local == bound {
			t.Errorf("the socket only bound is listed: %+v", x)
		}
		connected = connected || x.Local == cl && x.Remote == cr
	}
	if !connected {
		t.Errorf("the connection %v>%v is not listed: %+v", cl, cr, conns)
	}
}

// TestListenPorts: the ports of the namespace's listeners, IPv4 and IPv6,
// each once and in order; a connection's ports are not among them.
func TestListenPorts(t *testing.T) {
	d, err := Open("")
	if err != nil {
		t.Skipf("skipping: no sock_diag here: %v", err)
	}
	defer d.Close()
	var want []uint16
	for _, addr := range []string{"127.0.0.1:0", "127.0.0.1:0", "[::1]:0"} {
		ln, err := net.Listen("tcp", addr)
		if err != nil && addr == "[::1]:0" {
			continue // a host without IPv6
		}
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		want = append(want, uint16(ln.Addr().(*net.TCPAddr).Port))
	}
	c, _ := pair(t)
	cl, _ := addrs(c)
	ports, err := d.ListenPorts()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range want {
		if !slices.Contains(ports, p) {
			t.Errorf("port %d is not listed: %v", p, ports)
		}
	}
	if slices.Contains(ports, cl.Port()) {
		t.Errorf("the connection's port %d is listed: %v", cl.Port(), ports)
	}
	if !slices.IsSorted(ports) || len(slices.Compact(slices.Clone(ports))) != len(ports) {
		t.Errorf("not in order, each once: %v", ports)
	}
}
