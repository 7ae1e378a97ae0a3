package coverage

import (
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/lockstep-dev/lockstep/sched"
)

// Kind is one kind of message of one protocol: the messages whose bytes
// have one Shape, sent to or from one serving port.
type Kind struct {
	// ID numbers the kinds of a Kinds in the order they were first seen,
	// from 1.
	ID int
	// Proto is the protocol: the port of the connection's serving side
	// (":7000"); the client's port is ephemeral and differs every time.
	Proto string
	Shape string
	// Count is how many messages of this kind were seen.
	Count int
	// Example is the first message seen: its first bytes and its length.
	Example    []byte
	ExampleLen int
}

// Name is the kind's short name, "k7".
func (k *Kind) Name() string { return "k" + strconv.Itoa(k.ID) }

// Label names the kind for people: its name and its shape, quoted with
// Go's escapes and cut at labelLen characters (`k7 "\x01{Addr:s …"`).
func (k *Kind) Label() string { return k.Name() + " " + quoteShape(k.Shape) }

// labelLen bounds the shape shown in a label: the kind's name is what
// tells kinds apart there, the shape a reminder of what it is.
const labelLen = 48

func quoteShape(s string) string {
	// Count characters, a tag byte that is no UTF-8 counting as one.
	i := 0
	for c := 0; c < labelLen-1 && i < len(s); c++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	if i < len(s) {
		s = s[:i] + cut
	}
	return strconv.Quote(s)
}

// Feature is the kind as a feature of a campaign's coverage.
func (k *Kind) Feature() Feature { return Feature{ClassKind, k.key()} }

// key is what identifies the kind in a campaign, whatever its ID.
func (k *Kind) key() string { return k.Proto + " " + k.Shape }

// Kinds learns the kinds of messages of a campaign as it sees them, and
// numbers them in that order: the same messages in the same order get the
// same IDs.
type Kinds struct {
	byKey map[string]*Kind
	list  []*Kind
}

// NewKinds returns an empty registry.
func NewKinds() *Kinds { return &Kinds{byKey: map[string]*Kind{}} }

// Classify returns the kind of a message of protocol proto whose first
// bytes are data and whose length is n, registering it if new, and counts
// the message. A message with no bytes has no kind (nil).
func (ks *Kinds) Classify(proto string, data []byte, n int) *Kind {
	if len(data) == 0 {
		return nil
	}
	shape := Shape(data, n)
	key := proto + " " + shape
	k := ks.byKey[key]
	if k == nil {
		k = ks.longer(proto, shape)
	}
	if k == nil {
		k = &Kind{ID: len(ks.list) + 1, Proto: proto, Shape: shape, Example: append([]byte(nil), data...), ExampleLen: max(n, len(data))}
		ks.byKey[key] = k
		ks.list = append(ks.list, k)
	}
	k.Count++
	return k
}

// longer is the first kind of proto whose shape goes on where a shape cut
// short ends: a message cut before its last keys (a long value, or more
// array elements, pushed them past the bytes kept) is of the kind whose
// messages showed them, if one did. Only this way round: a kind seen cut
// short first stays apart from the longer shapes seen later, as they may
// differ among themselves in what it cannot show.
func (ks *Kinds) longer(proto, shape string) *Kind {
	base, ok := strings.CutSuffix(shape, cut)
	if !ok {
		return nil
	}
	for _, k := range ks.list {
		if k.Proto == proto && len(k.Shape) > len(base) && strings.HasPrefix(k.Shape, base) {
			return k
		}
	}
	return nil
}

// List is every kind seen, by ID.
func (ks *Kinds) List() []*Kind { return ks.list }

// Message is one message of a trace with its kind: a delivery, or a send
// whose bytes no delivery carried (lost with a crashed node, or sent
// natively).
type Message struct {
	// Record is the message's index in the trace's Records.
	Record int
	// From and To are the sending and receiving nodes ("" when not
	// known).
	From, To string
	Kind     *Kind
}

// bulkChunk is the size from which a write is taken to be cut from a
// longer message: buffered writers flush at 4 KiB and more, and a stream
// carries what follows in the next writes. Their first bytes are the
// message's payload, not a message's start: shaped on their own they would
// make a new kind of each (a 100 MiB transfer made 227).
const bulkChunk = 4096

// Messages classifies the messages of a trace in step order, registering
// their kinds in ks. Each message is counted once: by its delivery, or by
// its send when no delivery carried it. A stream's delivery that follows
// one of bulkChunk bytes or more on the same connection direction, with
// nothing delivered the other way between them, goes on with that
// message: it is not a message of its own, and its send has that
// message's kind. sendKinds
// gives every send's kind by its op's ID: a send whose bytes a delivery
// carried has the delivery's.
func (ks *Kinds) Messages(tr *sched.Trace) (msgs []Message, sendKinds map[uint64]*Kind) {
	p := newProtocols(tr)
	going := map[string]*Kind{}  // per connection direction, the message a long write left open
	carried := map[uint64]bool{} // sends whose bytes a delivery kept
	for _, r := range tr.Records {
		if r.Op.Kind == sched.Deliver && len(r.Data) > 0 {
			for _, c := range r.Causes {
				carried[c] = true
			}
		}
	}
	sendKinds = map[uint64]*Kind{}
	for i := range tr.Records {
		r := &tr.Records[i]
		switch r.Op.Kind {
		case sched.Deliver:
			if len(r.Data) == 0 {
				continue
			}
			k, cont := ks.stream(going, p, r)
			if !cont {
				msgs = append(msgs, Message{Record: i, From: r.Op.Node, To: inboxNode(r.Op.Object), Kind: k})
			}
			for _, c := range r.Causes {
				sendKinds[c] = k
			}
		case sched.Send:
			if carried[r.Op.ID] || len(r.Data) == 0 {
				continue
			}
			// Whole: a send's record does not say whether it was a
			// datagram's.
			k := ks.Classify(p.of(r.Op.Conn), r.Data, sched.DataLen(r))
			sendKinds[r.Op.ID] = k
			msgs = append(msgs, Message{Record: i, From: r.Op.Node, To: p.nodeOf(r.Op.Conn), Kind: k})
		}
	}
	return msgs, sendKinds
}

