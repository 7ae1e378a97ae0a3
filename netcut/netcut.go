package netcut

import (
	"fmt"
	"iter"
)

// Drop is what a cut drops of the packets on one link.
type Drop uint8

const (
	// DropAll drops every packet: either way of a partition, a link cut
	// or a bipartition.
	DropAll Drop = iota + 1
	// DropMessages drops what carries a message (TCP segments with bytes,
	// a SYN or a FIN; every packet of another protocol) and lets TCP's pure
	// acknowledgements and resets pass: the cut way of a one-way cut.
	// Cut, those would leave the other side's kernel retransmitting on its
	// real-time timer, at moments no schedule fixes.
	DropMessages
	// DropHandshakes drops TCP SYNs only: the way back of a one-way cut,
	// across which no new connection opens either.
	DropHandshakes
)

func (d Drop) String() string {
	switch d {
	case DropAll:
		return "all"
	case DropMessages:
		return "messages"
	case DropHandshakes:
		return "handshakes"
	}
	return fmt.Sprintf("Drop(%d)", uint8(d))
}

// stopsMessages says whether d drops messages (bytes, FINs), not only
// handshakes.
func (d Drop) stopsMessages() bool { return d == DropAll || d == DropMessages }

// Link is one direction between two nodes: what From sends to To.
type Link[N comparable] struct{ From, To N }

// Cut is a cut of the network between the nodes of A and those of B: both
// ways, or, when OneWay, only what A sends to B (B's messages still reach
// A, and no connection opens either way). N names a node: the injector's
// node names, the tracer's and the firewall's addresses.
type Cut[N comparable] struct {
	A, B   []N
	OneWay bool
}

// Links yields each link the cut holds, both directions of every pair of
// a node of A and a node of B, with what it drops there.
func (c Cut[N]) Links() iter.Seq2[Link[N], Drop] {
	there, back := DropAll, DropAll
	if c.OneWay {
		there, back = DropMessages, DropHandshakes
	}
	return func(yield func(Link[N], Drop) bool) {
		for _, a := range c.A {
			for _, b := range c.B {
				if !yield(Link[N]{a, b}, there) || !yield(Link[N]{b, a}, back) {
					return
				}
			}
		}
	}
}

// Firewall is where a Set's cuts take effect: a map of blocked links in
// the kernel (netns.Cluster.Firewall).
type Firewall[N comparable] interface {
	// Block drops what d says of the packets on l until Unblock.
	Block(l Link[N], d Drop) error
	// Unblock lets the packets on l through again.
	Unblock(l Link[N]) error
}

// Set is the links the cuts in force hold, and what each drops. Cuts in
// force are not meant to share a link (faults.Plan.Overlap), but a
// replay's fault made up from its trace may put one up across a link
// another holds: a link then stays cut, dropping what the strongest of
// its cuts drops, until the last of them is lifted. The zero Set keeps
// books only; NewSet's also writes a firewall.
type Set[N comparable] struct {
	fw Firewall[N]
	// links counts, per link, the cuts in force that hold it, by what
	// they drop there (index Drop-1).
	links map[Link[N]]*holders
}

// holders counts the cuts that hold one link, by what each drops there.
type holders [3]int

// drop is what the link's cuts drop together: the strongest, DropAll
// over DropMessages over DropHandshakes (each drops what the next does);
// 0 when no cut holds it.
func (h *holders) drop() Drop {
	if h == nil {
		return 0
	}
	for i, n := range h {
		if n > 0 {
			return Drop(i + 1)
		}
	}
	return 0
}

// NewSet returns an empty set whose cuts take effect on fw (nil: books
// only).
func NewSet[N comparable](fw Firewall[N]) *Set[N] { return &Set[N]{fw: fw} }

// Of is a set, in books only, of c's links alone: what c cuts, asked
// before it is put up or after it is lifted.
func Of[N comparable](c Cut[N]) *Set[N] {
	s := &Set[N]{}
	s.Put(c) // no firewall: no error
	return s
}

// Put puts c up, link by link: on the firewall where what the link drops
// changes, then in the books, so the books never hold a link the firewall
// lets through. A firewall error stops it there: the links before stay
// put up, in both.
func (s *Set[N]) Put(c Cut[N]) error {
	if s.links == nil {
		s.links = map[Link[N]]*holders{}
	}
	for l, d := range c.Links() {
		h := s.links[l]
		if h == nil {
			h = &holders{}
		}
		was := h.drop()
		if d < was || was == 0 {
			if err := s.block(l, d); err != nil {
				return err
			}
		}
		h[d-1]++
		s.links[l] = h
	}
	return nil
}

// Lift takes c, as it was put up, down, link by link: off the firewall
// when no other cut holds the link (or down to what the others drop),
// then out of the books. A firewall error stops it there.
func (s *Set[N]) Lift(c Cut[N]) error {
	for l, d := range c.Links() {
		h := s.links[l]
		if h == nil || h[d-1] == 0 {
			continue // not put up: nothing of it on the firewall
		}
		h2 := *h
		h2[d-1]--
		if now := h2.drop(); now != h.drop() {
			var err error
			if now == 0 {
				err = s.unblock(l)
			} else {
				err = s.block(l, now)
			}
			if err != nil {
				return err
			}
		}
		if h2.drop() == 0 {
			delete(s.links, l)
		} else {
			*h = h2
		}
	}
	return nil
}

func (s *Set[N]) block(l Link[N], d Drop) error {
	if s.fw == nil {
		return nil
	}
	if err := s.fw.Block(l, d); err != nil {
		return fmt.Errorf("blocking %v→%v (%v): %w", l.From, l.To, d, err)
	}
	return nil
}

func (s *Set[N]) unblock(l Link[N]) error {
	if s.fw == nil {
		return nil
	}
	if err := s.fw.Unblock(l); err != nil {
		return fmt.Errorf("unblocking %v→%v: %w", l.From, l.To, err)
	}
	return nil
}

// Stops reports whether a cut in force drops the messages (bytes, FINs)
// from from to to.
func (s *Set[N]) Stops(from, to N) bool {
	return s.links[Link[N]{from, to}].drop().stopsMessages()
}

// Between reports whether a cut in force holds a link between a and b,
// either way: no connection opens between them, its handshake needing
// both ways.
func (s *Set[N]) Between(a, b N) bool {
	_, ab := s.links[Link[N]{a, b}]
	_, ba := s.links[Link[N]{b, a}]
	return ab || ba
}

// Shares reports whether c would hold a link that a cut in force holds,
// either way.
func (s *Set[N]) Shares(c Cut[N]) bool {
	if len(s.links) == 0 {
		return false
	}
	for l := range c.Links() {
		if _, ok := s.links[l]; ok {
			return true
		}
	}
	return false
}

// Empty reports whether no cut is in force.
func (s *Set[N]) Empty() bool { return len(s.links) == 0 }
