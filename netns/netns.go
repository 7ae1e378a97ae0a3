package netns

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/lockstep-dev/lockstep/internal/nsexec"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	vns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/bpf"
	"github.com/lockstep-dev/lockstep/internal/sockdiag"
	"github.com/lockstep-dev/lockstep/netcut"
)

// DefaultSubnet is used when Config.Subnet is zero. Node i (from 0) gets
// the subnet's address i+1; the last usable address is left free.
var DefaultSubnet = netip.MustParsePrefix("10.77.0.0/24")

// DefaultCgroupRoot is where cgroup v2 is mounted on this kind of machine;
// /sys/fs/cgroup is tried when it is absent.
const DefaultCgroupRoot = "/sys/fs/cgroup/unified"

// RunDir holds per-run state: hosts files and the owner record Sweep reads.
const RunDir = "/run/lockstep"

// EtcNetns holds a hosts file per node where `ip netns exec` looks for
// it, so a user debugging a node by hand resolves names as its processes do.
const EtcNetns = "/etc/netns"

// namePrefix starts every object's name, so sweeps find them.
const namePrefix = "lsk"

// Config describes a cluster.
type Config struct {
	// Prefix names this cluster's objects; "" generates a fresh one.
	Prefix string
	// Subnet holds the node addresses; zero means DefaultSubnet.
	Subnet netip.Prefix
	// Nodes are the node names, valid host names, in order.
	Nodes []string
	// CgroupRoot is the cgroup v2 mount; "" means DefaultCgroupRoot.
	CgroupRoot string
	// Limits are each node's, by name (none when absent); Total bounds
	// all the cluster's nodes together (memory and pids), in the cgroup
	// that holds theirs.
	Limits map[string]Limits
	Total  Limits
}

// Node is one node's slice of the network.
type Node struct {
	Name      string
	Addr      netip.Addr
	MAC       net.HardwareAddr
	NetnsPath string // bind mount of the namespace, for setns
	HostsFile string // to bind-mount over /etc/hosts
	CgroupDir string // the node's cgroup v2 directory
	// LimitCgroups are the node's cgroups in v1 hierarchies (memory,
	// pids) where this host keeps those controllers; its processes join
	// them beside CgroupDir.
	LimitCgroups []string
	hostVeth     string
	limitV1      map[string]string // controller -> v1 directory
	limitV2      map[string]bool   // controllers enforced in CgroupDir

	diagMu sync.Mutex
	diag   *sockdiag.Sock // opened in the namespace on first use (Listens)
}

// Cluster is a built network. Reset it between trials; Close it at the end.
type Cluster struct {
	prefix   string
	subnet   netip.Prefix
	nodes    []*Node
	byName   map[string]*Node
	bridge   string
	runDir   string
	cgParent string
	limits   *limitCgroups
	fw       firewall
}