// stream classifies a delivery with bytes: the kind of the message it
// starts, or of the one it goes on with (cont), as Messages says. going
// holds, per connection direction, the message a write of bulkChunk bytes
// or more left open. A datagram is a message whole.
func (ks *Kinds) stream(going map[string]*Kind, p *protocols, r *sched.Record) (k *Kind, cont bool) {
	c, n := r.Op.Conn, sched.DataLen(r)
	if r.Op.Datagram() || c == "" {
		return ks.Classify(p.of(c), r.Data, n), false
	}
	if src, dst, ok := conn(c); ok {
		delete(going, dst.String()+">"+src.String()) // an answer closes what the other side sent
	}
	k, cont = going[c], going[c] != nil
	if !cont {
		k = ks.Classify(p.of(c), r.Data, n)
	}
	if n >= bulkChunk {
		going[c] = k
	} else {
		delete(going, c)
	}
	return k, cont
}

// inboxNode is the node of a delivery's object, "inbox:db1/0" or
// "inbox:db1".
func inboxNode(object string) string {
	p, ok := strings.CutPrefix(object, "inbox:")
	if !ok {
		return ""
	}
	node, _, _ := strings.Cut(p, "/")
	return node
}

// protocols knows, from a trace's connects and accepts, which addresses
// listen: the serving side of a connection is the one that listens.
type protocols struct {
	listening map[netip.AddrPort]bool
	ports     map[uint16]bool
	nodes     map[netip.Addr]string // an address's node, from its accepts and recvs
}

func newProtocols(tr *sched.Trace) *protocols {
	p := &protocols{listening: map[netip.AddrPort]bool{}, ports: map[uint16]bool{}, nodes: map[netip.Addr]string{}}
	for _, r := range tr.Records {
		if a, ok := strings.CutPrefix(r.Op.Object, "listen:"); ok {
			if ap, err := netip.ParseAddrPort(a); err == nil {
				p.listening[ap] = true
				p.ports[ap.Port()] = true
				if r.Op.Kind == sched.Accept {
					p.nodes[ap.Addr()] = r.Op.Node
				}
			}
		}
		if r.Op.Kind == sched.Recv {
			if _, dst, ok := conn(r.Op.Conn); ok {
				p.nodes[dst.Addr()] = r.Op.Node
			}
		}
	}
	return p
}

// conn parses a connection direction, "10.77.0.2:41000>10.77.0.1:7000".
func conn(c string) (src, dst netip.AddrPort, ok bool) {
	a, b, found := strings.Cut(c, ">")
	if !found {
		return src, dst, false
	}
	src, err1 := netip.ParseAddrPort(a)
	dst, err2 := netip.ParseAddrPort(b)
	return src, dst, err1 == nil && err2 == nil
}

// of is the protocol of a connection direction: the port of its side that
// listens (by address, then by port), else the lower port (a UDP service,
// or a trace without its connects: ephemeral ports are the high ones).
func (p *protocols) of(c string) string {
	src, dst, ok := conn(c)
	if !ok {
		return "?"
	}
	port := min(src.Port(), dst.Port())
	switch {
	case p.listening[dst]:
		port = dst.Port()
	case p.listening[src]:
		port = src.Port()
	case p.ports[dst.Port()] && !p.ports[src.Port()]:
		port = dst.Port()
	case p.ports[src.Port()] && !p.ports[dst.Port()]:
		port = src.Port()
	}
	return ":" + strconv.Itoa(int(port))
}

// nodeOf is the node a connection direction leads to, when the trace
// shows it.
func (p *protocols) nodeOf(c string) string {
	if _, dst, ok := conn(c); ok {
		return p.nodes[dst.Addr()]
	}
	return ""
}

// OfShape says whether a message (its first bytes, its whole length n) is
// of a kind's shape: its own shape is that shape, or, the kind's having
// been cut short (a trace keeps a message's first bytes only), goes on
// where it stops, as a cut message joins the kind whose messages showed
// more (Kinds.longer). A hold aimed at a learned kind matches messages
// this way, with more of their bytes than the trace that taught it kept.
func OfShape(data []byte, n int, shape string) bool {
	got := Shape(data, n)
	if got == "" || shape == "" {
		return false
	}
	if base, ok := strings.CutSuffix(shape, cut); ok {
		return strings.HasPrefix(got, base)
	}
	return got == shape
}
