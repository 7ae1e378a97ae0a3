package netns

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/internal/sockdiag"
	"github.com/lockstep-dev/lockstep/internal/testutil"
	"github.com/lockstep-dev/lockstep/netcut"
)

func TestMain(m *testing.M) {
	switch os.Getenv("LOCKSTEP_NETNS_CHILD") {
	case "hold":
		childHoldCluster()
		return
	case "serve":
		childServe()
		return
	case "send":
		childSend()
		return
	case "dial":
		childDial()
		return
	}
	testutil.LeakCheckMain(m)
}

func requireNet(t testing.TB) {
	t.Helper()
	testutil.RequireNetns(t)
	testutil.RequireBPF(t)
	testutil.RequireCgroup2(t, DefaultCgroupRoot)
}

func newCluster(t testing.TB, nodes ...string) *Cluster {
	t.Helper()
	c, err := New(context.Background(), Config{Nodes: nodes})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return c
}

// inNode runs a command in the node's cgroup and namespace, with its hosts
// file, as `ip netns exec` does for a user debugging by hand.
func inNode(n *Node, args ...string) *exec.Cmd {
	script := `echo $$ >"$0/cgroup.procs" && exec ip netns exec "$@"`
	return exec.Command("sh", append([]string{"-c", script, n.CgroupDir, filepath.Base(n.NetnsPath)}, args...)...)
}

// self re-executes the test binary in a child mode inside a node.
func self(n *Node, mode string, args ...string) *exec.Cmd {
	cmd := inNode(n, append([]string{"env", "LOCKSTEP_NETNS_CHILD=" + mode, os.Args[0], "-test.run=^$"}, args...)...)
	return cmd
}

// childServe accepts one connection and prints each byte it reads.
func childServe() {
	l, err := net.Listen("tcp4", "0.0.0.0:"+os.Args[len(os.Args)-1])
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("listening")
	conn, err := l.Accept()
	if err != nil {
		os.Exit(1)
	}
	fmt.Println("accepted")
	buf := make([]byte, 1)
	for {
		if _, err := conn.Read(buf); err != nil {
			os.Exit(0)
		}
		fmt.Printf("got %c\n", buf[0])
	}
}

// childSend connects and sends each line of stdin.
func childSend() {
	conn, err := net.Dial("tcp4", os.Args[len(os.Args)-1])
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("connected")
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		conn.Write([]byte(sc.Text()))
	}
}