var hostLabel = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?$`)

// ValidHostName reports whether a node name can be a host name in the
// cluster's hosts files (one DNS label).
func ValidHostName(name string) bool { return hostLabel.MatchString(name) }

// validate checks a config before anything is created.
func validate(cfg *Config) error {
	if cfg.Subnet == (netip.Prefix{}) {
		cfg.Subnet = DefaultSubnet
	}
	if !cfg.Subnet.IsValid() || !cfg.Subnet.Addr().Is4() {
		return fmt.Errorf("subnet %v: must be a valid IPv4 subnet", cfg.Subnet)
	}
	if b := cfg.Subnet.Bits(); b < 8 || b > 30 {
		return fmt.Errorf("subnet %v: prefix length must be between 8 and 30", cfg.Subnet)
	}
	cfg.Subnet = cfg.Subnet.Masked()
	if len(cfg.Nodes) == 0 {
		return errors.New("no nodes")
	}
	if max := 1<<(32-cfg.Subnet.Bits()) - 3; len(cfg.Nodes) > max {
		return fmt.Errorf("subnet %v holds at most %d nodes, got %d", cfg.Subnet, max, len(cfg.Nodes))
	}
	seen := map[string]bool{}
	for _, n := range cfg.Nodes {
		if !hostLabel.MatchString(n) {
			return fmt.Errorf("node %q: not a valid host name", n)
		}
		if seen[n] {
			return fmt.Errorf("node %q: duplicate name", n)
		}
		seen[n] = true
	}
	// A subnet that overlaps the host's own addresses or routes would make
	// cluster traffic ambiguous.
	addrs, err := retryDump(func() ([]netlink.Addr, error) { return netlink.AddrList(nil, netlink.FAMILY_V4) })
	if err != nil {
		return fmt.Errorf("listing host addresses: %w", err)
	}
	for _, a := range addrs {
		ap, ok := netip.AddrFromSlice(a.IP.To4())
		if !ok {
			continue
		}
		hp := netip.PrefixFrom(ap, onesOf(a.IPNet)).Masked()
		if ap.IsLoopback() {
			continue
		}
		if cfg.Subnet.Overlaps(hp) {
			return fmt.Errorf("subnet %v overlaps host network %v (%s): choose another", cfg.Subnet, hp, a.Label)
		}
	}
	return nil
}

func onesOf(n *net.IPNet) int {
	o, _ := n.Mask.Size()
	return o
}

func newPrefix() string {
	var b [3]byte
	rand.Read(b[:])
	return namePrefix + hex.EncodeToString(b[:])
}

// New builds the network for cfg.Nodes. On error nothing is left behind.
func New(ctx context.Context, cfg Config) (c *Cluster, err error) {
	if err := validate(&cfg); err != nil {
		return nil, err
	}
	if cfg.Prefix == "" {
		cfg.Prefix = newPrefix()
	}
	if len(cfg.Prefix) > 10 {
		return nil, fmt.Errorf("prefix %q: at most 10 characters (interface names)", cfg.Prefix)
	}
	cgRoot, err := cgroupRoot(cfg.CgroupRoot)
	if err != nil {
		return nil, err
	}
	c = &Cluster{
		prefix: cfg.Prefix, subnet: cfg.Subnet, byName: map[string]*Node{},
		bridge:   cfg.Prefix + "br",
		runDir:   filepath.Join(RunDir, cfg.Prefix),
		cgParent: filepath.Join(cgRoot, "lockstep-"+cfg.Prefix),
	}
	// `return nil, err` sets c to nil before this runs: close what was
	// made through its own pointer.
	made := c
	defer func() {
		if err != nil {
			made.Close()
			c = nil
		}
	}()
	if err := os.MkdirAll(c.runDir, 0o755); err != nil {
		return nil, err
	}
	if err := writeOwner(c.runDir); err != nil {
		return nil, err
	}
	if err := os.Mkdir(c.cgParent, 0o755); err != nil {
		return nil, fmt.Errorf("creating cgroup %s: %w", c.cgParent, err)
	}
	wantCPU := false
	for _, l := range cfg.Limits {
		wantCPU = wantCPU || l.CPUWeight > 0
	}
	if err := c.setupLimits(cgRoot, cfg.Total, cfg.Total != (Limits{}) || len(cfg.Limits) > 0, wantCPU); err != nil {
		return nil, err
	}
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: c.bridge}}
	if err := netlink.LinkAdd(br); err != nil {
		return nil, fmt.Errorf("creating bridge %s: %w", c.bridge, err)
	}
	if err := noIPv6(c.bridge); err != nil {
		return nil, err
	}
	if err := netlink.LinkSetUp(br); err != nil {
		return nil, fmt.Errorf("bringing up bridge %s: %w", c.bridge, err)
	}
	a := cfg.Subnet.Addr()
	for i, name := range cfg.Nodes {
		a = a.Next()
		n := &Node{
			Name: name, Addr: a,
			MAC:       net.HardwareAddr{0x02, 0x4c, 0x53, byte(i >> 16), byte(i >> 8), byte(i)},
			NetnsPath: filepath.Join("/run/netns", cfg.Prefix+"-"+name),
			HostsFile: filepath.Join(EtcNetns, cfg.Prefix+"-"+name, "hosts"),
			CgroupDir: filepath.Join(c.cgParent, name),
			hostVeth:  fmt.Sprintf("%sv%d", cfg.Prefix, i),
		}
		c.nodes = append(c.nodes, n)
		c.byName[name] = n
		if err := c.addNode(n, br); err != nil {
			return nil, fmt.Errorf("node %s: %w", name, err)
		}
		if err := c.limits.addNode(n, cfg.Limits[name]); err != nil {
			return nil, fmt.Errorf("node %s: %w", name, err)
		}
	}
	hosts := "127.0.0.1\tlocalhost\n::1\tlocalhost\n"
	for _, n := range c.nodes {
		hosts += n.Addr.String() + "\t" + n.Name + "\n"
	}
	for _, n := range c.nodes {
		if err := os.MkdirAll(filepath.Dir(n.HostsFile), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(n.HostsFile, []byte(hosts), 0o644); err != nil {
			return nil, err
		}
		if err := c.neighbours(n); err != nil {
			return nil, fmt.Errorf("node %s: %w", n.Name, err)
		}
	}
	if err := c.waitLinks(ctx); err != nil {
		return nil, err
	}
	fw, err := newFirewall(c.cgParent)
	if err != nil {
		return nil, err
	}
	c.fw = fw
	return c, ctx.Err()
}

// linkWait bounds the wait for the kernel to take the cluster's links up.
const linkWait = 30 * time.Second

// waitLinks returns once every node's veth pair is up at both ends and its
// bridge port forwards. A link set up is not yet usable: the kernel's
// link watcher, a work item that runs at most once a second and later on a
// loaded machine, gives the device its queue (until then every packet it
// sends is silently dropped) and lets the bridge port forward. A datagram
// delivered in that window was lost, so whether a trial's first messages
// arrived depended on timing (a replay's fresh cluster lost one its trace
// had delivered).
func (c *Cluster) waitLinks(ctx context.Context) error {
	deadline := time.Now().Add(linkWait)
	for _, n := range c.nodes {
		for {
			ready, err := c.linkReady(n)
			if err != nil {
				return fmt.Errorf("node %s: %w", n.Name, err)
			}
			if ready {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("node %s: link %s not up after %v", n.Name, n.hostVeth, linkWait)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Millisecond):
			}
		}
	}
	return nil
}

// linkReady says whether n's eth0 and its host end are operationally up
// and the host end's bridge port forwards.
func (c *Cluster) linkReady(n *Node) (bool, error) {
	host, err := netlink.LinkByName(n.hostVeth)
	if err != nil {
		return false, err
	}
	if host.Attrs().OperState != netlink.OperUp {
		return false, nil
	}
	// 3 is BR_STATE_FORWARDING; a /sys of another namespace has no such file.
	if b, err := os.ReadFile("/sys/class/net/" + n.hostVeth + "/brport/state"); err == nil && strings.TrimSpace(string(b)) != "3" {
		return false, nil
	}
	ns, err := vns.GetFromPath(n.NetnsPath)
	if err != nil {
		return false, err
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return false, err
	}
	defer h.Close()
	eth, err := h.LinkByName("eth0")
	if err != nil {
		return false, err
	}
	return eth.Attrs().OperState == netlink.OperUp, nil
}

// CgroupRoot is where the cgroup v2 hierarchy a cluster's cgroups go
// below is mounted: root, or for "" DefaultCgroupRoot, else
// /sys/fs/cgroup.
func CgroupRoot(root string) (string, error) { return cgroupRoot(root) }

func cgroupRoot(root string) (string, error) {
	cands := []string{root}
	if root == "" {
		cands = []string{DefaultCgroupRoot, "/sys/fs/cgroup"}
	}
	for _, r := range cands {
		var st unix.Statfs_t
		if unix.Statfs(r, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			return r, nil
		}
	}
	return "", fmt.Errorf("no cgroup v2 hierarchy at %s", strings.Join(cands, " or "))
}

// Do runs f on a locked OS thread inside the node's network namespace.
func (n *Node) Do(f func() error) error { return nsexec.Do(n.NetnsPath, f) }

// Listens reports whether some socket in the node's namespace listens on
// TCP port, as Listening does, through a sock_diag socket kept open in the
// namespace: lockstep asks at every quiescent point while a node waits for
// another's readiness, and entering the namespace each time cost ~4 ms.
func (n *Node) Listens(port uint16) (bool, error) {
	n.diagMu.Lock()
	defer n.diagMu.Unlock()
	if err := n.openDiag(); err != nil {
		return false, err
	}
	return n.diag.Listening(port)
}

// ListenPorts lists the ports the node listens on (TCP), and whether it
// has a TCP connection (to or from another node, or within itself).
func (n *Node) ListenPorts() (ports []uint16, connected bool, err error) {
	n.diagMu.Lock()
	defer n.diagMu.Unlock()
	if err := n.openDiag(); err != nil {
		return nil, false, err
	}
	if ports, err = n.diag.ListenPorts(); err != nil {
		return nil, false, err
	}
	conns, err := n.diag.TCP()
	return ports, len(conns) > 0, err
}

// openDiag opens the node's sock_diag socket on first use.
//
// Precondition: n.diagMu is held.
func (n *Node) openDiag() error {
	if n.diag != nil {
		return nil
	}
	err := n.Do(func() error {
		d, err := sockdiag.Open("")
		n.diag = d
		return err
	})
	if err != nil {
		return fmt.Errorf("opening a sock_diag socket in %s: %w", n.NetnsPath, err)
	}
	return nil
}

func (n *Node) closeDiag() {
	n.diagMu.Lock()
	defer n.diagMu.Unlock()
	if n.diag != nil {
		n.diag.Close()
		n.diag = nil
	}
}

// netnsDir is where named network namespaces are bound, as iproute2 does.
const netnsDir = "/run/netns"

// sharedNetnsDir makes netnsDir a shared mount point of its own, as
// `ip netns add` does the first time it runs. Otherwise the first `ip netns
// add` after lockstep's namespaces exist binds the directory over itself
// and hides their mounts underneath: their files can then be neither
// opened as namespaces nor removed (EBUSY) until the bind is undone.
func sharedNetnsDir() error {
	if err := os.MkdirAll(netnsDir, 0o755); err != nil {
		return err
	}
	err := unix.Mount("", netnsDir, "none", unix.MS_SHARED|unix.MS_REC, "")
	if err == unix.EINVAL { // not a mount point yet
		if err := unix.Mount(netnsDir, netnsDir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("binding %s: %w", netnsDir, err)
		}
		err = unix.Mount("", netnsDir, "none", unix.MS_SHARED|unix.MS_REC, "")
	}
	if err != nil {
		return fmt.Errorf("making %s a shared mount: %w", netnsDir, err)
	}
	return nil
}

