package bpf

import (
	"errors"
	"fmt"
	"net/netip"
	"os"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// Firewall drops packets between blocked address pairs for every process
// under one cgroup v2 directory. Blocking and healing are single map
// updates, so a partition starts and ends in microseconds.
type Firewall struct {
	objs  firewallObjects
	links []link.Link
}

// NewFirewall loads the firewall and attaches it to the cgroup at dir.
// The attachments are plain links held by this process: they go away with
// it, so a killed lockstep leaves no BPF behind.
func NewFirewall(dir string) (*Firewall, error) {
	f := &Firewall{}
	if err := loadFirewallObjects(&f.objs, nil); err != nil {
		return nil, fmt.Errorf("loading firewall: %w", err)
	}
	cg, err := os.Open(dir)
	if err != nil {
		f.Close()
		return nil, err
	}
	defer cg.Close()
	for _, a := range []struct {
		prog *ebpf.Program
		typ  ebpf.AttachType
	}{
		{f.objs.FwEgress, ebpf.AttachCGroupInetEgress},
		{f.objs.FwIngress, ebpf.AttachCGroupInetIngress},
	} {
		l, err := link.AttachCgroup(link.CgroupOptions{Path: dir, Attach: a.typ, Program: a.prog})
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("attaching firewall to %s: %w", dir, err)
		}
		f.links = append(f.links, l)
	}
	return f, nil
}

func pairOf(src, dst netip.Addr) (firewallPair, error) {
	if !src.Is4() || !dst.Is4() {
		return firewallPair{}, fmt.Errorf("firewall: %v -> %v: IPv4 only", src, dst)
	}
	s, d := src.As4(), dst.As4()
	// The map key holds addresses in network byte order as the packet
	// does; on a little-endian host that is the bytes read as-is.
	return firewallPair{
		Src: uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24,
		Dst: uint32(d[0]) | uint32(d[1])<<8 | uint32(d[2])<<16 | uint32(d[3])<<24,
	}, nil
}

// Mode is what a block drops.
type Mode uint8

const (
	// DropAll drops every packet: a partition.
	DropAll Mode = 1
	// DropMessages drops what carries a message (TCP segments with bytes,
	// a SYN or a FIN; every packet of another protocol) and lets TCP's pure
	// acknowledgements and resets pass: the cut way of a one-way cut. Cut,
	// those would leave the other side's kernel retransmitting on its
	// real-time timer, at moments no schedule fixes.
	DropMessages Mode = 2
	// DropHandshakes drops TCP SYNs only: the way back of a one-way cut,
	// across which no new connection can open.
	DropHandshakes Mode = 3
)

// Block drops every packet from src to dst until Unblock.
func (f *Firewall) Block(src, dst netip.Addr) error { return f.BlockMode(src, dst, DropAll) }

// BlockMode drops what m says of the packets from src to dst until
// Unblock.
func (f *Firewall) BlockMode(src, dst netip.Addr, m Mode) error {
	p, err := pairOf(src, dst)
	if err != nil {
		return err
	}
	return f.objs.Blocked.Put(p, uint8(m))
}

// Unblock lets packets from src to dst through again.
func (f *Firewall) Unblock(src, dst netip.Addr) error {
	p, err := pairOf(src, dst)
	if err != nil {
		return err
	}
	if err := f.objs.Blocked.Delete(p); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return err
	}
	return nil
}

// Clear removes every block.
func (f *Firewall) Clear() error {
	var keys []firewallPair
	var k firewallPair
	var v uint8
	it := f.objs.Blocked.Iterate()
	for it.Next(&k, &v) {
		keys = append(keys, k)
	}
	if err := it.Err(); err != nil {
		return err
	}
	for _, k := range keys {
		if err := f.objs.Blocked.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return err
		}
	}
	return nil
}

// Dropped is the number of packets dropped so far.
func (f *Firewall) Dropped() (uint64, error) {
	var n uint64
	err := f.objs.Dropped.Lookup(uint32(0), &n)
	return n, err
}

// Close detaches and frees the firewall.
func (f *Firewall) Close() error {
	var errs []error
	for _, l := range f.links {
		errs = append(errs, l.Close())
	}
	f.links = nil
	errs = append(errs, f.objs.Close())
	return errors.Join(errs...)
}
