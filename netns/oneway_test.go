package netns

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/internal/sockdiag"
	"github.com/lockstep-dev/lockstep/netcut"
)

// childDial dials with a 1 s timeout and says whether it connected.
func childDial() {
	c, err := net.DialTimeout("tcp4", os.Args[len(os.Args)-1], time.Second)
	if err != nil {
		fmt.Println("error")
		os.Exit(0)
	}
	c.Close()
	fmt.Println("connected")
}

// served starts a child that serves port in n and returns its output lines.
func served(t *testing.T, n *Node, port string) <-chan string {
	t.Helper()
	srv := self(n, "serve", port)
	out, _ := srv.StdoutPipe()
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	if l := <-lines; l != "listening" {
		t.Fatalf("server in %s: %q", n.Name, l)
	}
	return lines
}

// sender starts a child in n connected to addr and returns its stdin.
func sender(t *testing.T, n *Node, addr netip.AddrPort) io.Writer {
	t.Helper()
	cli := self(n, "send", addr.String())
	in, _ := cli.StdinPipe()
	out, _ := cli.StdoutPipe()
	if err := cli.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Process.Kill(); cli.Wait() })
	if l, _ := bufio.NewReader(out).ReadString('\n'); l != "connected\n" {
		t.Fatalf("client in %s: %q", n.Name, l)
	}
	return in
}

func line(t *testing.T, lines <-chan string, want string, within time.Duration) {
	t.Helper()
	select {
	case l := <-lines:
		if l != want {
			t.Fatalf("printed %q, want %q", l, want)
		}
	case <-time.After(within):
		t.Fatalf("did not print %q", want)
	}
}

// TestCutOneWay: a one-way cut a→b loses a's bytes to b and lets b's bytes
// reach a, and a's acknowledgements of them reach b (so b's kernel has
// nothing to retransmit on its real-time timer); no connection opens
// either way; the heal lets a's lost bytes through.
func TestCutOneWay(t *testing.T) {
	requireNet(t)
	c := newCluster(t, "a", "b")
	a, b := c.Node("a"), c.Node("b")
	atA, atB := served(t, a, "7005"), served(t, b, "7006")
	toA, toB := sender(t, b, netip.AddrPortFrom(a.Addr, 7005)), sender(t, a, netip.AddrPortFrom(b.Addr, 7006))
	line(t, atA, "accepted", 10*time.Second)
	line(t, atB, "accepted", 10*time.Second)

	cuts := netcut.NewSet(c.Firewall())
	ab := netcut.Cut[netip.Addr]{A: []netip.Addr{a.Addr}, B: []netip.Addr{b.Addr}, OneWay: true}
	if err := cuts.Put(ab); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(toA, "1")
	line(t, atA, "got 1", 10*time.Second)
	d, err := sockdiag.Open(b.NetnsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	conns, err := d.TCP()
	if err != nil {
		t.Fatal(err)
	}
	var local netip.AddrPort
	for _, cn := range conns {
		if cn.Remote == netip.AddrPortFrom(a.Addr, 7005) {
			local = cn.Local
		}
	}
	acked := false
	for i := 0; i < 2000 && !acked; i++ {
		s, err := d.Sending(local, netip.AddrPortFrom(a.Addr, 7005))
		if err != nil {
			t.Fatal(err)
		}
		acked = s.Unacked == 0
		time.Sleep(time.Millisecond)
	}
	if !acked {
		t.Fatal("b's bytes to a were not acknowledged across the one-way cut a→b")
	}

	fmt.Fprintln(toB, "2")
	select {
	case l := <-atB:
		t.Fatalf("b printed %q across the one-way cut a→b", l)
	case <-time.After(700 * time.Millisecond):
	}
	for _, dir := range []struct {
		from *Node
		to   netip.AddrPort
	}{{a, netip.AddrPortFrom(b.Addr, 7006)}, {b, netip.AddrPortFrom(a.Addr, 7005)}} {
		out, err := self(dir.from, "dial", dir.to.String()).Output()
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != "error\n" {
			t.Fatalf("%s dialed %v across the one-way cut a→b: %q", dir.from.Name, dir.to, out)
		}
	}

	if err := cuts.Lift(ab); err != nil {
		t.Fatal(err)
	}
	line(t, atB, "got 2", 30*time.Second)
	if out, err := self(b, "dial", netip.AddrPortFrom(a.Addr, 7005).String()).Output(); err != nil || string(out) != "connected\n" {
		t.Fatalf("b cannot dial a after the heal: %q %v", out, err)
	}
}