// childTables size the TCP and UDP hash tables a node's namespace gets of
// its own (net.ipv4.tcp_child_ehash_entries, udp_child_hash_entries: Linux
// 6.1 and 6.2). By default a namespace shares the host's, sized by its
// memory (262,144 buckets on a host of 24 GiB), and every sock_diag dump in
// a node's namespace walked all of them: a reused cluster's reset between
// trials, which lists each node's connections, took 8 ms of a 35 ms trial.
// A node holds a few hundred sockets at most; a longer chain past that
// costs little.
var childTables = [][2]string{
	{"tcp_child_ehash_entries", "4096"},
	{"udp_child_hash_entries", "256"},
}

func newNamedNS(name string) error {
	if err := sharedNetnsDir(); err != nil {
		return err
	}
	// NewNamed leaves the thread in the new namespace; Do brings it back.
	return nsexec.Do("", func() error {
		// The sizes are read from the namespace a new one is made from:
		// a scratch one of this thread's, gone once the thread leaves it,
		// so that the host's settings stay as they are. Where they cannot
		// be set (a kernel without them, a read-only /proc/sys) the node
		// shares the host's tables, as before: slower dumps, nothing else.
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("making the namespace to make it from: %w", err)
		}
		for _, kv := range childTables {
			os.WriteFile("/proc/sys/net/ipv4/"+kv[0], []byte(kv[1]), 0)
		}
		ns, err := vns.NewNamed(name)
		if err != nil {
			return err
		}
		ns.Close()
		return nil
	})
}