func listen(t *testing.T, n *Node, port int) net.Listener {
	t.Helper()
	var l net.Listener
	err := n.Do(func() (err error) {
		l, err = net.Listen("tcp4", fmt.Sprintf("0.0.0.0:%d", port))
		return err
	})
	if err != nil {
		t.Fatalf("listen in %s: %v", n.Name, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func dial(n *Node, addr string, timeout time.Duration) (net.Conn, error) {
	var c net.Conn
	err := n.Do(func() (err error) {
		c, err = net.DialTimeout("tcp4", addr, timeout)
		return err
	})
	return c, err
}

func TestServerAndClientByName(t *testing.T) {
	requireNet(t)
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("skipping: needs iproute2's ip")
	}
	c := newCluster(t, "server1", "client1", "client2")
	srv := c.Node("server1")
	l := listen(t, srv, 7000)
	got := make(chan string, 1)
	go func() {
		conn, err := l.Accept()
		if err != nil {
			got <- err.Error()
			return
		}
		defer conn.Close()
		line, _ := bufio.NewReader(conn).ReadString('\n')
		got <- fmt.Sprintf("%s from %s", strings.TrimSpace(line), conn.RemoteAddr().(*net.TCPAddr).IP)
	}()

	out, err := inNode(c.Node("client1"), "getent", "hosts", "server1").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), srv.Addr.String()+" ") {
		t.Fatalf("server1 does not resolve in client1: %q %v", out, err)
	}
	// bash's /dev/tcp resolves through the same hosts file.
	cmd := inNode(c.Node("client1"), "bash", "-c", "echo hello >/dev/tcp/server1/7000")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("client1 -> server1 by name: %v: %s", err, out)
	}
	select {
	case s := <-got:
		if want := "hello from " + c.Node("client1").Addr.String(); s != want {
			t.Fatalf("server got %q, want %q", s, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("server got nothing")
	}
}

// TestNodeTCP: a node's one route to the subnet acknowledges every
// segment at once (no delayed ACKs, whose timers run on real time), and its
// socket buffers start at their full size (no autotuning, which follows
// real time either).
func TestNodeTCP(t *testing.T) {
	requireNet(t)
	c := newCluster(t, "a")
	a := c.Node("a")
	out, err := exec.Command("ip", "-n", filepath.Base(a.NetnsPath), "-4", "route", "show").CombinedOutput()
	if err != nil {
		t.Fatalf("ip route: %v: %s", err, out)
	}
	routes := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(routes) != 1 || !strings.HasPrefix(routes[0], c.Subnet().String()+" ") || !strings.Contains(routes[0], "quickack 1") {
		t.Fatalf("routes of node a:\n%s\nwant one to %v with quickack 1", out, c.Subnet())
	}
	for _, kv := range tcpSysctls {
		var got []byte
		if err := a.Do(func() (err error) {
			got, err = os.ReadFile("/proc/sys/net/ipv4/" + kv[0])
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if g := strings.Join(strings.Fields(string(got)), " "); g != kv[1] {
			t.Errorf("net.ipv4.%s in node a = %q, want %q", kv[0], g, kv[1])
		}
	}
}

// TestKernelPorts: a port the kernel picks in a node lies above the
// ranges the tracer numbers connections and listeners in (32768-60999)
// and connects within a node in (61000-62999), so it never takes one of
// theirs.
func TestKernelPorts(t *testing.T) {
	requireNet(t)
	c := newCluster(t, "a")
	a := c.Node("a")
	var ports []int
	if err := a.Do(func() error {
		ln, err := net.Listen("tcp4", a.Addr.String()+":0")
		if err != nil {
			return err
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
		for range 3 {
			conn, err := net.Dial("tcp4", ln.Addr().String())
			if err != nil {
				return err
			}
			defer conn.Close()
			ports = append(ports, conn.LocalAddr().(*net.TCPAddr).Port)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, p := range ports {
		if p < 63000 || p > 65535 {
			t.Errorf("the kernel picked port %d in node a, want 63000-65535 (all: %v)", p, ports)
		}
	}
}

// TestNodeHashTables: a node's namespace has TCP and UDP hash tables of
// its own, of childTables' sizes (a sock_diag dump there walks those, not
// the host's), and making it left the host's settings as they were.
func TestNodeHashTables(t *testing.T) {
	requireNet(t)
	read := func(name string) string {
		b, err := os.ReadFile("/proc/sys/net/ipv4/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	if _, err := os.Stat("/proc/sys/net/ipv4/tcp_child_ehash_entries"); err != nil {
		t.Skipf("this kernel shares the host's tables with every namespace (before 6.1): %v", err)
	}
	hostTCP, hostUDP := read("tcp_child_ehash_entries"), read("udp_child_hash_entries")
	c := newCluster(t, "a")
	var tcp, udp string
	if err := c.Node("a").Do(func() error {
		tcp, udp = read("tcp_ehash_entries"), read("udp_hash_entries")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if tcp != childTables[0][1] || udp != childTables[1][1] {
		t.Errorf("node a's tables: TCP %s, UDP %s buckets; want %s and %s of its own (negative: the host's)", tcp, udp, childTables[0][1], childTables[1][1])
	}
	if h, u := read("tcp_child_ehash_entries"), read("udp_child_hash_entries"); h != hostTCP || u != hostUDP {
		t.Errorf("the host's settings moved: %s, %s; were %s, %s", h, u, hostTCP, hostUDP)
	}
}

func TestNodesAreIsolated(t *testing.T) {
	requireNet(t)
	c := newCluster(t, "a", "b")
	a := c.Node("a")

	// A listener in the host namespace on a host address.
	hostAddr := hostIPv4(t)
	hl, err := net.Listen("tcp4", hostAddr.String()+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer hl.Close()
	if conn, err := dial(a, hl.Addr().String(), time.Second); err == nil {
		conn.Close()
		t.Fatalf("node a reached the host at %v", hl.Addr())
	} else if !errors.Is(err, unix.ENETUNREACH) {
		t.Logf("node -> host failed with %v", err)
	}
	if conn, err := dial(a, "1.1.1.1:80", time.Second); err == nil {
		conn.Close()
		t.Fatal("node a reached 1.1.1.1")
	}
	// No IPv6 anywhere on the cluster's links: a link-local address on the
	// bridge let a node reach the host's services listening on [::].
	for _, name := range []string{c.bridge, a.hostVeth} {
		link, err := netlink.LinkByName(name)
		if err != nil {
			t.Fatal(err)
		}
		if addrs, _ := netlink.AddrList(link, netlink.FAMILY_V6); len(addrs) > 0 {
			t.Fatalf("host link %s has IPv6 addresses %v", name, addrs)
		}
	}
	if err := a.Do(func() error {
		addrs, err := netlink.AddrList(nil, netlink.FAMILY_V6)
		if err == nil && len(addrs) > 0 {
			return fmt.Errorf("IPv6 addresses %v", addrs)
		}
		return err
	}); err != nil {
		t.Fatalf("node a: %v", err)
	}

	// And the host cannot reach into a node: the cluster subnet is not
	// routed to the bridge (it may go out the default route and be answered
	// by whatever is there, but never by the node).
	l := listen(t, a, 7001)
	accepted := make(chan net.Addr, 2)
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- conn.RemoteAddr()
			conn.Close()
		}
	}()
	if conn, err := net.DialTimeout("tcp4", netip.AddrPortFrom(a.Addr, 7001).String(), time.Second); err == nil {
		conn.Close()
	}
	select {
	case from := <-accepted:
		t.Fatalf("node a accepted a connection from the host (%v)", from)
	case <-time.After(300 * time.Millisecond):
	}
	// While b can.
	conn, err := dial(c.Node("b"), netip.AddrPortFrom(a.Addr, 7001).String(), 5*time.Second)
	if err != nil {
		t.Fatalf("b cannot reach a: %v", err)
	}
	conn.Close()
	if from := <-accepted; from.(*net.TCPAddr).IP.String() != c.Node("b").Addr.String() {
		t.Fatalf("a accepted from %v, want b", from)
	}
}

func hostIPv4(t *testing.T) netip.Addr {
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if ip, ok := netip.AddrFromSlice(a.IP.To4()); ok && !ip.IsLoopback() {
			return ip
		}
	}
	t.Skip("skipping: host has no non-loopback IPv4 address")
	return netip.Addr{}
}

// TestPartitionBlocksAndHeals: packets between partitioned nodes are lost
// (not refused) until the partition heals; the connection then recovers.
// The firewall acts on the nodes' cgroups, so the endpoints are processes
// started in them, as lockstep starts nodes.
func TestPartitionBlocksAndHeals(t *testing.T) {
	requireNet(t)
	c := newCluster(t, "a", "b", "c")
	a, b := c.Node("a"), c.Node("b")

	srv := self(a, "serve", "7002")
	srvOut, _ := srv.StdoutPipe()
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(srvOut)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	expect := func(want string, within time.Duration) {
		t.Helper()
		select {
		case l := <-lines:
			if l != want {
				t.Fatalf("server printed %q, want %q", l, want)
			}
		case <-time.After(within):
			t.Fatalf("server did not print %q", want)
		}
	}
	expect("listening", 10*time.Second)

	cli := self(b, "send", netip.AddrPortFrom(a.Addr, 7002).String())
	in, _ := cli.StdinPipe()
	cliOut, _ := cli.StdoutPipe()
	if err := cli.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cli.Process.Kill(); cli.Wait() }()
	if l, _ := bufio.NewReader(cliOut).ReadString('\n'); l != "connected\n" {
		t.Fatalf("client: %q", l)
	}
	expect("accepted", 10*time.Second)
	fmt.Fprintln(in, "1")
	expect("got 1", 10*time.Second)

	cuts := netcut.NewSet(c.Firewall())
	ab := netcut.Cut[netip.Addr]{A: []netip.Addr{a.Addr}, B: []netip.Addr{b.Addr}}
	if err := cuts.Put(ab); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(in, "2")
	select {
	case l := <-lines:
		t.Fatalf("server printed %q across a partition", l)
	case <-time.After(700 * time.Millisecond):
	}
	if n, err := c.fw.(interface{ Dropped() (uint64, error) }).Dropped(); err != nil || n == 0 {
		t.Fatalf("dropped %d packets (%v), want > 0", n, err)
	}
	// A third node still reaches a.
	if cc, err := dial(c.Node("c"), netip.AddrPortFrom(a.Addr, 7002).String(), 5*time.Second); err != nil {
		t.Fatalf("c cannot reach a during the a|b partition: %v", err)
	} else {
		cc.Close()
	}

	if err := cuts.Lift(ab); err != nil {
		t.Fatal(err)
	}
	// TCP retransmits the lost segment once the partition heals.
	expect("got 2", 30*time.Second)
}

// TestResetKillsMembers: a process left in a node is gone after Reset and
// the namespace is reusable.
func TestResetKillsMembers(t *testing.T) {
	requireNet(t)
	c := newCluster(t, "a")
	cmd := inNode(c.Node("a"), "sleep", "1000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// Wait until the process has entered the namespace.
	for i := 0; len(c.members()) == 0; i++ {
		if i > 5000 {
			t.Fatal("sleep never entered the namespace")
		}
		time.Sleep(time.Millisecond)
	}
	if err := c.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil {
		t.Fatal("sleep survived Reset")
	}
	if m := c.members(); len(m) != 0 {
		t.Fatalf("members after Reset: %v", m)
	}
}

func objects(t *testing.T) []string {
	t.Helper()
	var out []string
	ents, _ := os.ReadDir("/run/netns")
	for _, e := range ents {
		if prefixOf(e.Name()) != "" {
			out = append(out, "netns "+e.Name())
		}
	}
	links, err := linkList() // retried when another campaign's change interrupts the dump
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		if prefixOf(l.Attrs().Name) != "" {
			out = append(out, "link "+l.Attrs().Name)
		}
	}
	ents, _ = os.ReadDir(DefaultCgroupRoot)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "lockstep-") {
			out = append(out, "cgroup "+e.Name())
		}
	}
	for _, d := range []string{RunDir, EtcNetns} {
		ents, _ = os.ReadDir(d)
		for _, e := range ents {
			if prefixOf(e.Name()) != "" {
				out = append(out, "dir "+filepath.Join(d, e.Name()))
			}
		}
	}
	var mounts []string
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) > 4 && strings.Contains(f[4], "/run/netns/"+namePrefix) {
				mounts = append(mounts, "mount "+f[4])
			}
		}
	}
	out = append(out, mounts...)
	// Clusters of other test packages running at the same time are theirs.
	mine := out[:0]
	for _, o := range out {
		f := strings.Fields(o)
		if !testutil.OtherRun(filepath.Base(f[len(f)-1])) {
			mine = append(mine, o)
		}
	}
	return mine
}

func TestFiftyClustersLeaveNothing(t *testing.T) {
	requireNet(t)
	// Only this test's clusters count: other packages' runs (and the
	// sweeps of killed ones) come and go at the same time.
	mine := map[string]bool{}
	ours := func() []string {
		var o []string
		for _, x := range objects(t) {
			f := strings.Fields(x)
			if mine[prefixOf(strings.TrimPrefix(filepath.Base(f[len(f)-1]), "lockstep-"))] {
				o = append(o, x)
			}
		}
		return o
	}
	before := ours()
	for i := range 50 {
		c, err := New(context.Background(), Config{Nodes: []string{"n1", "n2", "n3"}})
		if err != nil {
			t.Fatalf("cluster %d: %v", i, err)
		}
		mine[c.prefix] = true
		if err := c.Reset(context.Background()); err != nil {
			t.Fatalf("cluster %d reset: %v", i, err)
		}
		if err := c.Close(); err != nil {
			t.Fatalf("cluster %d close: %v", i, err)
		}
	}
	was := map[string]bool{}
	for _, o := range before {
		was[o] = true
	}
	for _, o := range ours() {
		if !was[o] {
			t.Errorf("left after 50 clusters: %s", o)
		}
	}
}

// childHoldCluster is the re-executed test binary: it builds a cluster,
// starts a process in it, reports the prefix and waits to be killed.
func childHoldCluster() {
	c, err := New(context.Background(), Config{Nodes: []string{"a", "b"}})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	cmd := inNode(c.Node("a"), "sleep", "1000")
	cmd.Start()
	for len(c.members()) == 0 {
		time.Sleep(time.Millisecond)
	}
	fmt.Println("prefix", c.Prefix())
	select {}
}

func TestSweepAfterSIGKILL(t *testing.T) {
	requireNet(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LOCKSTEP_NETNS_CHILD=hold")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var prefix string
	if _, err := fmt.Fscanf(out, "prefix %s\n", &prefix); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child: %v", err)
	}
	// A live run is reported and left alone.
	los, err := Sweep(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	if lo := find(los, prefix); lo == nil || !lo.Live {
		t.Fatalf("live run %s not reported live: %+v", prefix, los)
	}
	cmd.Process.Signal(unix.SIGKILL)
	cmd.Wait()

	los, err = Sweep(context.Background(), false)
	if err != nil {
		t.Fatalf("sweep: %v", err)
	}
	lo := find(los, prefix)
	if lo == nil || lo.Live {
		t.Fatalf("killed run %s not swept: %+v", prefix, los)
	}
	kinds := map[string]bool{}
	for _, o := range lo.Objects {
		kinds[strings.Fields(o)[0]] = true
	}
	for _, k := range []string{"netns", "link", "cgroup", "dir"} {
		if !kinds[k] {
			t.Errorf("sweep found no %s of the killed run: %v", k, lo.Objects)
		}
	}
	for _, o := range objects(t) {
		if strings.Contains(o, prefix) {
			t.Errorf("left after sweep: %s", o)
		}
	}
}

func find(los []Leftover, prefix string) *Leftover {
	for i := range los {
		if los[i].Prefix == prefix {
			return &los[i]
		}
	}
	return nil
}

func TestBadConfig(t *testing.T) {
	requireNet(t)
	host := hostNet(t)
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"ipv6 subnet", Config{Subnet: netip.MustParsePrefix("fd00::/64"), Nodes: []string{"a"}}, "must be a valid IPv4 subnet"},
		{"too small", Config{Subnet: netip.MustParsePrefix("10.1.0.0/31"), Nodes: []string{"a"}}, "prefix length"},
		{"too many nodes", Config{Subnet: netip.MustParsePrefix("10.1.0.0/29"), Nodes: []string{"a", "b", "c", "d", "e", "f"}}, "holds at most 5 nodes, got 6"},
		{"duplicate", Config{Nodes: []string{"a", "b", "a"}}, `node "a": duplicate name`},
		{"underscore", Config{Nodes: []string{"node_1"}}, `node "node_1": not a valid host name`},
		{"leading dash", Config{Nodes: []string{"-a"}}, "not a valid host name"},
		{"empty name", Config{Nodes: []string{""}}, "not a valid host name"},
		{"no nodes", Config{}, "no nodes"},
		{"overlaps host", Config{Subnet: host, Nodes: []string{"a"}}, "overlaps host network"},
		{"long prefix", Config{Prefix: "lskwaytoolongname", Nodes: []string{"a"}}, "at most 10 characters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A prefix of its own, so that clusters other tests build at the
			// same time cannot look like something this New left behind.
			prefix := tc.cfg.Prefix
			if prefix == "" {
				prefix = "lskbad0" + fmt.Sprintf("%02x", len(tc.name))
				tc.cfg.Prefix = prefix
			}
			ours := func() []string {
				var o []string
				for _, x := range objects(t) {
					if strings.Contains(x, prefix) {
						o = append(o, x)
					}
				}
				return o
			}
			before := ours()
			c, err := New(context.Background(), tc.cfg)
			if err == nil {
				c.Close()
				t.Fatalf("no error, want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q, want one line containing %q", err, tc.want)
			}
			was := map[string]bool{}
			for _, o := range before {
				was[o] = true
			}
			for _, o := range ours() {
				if !was[o] {
					t.Errorf("created: %s", o)
				}
			}
		})
	}
}

