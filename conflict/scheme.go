package conflict

import (
	"fmt"
	"hash/fnv"
	"net/netip"
	"strconv"
	"strings"

	"github.com/lockstep-dev/lockstep/coverage"
	"github.com/lockstep-dev/lockstep/internal/symname"
	"github.com/lockstep-dev/lockstep/sched"
)

// Scheme says which parts of an op make its signature.
type Scheme struct {
	pid    bool // include the logical process id
	thread bool // with pid: also the thread ("n/0/t3", not "n/0")
	frames int  // call-site frames used (1 = the return address only)
	kind   bool // the op's kind: a send apart from the delivery of its bytes
	msg    bool // with kind: a delivery's message shape (coverage.Shape)
	peer   bool // the other end of the op's connection
	nth    bool // how many ops of the signature came before it (Op.Nth)
}

// Schemes: "pc" and "pid+pc" are Morpheus's, whose logical processes
// are Erlang processes; lockstep's threads are not as stable. Go runs a
// goroutine's syscalls on whichever OS thread is free, and a JVM numbers
// its threads in the order they race to be created, so "n/0/t3" names
// another thread in the next trial and a history keyed by it learns
// little. "proc+pc" keys by process and call site.
//
// A call site alone lumps together what lockstep's ops keep apart: a
// send and the delivery of its bytes carry the same site, though only the
// delivery touches an inbox, and a node whose every message leaves
// through one helper has one site for heartbeats and votes alike. The
// "+kind" suffix adds the op's kind (and, where the site is library code
// compiled into the program, as Rust's std is, the program's own frame
// above it) and "+msg" also a delivery's message shape, the same masking
// of values that names message kinds for exploration (package coverage).
// "proc+pc+msg" released 23-62 % of the suite's ops at once where
// "proc+pc" released 4-36 % (bench/results/conflict-2026-12-02.md).
//
// Still, an op held because its key once conflicted is often one of many
// alike that never do: a node's first HELLO races with a peer's start,
// its later ones with nothing, and a recv from one peer races where one
// from another does not. "+peer" adds the connection's other end and
// "+nth" how many ops of the key came before in the trial, in ranges
// that double as fuzzers count edge hits. DefaultScheme is
// "proc+pc+msg+peer+nth": over sixteen order bugs at 1,000 trials and
// three seeds POS+ with it found them 1.33 times as often as POS, with
// "proc+pc+msg" 1.26 (bench/results/conflict-peer-nth-2026-12-05.md).
var (
	SchemePC       = Scheme{frames: 1}
	SchemePIDPC    = Scheme{pid: true, thread: true, frames: 1}
	SchemeProcPC   = Scheme{pid: true, frames: 1}
	DefaultScheme  = Scheme{pid: true, frames: 1, kind: true, msg: true, peer: true, nth: true}
	schemeSyntaxes = "pc, proc+pc, pid+pc, proc+stack:K or pid+stack:K, each optionally followed by +kind or +msg, then +peer, +nth or both"
)

// ParseScheme parses "pc", "proc+pc", "pid+pc", "proc+stack:K" or
// "pid+stack:K" (K from 1 to 16), each optionally followed by "+kind" or
// "+msg", then by "+peer", "+nth" or both; "" is the default.
func ParseScheme(s string) (Scheme, error) {
	full := s
	var peer, nth bool
	for {
		if b, ok := strings.CutSuffix(s, "+nth"); ok && !nth {
			s, nth = b, true
		} else if b, ok := strings.CutSuffix(s, "+peer"); ok && !peer {
			s, peer = b, true
		} else {
			break
		}
	}
	if s == "" && full != "" {
		return Scheme{}, fmt.Errorf("signature scheme %q: unknown (want %s)", full, schemeSyntaxes)
	}
	sc, err := parseKind(s)
	if err != nil {
		return Scheme{}, err
	}
	sc.peer, sc.nth = sc.peer || peer, sc.nth || nth
	return sc, nil
}

func parseKind(s string) (Scheme, error) {
	base := s
	var kind, msg bool
	if b, ok := strings.CutSuffix(s, "+msg"); ok {
		base, kind, msg = b, true, true
	} else if b, ok := strings.CutSuffix(s, "+kind"); ok {
		base, kind = b, true
	}
	if base == "" && s != "" {
		return Scheme{}, fmt.Errorf("signature scheme %q: unknown (want %s)", s, schemeSyntaxes)
	}
	sc, err := parseBase(base)
	if err != nil {
		return Scheme{}, fmt.Errorf("signature scheme %q: %w", s, err)
	}
	sc.kind, sc.msg = sc.kind || kind, sc.msg || msg
	return sc, nil
}