func (c *Cluster) addNode(n *Node, br *netlink.Bridge) error {
	if err := newNamedNS(filepath.Base(n.NetnsPath)); err != nil {
		return fmt.Errorf("creating namespace: %w", err)
	}
	ns, err := vns.GetFromPath(n.NetnsPath)
	if err != nil {
		return err
	}
	defer ns.Close()
	veth := &netlink.Veth{
		LinkAttrs:        netlink.LinkAttrs{Name: n.hostVeth, MasterIndex: br.Index},
		PeerName:         "eth0",
		PeerHardwareAddr: n.MAC,
		PeerNamespace:    netlink.NsFd(int(ns)),
	}
	if err := netlink.LinkAdd(veth); err != nil {
		return fmt.Errorf("creating veth %s: %w", n.hostVeth, err)
	}
	host, err := netlink.LinkByName(n.hostVeth)
	if err != nil {
		return err
	}
	if err := noIPv6(n.hostVeth); err != nil {
		return err
	}
	if err := netlink.LinkSetUp(host); err != nil {
		return err
	}
	if err := n.Do(func() error { return noIPv6("all", "default") }); err != nil {
		return err
	}
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return err
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		return err
	}
	if err := h.LinkSetUp(lo); err != nil {
		return err
	}
	eth, err := h.LinkByName("eth0")
	if err != nil {
		return err
	}
	ipn := &net.IPNet{IP: n.Addr.AsSlice(), Mask: net.CIDRMask(c.subnet.Bits(), 32)}
	if err := h.AddrAdd(eth, &netlink.Addr{IPNet: ipn}); err != nil {
		return fmt.Errorf("adding address %v: %w", n.Addr, err)
	}
	if err := h.LinkSetUp(eth); err != nil {
		return err
	}
	// Acknowledge every segment at once. A receiver that does not read
	// (a node lockstep holds at a stop) delays its ACKs by 40 ms or more of
	// real time, and the sender's next segments wait for them (congestion
	// window, Nagle): a delivery would take that long to arrive, and how
	// much had arrived by some instant would depend on timing.
	if err := h.RouteReplace(&netlink.Route{
		LinkIndex: eth.Attrs().Index, Dst: &net.IPNet{IP: ipn.IP.Mask(ipn.Mask), Mask: ipn.Mask},
		Src: ipn.IP, Scope: netlink.SCOPE_LINK, Protocol: unix.RTPROT_KERNEL, QuickACK: 1,
	}); err != nil {
		return fmt.Errorf("setting quick ACKs on the route of %v: %w", n.Addr, err)
	}
	if err := os.Mkdir(n.CgroupDir, 0o755); err != nil {
		return fmt.Errorf("creating cgroup %s: %w", n.CgroupDir, err)
	}
	return n.Do(func() error {
		for _, kv := range tcpSysctls {
			if err := os.WriteFile("/proc/sys/net/ipv4/"+kv[0], []byte(kv[1]), 0); err != nil {
				return fmt.Errorf("setting net.ipv4.%s: %w", kv[0], err)
			}
		}
		return nil
	})
}