func hostNet(t *testing.T) netip.Prefix {
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if ip, ok := netip.AddrFromSlice(a.IP.To4()); ok && !ip.IsLoopback() {
			return netip.PrefixFrom(ip, onesOf(a.IPNet)).Masked()
		}
	}
	t.Skip("skipping: host has no non-loopback IPv4 network")
	return netip.Prefix{}
}

func TestResetClearsSockets(t *testing.T) {
	requireNet(t)
	c := newCluster(t, "a", "b")
	l := listen(t, c.Node("a"), 7000)
	accepted := make(chan net.Conn, 1)
	go func() {
		conn, err := l.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- conn // held open, unread: the client's side outlives it
	}()
	cmd := inNode(c.Node("b"), "bash", "-c", "exec 3<>/dev/tcp/a/7000; echo hi >&3; sleep 1000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait()
	conn, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	defer conn.Close()
	left := func() []sockdiag.Conn {
		var conns []sockdiag.Conn
		err := c.Node("b").Do(func() error {
			d, err := sockdiag.Open("")
			if err != nil {
				return err
			}
			defer d.Close()
			conns, err = d.TCP()
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return conns
	}
	if before := left(); len(before) != 1 {
		t.Fatalf("b holds %+v, want its one connection", before)
	}
	// Killed with unread bytes at the peer, the client's socket stays on as
	// an orphan (FIN_WAIT) until Reset clears it.
	if err := c.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := left(); len(after) != 0 {
		t.Fatalf("sockets left after Reset: %+v", after)
	}
}

// TestSetupFailureCleansUp: a setup step that fails after the cluster's
// first objects exist (here its cgroup, already taken) returns the error
// in one line and removes what it made, rather than panicking on the way.
func TestSetupFailureCleansUp(t *testing.T) {
	requireNet(t)
	const prefix = "lskcgtaken"
	cg := filepath.Join(DefaultCgroupRoot, "lockstep-"+prefix)
	if err := os.Mkdir(cg, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(cg) })
	c, err := New(context.Background(), Config{Prefix: prefix, Nodes: []string{"a"}})
	if err == nil {
		c.Close()
		t.Fatal("no error with the cluster's cgroup taken")
	}
	if !strings.Contains(err.Error(), "creating cgroup "+cg) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("error %q", err)
	}
	if _, err := os.Stat(filepath.Join(RunDir, prefix)); !os.IsNotExist(err) {
		t.Errorf("run directory left behind: %v", err)
	}
}

// A cluster is usable when New returns: every link is up at both ends (a
// device the kernel has not yet given its queue drops what it sends, with
// no error), so the very first datagram between two nodes arrives. A
// replay's fresh cluster lost a trial's first datagram this way.
func TestLinksUpWhenNewReturns(t *testing.T) {
	requireNet(t)
	for i := range 5 {
		c := newCluster(t, "a", "b")
		for _, n := range c.nodes {
			if ready, err := c.linkReady(n); err != nil || !ready {
				t.Fatalf("cluster %d: node %s's link not up when New returned (err %v)", i, n.Name, err)
			}
		}
		a, b := c.Node("a"), c.Node("b")
		var rx *net.UDPConn
		if err := b.Do(func() (err error) {
			rx, err = net.ListenUDP("udp4", &net.UDPAddr{Port: 7000})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if err := a.Do(func() error {
			tx, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: b.Addr.AsSlice(), Port: 7000})
			if err != nil {
				return err
			}
			defer tx.Close()
			_, err = tx.Write([]byte("first"))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		rx.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 16)
		n, err := rx.Read(buf)
		rx.Close()
		if err != nil || string(buf[:n]) != "first" {
			t.Fatalf("cluster %d: the first datagram from a to b did not arrive: %q, %v", i, buf[:n], err)
		}
	}
}

// TestResetAwaitsForeignCopies: a node's UDP socket that a process outside
// the cluster still holds (lockstep's own fork, between fork and exec,
// copies every descriptor lockstep has, its duplicates of the nodes'
// sockets too) outlives the node's processes; Reset returns only once it
// is gone, so that the next trial's program binds its port. Before, with
// --jobs 2, a node failed at step 0 with "bind: Address already in use".
func TestResetAwaitsForeignCopies(t *testing.T) {
	requireNet(t)
	c := newCluster(t, "a")
	bindUDP := func() (net.PacketConn, error) {
		var pc net.PacketConn
		err := c.Node("a").Do(func() (err error) {
			pc, err = net.ListenPacket("udp4", "0.0.0.0:7000")
			return err
		})
		return pc, err
	}
	pc, err := bindUDP()
	if err != nil {
		t.Fatal(err)
	}
	f, err := pc.(*net.UDPConn).File()
	pc.Close()
	if err != nil {
		t.Fatal(err)
	}
	// The copy: a process outside the cluster that keeps it for a while.
	holder := exec.Command("sleep", "0.3")
	holder.ExtraFiles = []*os.File{f}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	done := make(chan error, 1)
	go func() { done <- holder.Wait() }()
	if err := c.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The holder has exited by now: reaped, or a zombie whose descriptors
	// the kernel closed at its exit, before Wait could report it.
	select {
	case <-done:
	default:
		if state := procState(holder.Process.Pid); state != 'Z' && state != 'X' && state != 0 {
			t.Fatalf("Reset returned while another process still held the node's socket (its state %q)", state)
		}
	}
	again, err := bindUDP()
	if err != nil {
		t.Fatalf("binding the port again after Reset: %v", err)
	}
	again.Close()
}

// procState is the state letter of process pid in /proc (0 when it is
// gone).
func procState(pid int) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The state follows the command's closing parenthesis: "pid (comm) S ...".
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}
