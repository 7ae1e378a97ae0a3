package bpf

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"
)

// EventKind says what a connection-tracking Event records.
type EventKind uint8

const (
	EvSend        EventKind = 1 // bytes written to a socket
	EvRecv        EventKind = 2 // bytes consumed from a socket (not peeked)
	EvConnect     EventKind = 3 // a connect(2) by a process of the cgroup
	EvEstablished EventKind = 4 // active open completed
	EvAccepted    EventKind = 5 // passive open completed
	EvClose       EventKind = 6 // the socket reached TCP_CLOSE
)

func (k EventKind) String() string {
	switch k {
	case EvSend:
		return "send"
	case EvRecv:
		return "recv"
	case EvConnect:
		return "connect"
	case EvEstablished:
		return "established"
	case EvAccepted:
		return "accepted"
	case EvClose:
		return "close"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Event is one record of the kernel's view of a socket operation.
type Event struct {
	Kind   EventKind
	Proto  uint8 // unix.IPPROTO_TCP or IPPROTO_UDP
	Cgroup uint64
	// PID and TID are the task's ids as lockstep's PID namespace numbers
	// them for a send or a recv (0 for a task outside it), the kernel's
	// own for the other kinds.
	PID   int
	TID   int
	Netns uint32
	// Local and Remote are the socket's own ends (for EvConnect, Remote
	// is the address asked for and Local is unset).
	Local, Remote netip.AddrPort
	// Seq is the TCP sequence number of the first byte sent or consumed;
	// for EvEstablished/EvAccepted it is the socket's own ISN and PeerISN
	// the other end's.
	Seq, PeerISN uint32
	Len          int
}

// Conn is a connection direction's identity: bytes flow from Src to Dst.
type Conn struct{ Src, Dst netip.AddrPort }

// Flow returns the direction of the stream the event touched: a send
// writes Local→Remote, a recv consumes Remote→Local.
func (e Event) Flow() Conn {
	if e.Kind == EvRecv {
		return Conn{Src: e.Remote, Dst: e.Local}
	}
	return Conn{Src: e.Local, Dst: e.Remote}
}

// Overlap reports how many bytes of stream the two events share: a send
// and a recv of one direction of one connection. Sequence numbers wrap,
// so ranges are compared relative to the send's start.
func Overlap(send, recv Event) int {
	if send.Flow() != recv.Flow() || send.Proto != unix.IPPROTO_TCP {
		return 0
	}
	start := int64(int32(recv.Seq - send.Seq)) // recv's start relative to the send's
	lo := max(start, 0)
	hi := min(start+int64(recv.Len), int64(send.Len))
	return int(max(hi-lo, 0))
}

// Conntrack is the loaded connection-tracking programs: the sock_send_length
// and sock_recv_length tracepoints (BTF-typed, CO-RE) for every socket of a
// watched namespace, and sockops plus connect4 on one cgroup v2 directory.
// Links are held by this process only, so they die with it.
type Conntrack struct {
	objs  conntrackObjects
	links []link.Link
	rd    *ringbuf.Reader
}

// numberInOwnPidns has the programs record a send's or recv's pid and
// tid as this process's PID namespace numbers them, as Event's PID and
// TID say: in a container, the kernel's own numbers are not the ones
// os.Getpid gives, and no write would be taken for lockstep's own.
func numberInOwnPidns(spec *ebpf.CollectionSpec) error {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/ns/pid", &st); err != nil {
		return fmt.Errorf("this process's PID namespace: %w", err)
	}
	for name, v := range map[string]uint64{"pidns_dev": st.Dev, "pidns_ino": st.Ino} {
		vs, ok := spec.Variables[name]
		if !ok {
			return fmt.Errorf("no variable %s", name)
		}
		if err := vs.Set(v); err != nil {
			return fmt.Errorf("setting %s: %w", name, err)
		}
	}
	return nil
}

// NewConntrack loads the programs and attaches them; cgroupDir scopes the
// sockops and connect4 hooks (the campaign's cgroup; "" skips them); k
// (nil: a cache of its own) shares what loads decode of the kernel's types.
func NewConntrack(cgroupDir string, k *Kernel) (*Conntrack, error) {
	c := &Conntrack{}
	spec, err := loadConntrack()
	if err != nil {
		return nil, fmt.Errorf("loading conntrack: %w", err)
	}
	if err := numberInOwnPidns(spec); err != nil {
		return nil, fmt.Errorf("loading conntrack: %w", err)
	}
	if err := spec.LoadAndAssign(&c.objs, k.options()); err != nil {
		return nil, fmt.Errorf("loading conntrack: %w", err)
	}
	for _, p := range []*ebpf.Program{c.objs.OnSend, c.objs.OnRecv} {
		l, err := link.AttachTracing(link.TracingOptions{Program: p})
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("attaching %v: %w", p, err)
		}
		c.links = append(c.links, l)
	}
	if cgroupDir != "" {
		for _, a := range []struct {
			prog *ebpf.Program
			typ  ebpf.AttachType
		}{
			{c.objs.OnSockops, ebpf.AttachCGroupSockOps},
			{c.objs.OnConnect4, ebpf.AttachCGroupInet4Connect},
		} {
			l, err := link.AttachCgroup(link.CgroupOptions{Path: cgroupDir, Attach: a.typ, Program: a.prog})
			if err != nil {
				c.Close()
				return nil, fmt.Errorf("attaching conntrack to %s: %w", cgroupDir, err)
			}
			c.links = append(c.links, l)
		}
	}
	rd, err := ringbuf.NewReader(c.objs.Events)
	if err != nil {
		c.Close()
		return nil, err
	}
	c.rd = rd
	return c, nil
}