// tcpSysctls are set in every node's namespace.
var tcpSysctls = [][2]string{
	// No TIME_WAIT sockets: a reused namespace starts each trial without
	// the last trial's connections holding ports.
	{"tcp_max_tw_buckets", "0"},
	// Socket buffers at their full size from the start, not grown by the
	// kernel's autotuning, which follows real time (bytes read per
	// round trip, the congestion window). lockstep lets up to 4 MiB wait
	// unread on a connection (the tracer's DeliverCap) and writes up to
	// 1 MiB at once: with room for that (kernel overhead included), every
	// delivered byte reaches the receiving socket and a delivery is never
	// cut short by a full send buffer, so neither depends on timing.
	{"tcp_rmem", "4096 16777216 16777216"},
	{"tcp_wmem", "4096 4194304 4194304"},
	// The ports the kernel picks (one the tracer leaves to it) come from
	// above 62999: the tracer hands out 32768-60999 itself, in the
	// schedule's order, and 61000-62999 to connects within a node, and a
	// port the kernel took there first made the tracer skip to the next,
	// renumbering the node's later connections (a replay of Mnesia parted
	// on it: a node's first connect to another had 32769 in the trace,
	// 32768 in every other trial and in the replay). The kernel's pick
	// for one pair of addresses walks its range from namespace to
	// namespace, so in the shared range it collided now and then.
	{"ip_local_port_range", "63000 65535"},
}