func parseBase(s string) (Scheme, error) {
	switch s {
	case "":
		return DefaultScheme, nil
	case "pc":
		return SchemePC, nil
	case "pid+pc":
		return SchemePIDPC, nil
	case "proc+pc":
		return SchemeProcPC, nil
	}
	for _, p := range []struct {
		prefix string
		thread bool
	}{{"pid+stack:", true}, {"proc+stack:", false}} {
		if k, ok := strings.CutPrefix(s, p.prefix); ok {
			n, err := strconv.Atoi(k)
			if err != nil || n < 1 || n > 16 {
				return Scheme{}, fmt.Errorf("K must be an integer from 1 to 16")
			}
			return Scheme{pid: true, thread: p.thread, frames: n}, nil
		}
	}
	return Scheme{}, fmt.Errorf("unknown (want %s)", schemeSyntaxes)
}

func (s Scheme) String() string {
	return s.baseString() + s.suffix()
}

func (s Scheme) suffix() string {
	var out string
	switch {
	case s.msg:
		out = "+msg"
	case s.kind:
		out = "+kind"
	}
	if s.peer {
		out += "+peer"
	}
	if s.nth {
		out += "+nth"
	}
	return out
}

func (s Scheme) baseString() string {
	who := "proc"
	if s.thread {
		who = "pid"
	}
	switch {
	case !s.pid:
		return "pc"
	case s.frames <= 1:
		return who + "+pc"
	}
	return fmt.Sprintf("%s+stack:%d", who, s.frames)
}

// Frames is how many call-site frames the tracer must collect.
func (s Scheme) Frames() int { return max(s.frames, 1) }

// WantsMsg reports whether the scheme's keys name a delivery's message, so
// that the tracer must hand the scheme each delivery's first bytes.
func (s Scheme) WantsMsg() bool { return s.msg }

// MsgBytes is how many of a delivery's first bytes a "+msg" scheme looks
// at: enough for the shape of a message's header and first fields.
const MsgBytes = 256

// Key is the history key of a signature under this scheme. Sites with
// several frames are joined with ';' by the tracer; a scheme uses at most
// its own number of them.
func (s Scheme) Key(sig sched.Signature) string {
	key := s.CountKey(sig)
	if s.nth {
		key += fmt.Sprintf(" #%d", nthBucket(sig.Nth))
	}
	return key
}

// Counts reports whether the scheme's keys count an op's predecessors
// (Op.Nth), which a "+" strategy must then number.
func (s Scheme) Counts() bool { return s.nth }

// CountKey is the key without the count: the ops a "+nth" scheme counts
// alike.
func (s Scheme) CountKey(sig sched.Signature) string {
	site := sig.Site
	if s.frames >= 1 {
		parts := strings.SplitN(site, ";", s.frames+1)
		if len(parts) > s.frames {
			parts = parts[:s.frames]
		}
		site = strings.Join(parts, ";")
	}
	key := site
	switch {
	case !s.pid:
	case !s.thread:
		key = sig.Process() + "@" + site
	default:
		key = sig.LPID + "@" + site
	}
	if s.kind {
		if sig.Caller != "" {
			key += " in " + callerKey(sig.Caller)
		}
		key += " " + sig.Kind.String()
	}
	if s.msg && sig.Kind == sched.Deliver && sig.Msg != "" {
		key += " " + shapeKey(sig.Msg, sig.Bytes)
	}
	if s.peer && sig.Peer != "" {
		key += " @" + peerKey(sig.Peer)
	}
	return key
}

// peerKey names the other end of a connection as it stays from trial to
// trial: its address, and its port when that is not an ephemeral one
// (32768 and up: Linux's default range, where the tracer numbers
// connections, and the range above it the kernel picks from in a node),
// which may be another next time.
func peerKey(peer string) string {
	ap, err := netip.ParseAddrPort(peer)
	if err != nil {
		return peer
	}
	if p := ap.Port(); p >= 32768 {
		return ap.Addr().String()
	}
	return peer
}

// nthBucket counts an op's predecessors as fuzzers count an edge's hits:
// the first three apart, then in ranges that double, so that the first
// exchange of a kind stands apart from the steady traffic after it and a
// long trial does not make a key per op.
func nthBucket(n int) int {
	switch {
	case n < 3:
		return n
	case n < 8:
		return 3
	case n < 16:
		return 4
	case n < 32:
		return 5
	}
	return 6
}

// shapeKey names a message's shape in a key: a hash, so that keys stay
// short, and the shape's first characters, so that a history file can be
// read.
func shapeKey(msg string, n int) string {
	shape := coverage.Shape([]byte(msg), n)
	h := fnv.New64a()
	h.Write([]byte(shape))
	head := shape
	if len(head) > 16 {
		head = head[:16]
	}
	return fmt.Sprintf("%016x%q", h.Sum64(), head)
}

// callerKey is the part of a caller a key names: a Java method without
// its line. The line is known only while the frame is interpreted; once
// the JIT compiles the method (at a moment that differs from run to run)
// it is not, and a key must not change with that.
func callerKey(caller string) string {
	if method, _, _, ok := symname.JavaFrame(caller); ok {
		return method
	}
	return caller
}