// WatchNetns adds the network namespace at path (e.g. /run/netns/x or
// /proc/self/ns/net) to the traced set.
func (c *Conntrack) WatchNetns(path string) error {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fmt.Errorf("conntrack: %w", err)
	}
	return c.objs.Netns.Put(uint32(st.Ino), uint8(1))
}

// Lost is how many events the kernel dropped because the ring was full.
func (c *Conntrack) Lost() (uint64, error) {
	var v uint64
	err := c.objs.Lost.Lookup(uint32(0), &v)
	return v, err
}

// Drain returns every event recorded so far without blocking.
func (c *Conntrack) Drain() ([]Event, error) {
	var out []Event
	c.rd.SetDeadline(pastDeadline)
	for {
		rec, err := c.rd.Read()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		e, err := decodeEvent(rec.RawSample)
		if err != nil {
			return out, err
		}
		out = append(out, e)
	}
}

// Next blocks for one event.
func (c *Conntrack) Next(ctx context.Context) (Event, error) {
	stop := context.AfterFunc(ctx, func() { c.rd.SetDeadline(pastDeadline) })
	defer stop()
	c.rd.SetDeadline(noDeadline)
	rec, err := c.rd.Read()
	if err != nil {
		if ctx.Err() != nil {
			return Event{}, ctx.Err()
		}
		return Event{}, err
	}
	return decodeEvent(rec.RawSample)
}

// Close detaches and frees everything.
func (c *Conntrack) Close() error {
	var errs []error
	if c.rd != nil {
		errs = append(errs, c.rd.Close())
	}
	for _, l := range c.links {
		errs = append(errs, l.Close())
	}
	errs = append(errs, c.objs.Close())
	return errors.Join(errs...)
}

func decodeEvent(b []byte) (Event, error) {
	var r conntrackEvent
	if _, err := binary.Decode(b, binary.LittleEndian, &r); err != nil {
		return Event{}, fmt.Errorf("conntrack: short event (%d bytes): %w", len(b), err)
	}
	ip := func(v uint32) netip.Addr {
		var a [4]byte
		binary.LittleEndian.PutUint32(a[:], v) // stored in network order
		return netip.AddrFrom4(a)
	}
	return Event{
		Kind: EventKind(r.Kind), Proto: r.Proto, Cgroup: r.Cgroup,
		PID: int(r.Pid), TID: int(r.Tid), Netns: r.Netns,
		Local:  netip.AddrPortFrom(ip(r.Saddr), r.Sport),
		Remote: netip.AddrPortFrom(ip(r.Daddr), r.Dport),
		Seq:    r.Seq, PeerISN: r.Ack, Len: int(r.Len),
	}, nil
}

var (
	pastDeadline = time.Unix(1, 0)
	noDeadline   time.Time
)
