package spec

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/goccy/go-yaml/ast"
)

// unusableNets are IPv4 ranges a cluster cannot use: their addresses are
// routed specially (loopback, link-local) or cannot be unicast addresses
// at all, so a correct client and server would fail to talk.
var unusableNets = []struct {
	pfx  netip.Prefix
	what string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "\"this network\" (0.0.0.0/8)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback (127.0.0.0/8)"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local (169.254.0.0/16)"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast (224.0.0.0/4)"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved (240.0.0.0/4)"},
}

// HostNets lists the host's own IPv4 networks, which a cluster subnet
// must not overlap (traffic to them would be ambiguous). Loopback is left
// out: it is refused on its own.
func HostNets() ([]netip.Prefix, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("listing host addresses: %w", err)
	}
	var out []netip.Prefix
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(ipn.IP.To4())
		if !ok || ip.IsLoopback() {
			continue
		}
		ones, _ := ipn.Mask.Size()
		out = append(out, netip.PrefixFrom(ip, ones).Masked())
	}
	return out, nil
}

// networkFields are the network section's.
var networkFields = []field[*draft]{
	{"subnet", decodeSubnet},
}

func decodeSubnet(d *decoder, v ast.Node, path string, b *draft) error {
	str, err := d.str(v, path)
	if err != nil {
		return err
	}
	pfx, perr := netip.ParsePrefix(str)
	if perr != nil {
		return d.errf(v, path, "invalid subnet %q", str)
	}
	if !pfx.Addr().Is4() {
		return d.errf(v, path, "must be an IPv4 subnet, got %s", str)
	}
	if pfx.Bits() < 8 || pfx.Bits() > 30 {
		return d.errf(v, path, "prefix length must be between 8 and 30, got /%d", pfx.Bits())
	}
	if err := d.usableSubnet(v, pfx.Masked()); err != nil {
		return err
	}
	b.s.Network.Subnet = pfx.Masked()
	b.subnet = v
	return nil
}

// defaultSubnet checks the default subnet of a spec that gives none: it
// must not clash with the host either.
func (d *decoder) defaultSubnet(s *Spec) error {
	err := d.usableSubnet(nil, s.Network.Subnet)
	var se *Error
	if errors.As(err, &se) {
		se.Msg = "the default " + se.Msg + " (set network.subnet)"
	}
	return err
}

// usableSubnet refuses a subnet whose addresses cannot carry the cluster's
// traffic: a special-purpose range, or one of the host's own networks.
func (d *decoder) usableSubnet(n ast.Node, pfx netip.Prefix) error {
	for _, u := range unusableNets {
		if pfx.Overlaps(u.pfx) {
			return d.errf(n, "network.subnet", "%s overlaps %s addresses: choose a private range such as 10.77.0.0/24", pfx, u.what)
		}
	}
	if d.hostNets == nil {
		return nil
	}
	host, err := d.hostNets()
	if err != nil {
		return d.errf(n, "network.subnet", "%v", err)
	}
	for _, h := range host {
		if pfx.Overlaps(h) {
			return d.errf(n, "network.subnet", "%s overlaps the host's network %s: choose another", pfx, h)
		}
	}
	return nil
}

// nodeAddrs assigns node i the address base+i+1, the rule package netns
// follows too.
func nodeAddrs(subnet netip.Prefix, n int) ([]netip.Addr, error) {
	size := 1 << (32 - subnet.Bits())
	if n > size-3 { // network, bridge and broadcast addresses are taken
		return nil, fmt.Errorf("%d nodes do not fit in %s (at most %d)", n, subnet, size-3)
	}
	var out []netip.Addr
	a := subnet.Masked().Addr()
	for i := 0; i < n; i++ {
		a = a.Next()
		out = append(out, a)
	}
	return out, nil
}