// noIPv6 disables IPv6 on these interfaces of the calling thread's
// network namespace ("all" and "default" for every one), before they come
// up: the cluster is IPv4, and a link-local address on the bridge let a
// node reach the host's services listening on [::]. A kernel without IPv6
// has nothing to disable.
func noIPv6(ifaces ...string) error {
	for _, name := range ifaces {
		err := os.WriteFile("/proc/sys/net/ipv6/conf/"+name+"/disable_ipv6", []byte("1"), 0)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("disabling IPv6 on %s: %w", name, err)
		}
	}
	return nil
}

// neighbours installs permanent ARP entries for every other node so the
// first connection after link-up does not wait on address resolution.
func (c *Cluster) neighbours(n *Node) error {
	ns, err := vns.GetFromPath(n.NetnsPath)
	if err != nil {
		return err
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return err
	}
	defer h.Close()
	eth, err := h.LinkByName("eth0")
	if err != nil {
		return err
	}
	for _, o := range c.nodes {
		if o == n {
			continue
		}
		if err := h.NeighAdd(&netlink.Neigh{
			LinkIndex: eth.Attrs().Index, Family: unix.AF_INET, State: netlink.NUD_PERMANENT,
			IP: o.Addr.AsSlice(), HardwareAddr: o.MAC,
		}); err != nil {
			return fmt.Errorf("adding neighbour %s: %w", o.Name, err)
		}
	}
	return nil
}

// Prefix is the name prefix of this cluster's objects.
func (c *Cluster) Prefix() string { return c.prefix }

// Nodes lists the nodes in order.
func (c *Cluster) Nodes() []*Node { return c.nodes }

// Node returns the named node, or nil.
func (c *Cluster) Node(name string) *Node { return c.byName[name] }

// Firewall is the cluster's firewall, by node address, as the cuts of
// the network put it up and take it down (netcut.Set): a block lasts
// until it is lifted or the cluster's next Reset. It drops packets, as a
// real network loses them; it returns no errors to the nodes.
func (c *Cluster) Firewall() netcut.Firewall[netip.Addr] { return cutFirewall{c.fw} }

// cutFirewall writes netcut's links into package bpf's map of blocked
// address pairs.
type cutFirewall struct{ fw firewall }

func (f cutFirewall) Block(l netcut.Link[netip.Addr], d netcut.Drop) error {
	// What the BPF program drops for what the cut drops.
	var m bpf.Mode
	switch d {
	case netcut.DropAll:
		m = bpf.DropAll
	case netcut.DropMessages:
		m = bpf.DropMessages
	case netcut.DropHandshakes:
		m = bpf.DropHandshakes
	default:
		return fmt.Errorf("firewall: no mode drops %v", d)
	}
	return f.fw.BlockMode(l.From, l.To, m)
}

func (f cutFirewall) Unblock(l netcut.Link[netip.Addr]) error { return f.fw.Unblock(l.From, l.To) }

// Reset readies the cluster for another trial: any process still in a
// node's namespace or cgroup is killed, partitions are healed. Sockets
// close with their processes; TIME_WAIT is disabled in every namespace.
func (c *Cluster) Reset(ctx context.Context) error {
	if err := c.fw.Clear(); err != nil {
		return err
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		pids := c.members()
		if len(pids) == 0 {
			c.resetPeaks()
			if err := c.clearSockets(); err != nil {
				return err
			}
			return c.awaitUnbound(ctx, deadline)
		}
		for _, pid := range pids {
			unix.Kill(pid, unix.SIGKILL)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v survive in cluster %s", pids, c.prefix)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		time.Sleep(time.Millisecond)
	}
}

// clearSockets destroys the TCP sockets the killed processes left in the
// nodes' namespaces (orphans still sending FINs, TIME_WAIT), so that none
// of a trial's packets reach the next and a port a trial binds is free
// again, as in a fresh namespace.
func (c *Cluster) clearSockets() error {
	return c.eachDiag(func(_ *Node, d *sockdiag.Sock) error {
		conns, err := d.TCP()
		if err != nil {
			return fmt.Errorf("listing sockets: %w", err)
		}
		for _, s := range conns {
			err := d.Destroy(s.Local, s.Remote)
			if errors.Is(err, unix.EOPNOTSUPP) {
				return nil // a kernel without SOCK_DESTROY: the orphans time out as before
			}
			if err != nil && !errors.Is(err, sockdiag.ErrNoSocket) {
				return fmt.Errorf("closing %v>%v: %w", s.Local, s.Remote, err)
			}
		}
		return nil
	})
}

// eachDiag calls f in every node's namespace with a sock_diag socket
// there, and joins their errors, each naming its node.
func (c *Cluster) eachDiag(f func(n *Node, d *sockdiag.Sock) error) error {
	var errs []error
	for _, n := range c.nodes {
		err := n.Do(func() error {
			d, err := sockdiag.Open("")
			if err != nil {
				return err
			}
			defer d.Close()
			return f(n, d)
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("node %s: %w", n.Name, err))
		}
	}
	return errors.Join(errs...)
}

// awaitUnbound waits until no node's namespace holds a UDP socket or a TCP
// listener, as in a fresh namespace: the next trial's programs bind their
// ports there. The processes are gone, but a socket lives while any
// descriptor of it does, and lockstep's process forks (another job's
// tracer starts its sentinel) with every descriptor it holds, its
// duplicates of this cluster's sockets among them, until the child execs:
// under load, for as long as the next trial's start.
func (c *Cluster) awaitUnbound(ctx context.Context, deadline time.Time) error {
	// A socket lockstep's own process holds is its owner's business (a
	// caller's listener in a node); only others' copies are waited for.
	var own map[uint32]bool
	mine := func(inode uint32) bool {
		if own == nil {
			own = ownSockets()
		}
		return own[inode]
	}
	for {
		own = nil
		var left []string
		err := c.eachDiag(func(n *Node, d *sockdiag.Sock) error {
			bound, err := d.Bound()
			if err != nil {
				return fmt.Errorf("listing sockets: %w", err)
			}
			for _, b := range bound {
				if !mine(b.Inode) {
					left = append(left, n.Name+" "+b.Local.String())
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("sockets survive their processes in cluster %s: %s", c.prefix, strings.Join(left, ", "))
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		time.Sleep(time.Millisecond)
	}
}

// ownSockets are the inodes of the sockets this process holds.
func ownSockets() map[uint32]bool {
	own := map[uint32]bool{}
	ents, _ := os.ReadDir("/proc/self/fd")
	for _, e := range ents {
		l, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil {
			continue
		}
		var ino uint32
		if _, err := fmt.Sscanf(l, "socket:[%d]", &ino); err == nil {
			own[ino] = true
		}
	}
	return own
}

// members lists the pids in any node's cgroup or namespace.
func (c *Cluster) members() []int {
	var pids []int
	seen := map[int]bool{}
	for _, n := range c.nodes {
		b, err := os.ReadFile(filepath.Join(n.CgroupDir, "cgroup.procs"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && !seen[pid] {
				seen[pid] = true
				pids = append(pids, pid)
			}
		}
	}
	inodes := map[uint64]bool{}
	for _, n := range c.nodes {
		var st unix.Stat_t
		if unix.Stat(n.NetnsPath, &st) == nil {
			inodes[st.Ino] = true
		}
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || seen[pid] {
			continue
		}
		var st unix.Stat_t
		if unix.Stat("/proc/"+e.Name()+"/ns/net", &st) == nil && inodes[st.Ino] {
			seen[pid] = true
			pids = append(pids, pid)
		}
	}
	return pids
}

// Close kills what remains and removes every object of the cluster.
func (c *Cluster) Close() error {
	var errs []error
	for _, n := range c.nodes {
		n.closeDiag()
	}
	if c.fw != nil {
		errs = append(errs, c.fw.Close())
	}
	for _, pid := range c.members() {
		unix.Kill(pid, unix.SIGKILL)
	}
	errs = append(errs, removeObjects(c.prefix)...)
	return errors.Join(errs...)
}

// Subnet is the cluster's network.
func (c *Cluster) Subnet() netip.Prefix { return c.subnet }
