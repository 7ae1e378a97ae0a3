package sched

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Kind is what an operation does, by name: the names are what traces
// hold. The op kinds below are sched's own (opKind); every other
// well-formed name is a fault kind, which package faults defines, so a
// new fault kind needs no line in sched (the older fault kinds' names in
// tracefile.go are for Describe's show text only). The zero value is
// invalid so that a forgotten field shows up in tests.
type Kind string

const (
	KindInvalid Kind = ""
	Connect     Kind = "connect"
	Accept      Kind = "accept"
	Send        Kind = "send"
	Deliver     Kind = "deliver"
	Recv        Kind = "recv"
	Poll        Kind = "poll"
	Sleep       Kind = "sleep"
	Close       Kind = "close"
	Shutdown    Kind = "shutdown"
	// Advance lets virtual time run to a pending deadline although other
	// ops are enabled: the ops enabled when it is chosen are held until the
	// clock reaches that deadline (a delay; see docs/architecture.md, Time).
	Advance Kind = "advance"
)

// opKind reports whether k is one of sched's op kinds (made by a traced
// thread, or the clock's advance): every constant above but KindInvalid,
// each listed here (TestOpKindsListed), since a kind missing here would be
// a fault kind.
func opKind(k Kind) bool {
	switch k {
	case Connect, Accept, Send, Deliver, Recv, Poll, Sleep, Close, Shutdown, Advance:
		return true
	}
	return false
}

func (k Kind) String() string {
	if k == KindInvalid {
		return "invalid"
	}
	return string(k)
}

// ParseKind is the inverse of Kind.String: an op kind, or a well-formed
// fault kind name (a lowercase letter, then lowercase letters and
// digits). Whether a fault kind of that name exists is package faults'
// to say (faults.Known).
func ParseKind(s string) (Kind, error) {
	if !wellFormed(s) || s == "invalid" {
		return KindInvalid, fmt.Errorf("unknown op kind %q", s)
	}
	return Kind(s), nil
}

// wellFormed reports whether s may name a kind.
func wellFormed(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// MarshalText encodes a Kind by name so traces stay readable.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText decodes a Kind by name.
func (k *Kind) UnmarshalText(b []byte) error {
	v, err := ParseKind(string(b))
	if err != nil {
		return err
	}
	*k = v
	return nil
}

// IsFault reports whether k is injected by lockstep rather than made by a
// traced thread: any kind but sched's own.
func (k Kind) IsFault() bool { return k != KindInvalid && !opKind(k) }

// Signature identifies an operation across trials: the logical process that
// issued it and the call site (module+offset of the first return address
// outside libc, the loader and language runtimes). Real pids and addresses
// that change between runs never appear in it.
type Signature struct {
	LPID string `json:"lpid"`
	Site string `json:"site"`
	// Kind is the op's kind: a send and the delivery of its bytes share
	// a call site, but only the delivery touches the receiver's inbox.
	Kind Kind `json:"kind"`
	// Msg is a delivery's first bytes (Op.Msg), from which a scheme may
	// take the message's shape: one send helper sends every kind of
	// message a node has, from one call site.
	Msg string `json:"-"`
	// Bytes is the delivery's whole length (Msg may be its first bytes).
	Bytes int `json:"-"`
	// Caller is the program's own frame when Site is library code
	// compiled into it (Op.Caller): every Rust send may leave through one
	// std frame.
	Caller string `json:"-"`
	// Peer is the other end of the op's connection (Op.Peer).
	Peer string `json:"-"`
	// Nth is how many ops with the op's signature the trial offered
	// before it (Op.Nth).
	Nth int `json:"-"`
}

func (s Signature) String() string { return s.LPID + "@" + s.Site }

// Op is one operation waiting for release: a gated syscall of one thread, a
// message in flight (Deliver), or a fault. A scheduler sees only this, never
// ptrace.
type Op struct {
	// ID is unique within a trial and assigned in a deterministic order:
	// ops that appear at the same quiescent point are numbered in LPID order.
	ID uint64 `json:"id"`
	// Node is the spec's node name.
	Node string `json:"node"`
	// LPID is the logical thread id, "node/forkpath/tN", stable across trials.
	LPID string `json:"lpid"`
	Kind Kind   `json:"kind"`
	// Thread is the thread's name (/proc/…/comm) when the op appeared,
	// for humans; it is no part of the op's identity.
	Thread string `json:"thread,omitempty"`
	// Object names what the op touches for conflict purposes, e.g.
	// "inbox:db1/0" for a delivery to process db1/0, "listen:10.77.0.1:7000".
	Object string `json:"object,omitempty"`
	// Site is the call site as module+0xoffset ("" for faults and deliveries,
	// which carry their send's site).
	Site string `json:"site,omitempty"`
	// Caller is, when Site is a library's code compiled into the program
	// (a Rust std iterator's next()), the program's own frame further up
	// the stack, as module+0xoffset: for humans (explain), no part of
	// the op's identity.
	Caller string `json:"caller,omitempty"`
	// Peer is the remote address when known ("10.77.0.2:7000").
	Peer string `json:"peer,omitempty"`
	// Conn names the connection direction for sends/deliveries/recvs
	// ("10.77.0.2:41000>10.77.0.1:7000"), empty when unknown.
	Conn string `json:"conn,omitempty"`
	// Bytes is the byte count requested (send/recv) or carried (deliver).
	Bytes int `json:"bytes,omitempty"`
	// Syscall is the raw syscall name, for humans ("sendto", "epoll_wait").
	Syscall string `json:"syscall,omitempty"`
	// NonBlocking marks a connect on a non-blocking socket: it returns at
	// once (EINPROGRESS) and the program waits for the handshake itself,
	// with its own timeout, so a partition does not hold it back.
	NonBlocking bool `json:"nonblocking,omitempty"`
	// At is an advance op's target: the virtual time (ns since the trial
	// began) of the deadline it lets the clock run to.
	At int64 `json:"at,omitempty"`
	// Delay is an advance op's length: At minus the virtual time at which
	// it was offered. Fault ops use it for their size: an outage's or a
	// pause's length, a clock jump, a drift's rate in parts per million.
	Delay int64 `json:"delay,omitempty"`
	// Aim is, for a fault aimed by the spec's probe, what the probe
	// printed when the fault was injected: a replay aims the fault with
	// it instead of running the probe again.
	Aim string `json:"aim,omitempty"`
	// Aimed marks a fault the spec's probe aimed: it was offered with
	// Object ProbeObject and no node, and its Node, Object and size are
	// what the aim settled when it was chosen. Its identity stays the
	// offer's (IdentityObject), so a replay finds it among the offers.
	Aimed bool `json:"aimed,omitempty"`
	// Shape is, for a fault a strategy made rather than the engine drew
	// (an exploring branch's Aim: a hold of one learned kind of message on
	// one link), the shape of the messages it acts on: the kind it was
	// aimed at (package coverage's shapes). Such an op carries all it
	// needs (Made), so a replay makes it up from its record.
	Shape Bytes `json:"shape,omitempty"`
	// Disk is a storage fault's variant, drawn with it: for power, which
	// of the node's unsynced changes reach the disk before the cut (none,
	// all, prefix, subset); for corrupt, flip or tail; for ioerror, the
	// error (EIO, ENOSPC).
	Disk string `json:"disk,omitempty"`
	// Pick seeds the draws a storage fault makes when it strikes (how long
	// a prefix survives, which changes of a subset, which file and bit a
	// corruption hits): what there is to choose from is known only then,
	// and the same schedule finds the same there.
	Pick uint64 `json:"pick,omitempty"`
	// Hit is what a storage fault did, for show ("kept 2 of 5 unsynced
	// changes", "flipped bit 3 of byte 812 of wal.log"); no part of the
	// op's identity.
	Hit string `json:"hit,omitempty"`
	// File is the data file a corruption damaged, as show names it. A
	// forced corruption (explain's runs, a branch's prefix) damages it
	// again wherever the node wrote it, though an earlier change of the
	// schedule had it write other files too, which would move Pick's draw
	// to another file; no part of the op's identity.
	File string `json:"file,omitempty"`
	// Spot is where in File the corruption struck: the length a cut left
	// ("13"), or a flip's byte and bit ("7.5"). A forced corruption
	// strikes there again when the file is long enough, though an earlier
	// change of the schedule had the node write it longer or shorter,
	// which would move Pick's draw; no part of the op's identity.
	Spot string `json:"spot,omitempty"`
	// Msg is a deliver op's first bytes, for faults that hold one kind of
	// message (faults.Pattern) and for conflict signatures that name the
	// message's shape; only while the tracer is asked for them, and never
	// written into traces.
	Msg string `json:"-"`
	// Nth is how many ops of the op's signature (under the "+nth"
	// schemes, without the count) a "+" strategy was offered in this
	// trial before this one, in the order it first saw them: the first
	// HELLO of a process apart from its later ones. Set by sched.Plus and
	// written into the trace, so that the analysis of the trial keys the
	// op as the prediction did; no part of the op's identity.
	Nth int `json:"nth,omitempty"`
}

// KeepDraw puts rec's storage draws (Disk, Pick, File, Spot) on o, an offer of
// the same fault that drew its own: the recorded ones are what the run did
// (sched.FaultReplay.KeepDraw).
func (o *Op) KeepDraw(rec *Op) {
	o.Disk, o.Pick, o.File, o.Spot = rec.Disk, rec.Pick, rec.File, rec.Spot
}

// ProbeObject is the Object of a fault offered for the spec's probe to
// aim: its node, and what it hits there, are settled only when it is
// chosen.
const ProbeObject = "probe"

// AnyNode stands for every node at one end of a link a fault names
// ("link:*>n2": every link into n2), as a kind-aimed hold may.
const AnyNode = "*"

// ProbeAimed reports whether o is a fault the spec's probe aimed, or one
// on offer for it to aim. Traces written before Aimed existed are read
// too: their aimed faults kept ProbeObject, or (a link kind, whose
// Object the aim settled) carry the probe's answer.
func (o *Op) ProbeAimed() bool {
	return o.Aimed || o.Object == ProbeObject || o.LPID == faultLPID && o.Aim != ""
}

// Made reports whether o is a fault a strategy made up, with what it aims
// at recorded (Shape): the engine never offers it, so a replay makes it
// up from its record whatever its kind's FaultReplay says.
func (o *Op) Made() bool { return o.Kind.IsFault() && o.Shape != "" }

// Bytes is a string of bytes that need not be UTF-8 (a binary message's
// shape), written to JSON without loss. encoding/json writes each byte
// that is not UTF-8 as U+FFFD: a msgpack kind's shape (raft's answers
// begin with 0xa0, an empty error string) came back from a trace as
// another shape, and the hold a replay remade from it held nothing. Such
// a string, and one that starts with a quote or holds U+FFFD, is written
// Go-quoted; any other as it is.
type Bytes string

func (b Bytes) MarshalJSON() ([]byte, error) {
	s := string(b)
	// U+FFFD too: unquoted, it marks a shape an older lockstep wrote
	// lossily (Trace.Lossy).
	if !utf8.ValidString(s) || strings.HasPrefix(s, `"`) || strings.ContainsRune(s, utf8.RuneError) {
		s = strconv.Quote(s)
	}
	return json.Marshal(s)
}

func (b *Bytes) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	if u, err := strconv.Unquote(s); err == nil && strings.HasPrefix(s, `"`) {
		// A trace written before Bytes keeps an unquoted shape as it was.
		s = u
	}
	*b = Bytes(s)
	return nil
}

// faultLPID is every fault op's LPID: lockstep injects them.
const faultLPID = "fault"

// IdentityObject is the object that names o across runs: its Object,
// but ProbeObject for a fault the probe aimed, which was offered with
// no target (what it hit, settled at the aim, is checked apart:
// AimDiffers).
func (o *Op) IdentityObject() string {
	if o.Kind.IsFault() && o.ProbeAimed() {
		return ProbeObject
	}
	return o.Object
}

// Signature returns the op's signature under the given scheme.
func (o *Op) Signature() Signature {
	return Signature{LPID: o.LPID, Site: o.Site, Kind: o.Kind, Msg: o.Msg, Bytes: o.Bytes, Caller: o.Caller, Peer: o.Peer, Nth: o.Nth}
}

func (o *Op) String() string {
	s := fmt.Sprintf("#%d %s %s", o.ID, o.LPID, o.Kind)
	if o.Syscall != "" && o.Syscall != o.Kind.String() {
		s += "(" + o.Syscall + ")"
	}
	if o.Peer != "" {
		s += " peer=" + o.Peer
	}
	if o.Bytes != 0 {
		s += fmt.Sprintf(" bytes=%d", o.Bytes)
	}
	if o.Kind == Advance {
		s += fmt.Sprintf(" by=%v to=%v", time.Duration(o.Delay), time.Duration(o.At))
	}
	if o.Kind.IsFault() && o.Object != "" {
		// Two faults of one kind differ only in their target.
		s += " " + o.Object
	}
	return s
}

// Process is the process part of the op's LPID ("db1/0.1" of
// "db1/0.1/t3"), or the whole LPID when it names no thread.
func (o *Op) Process() string { return processOf(o.LPID) }

// Process is the process part of the signature's LPID.
func (s Signature) Process() string { return processOf(s.LPID) }

func processOf(lpid string) string {
	if i := strings.LastIndex(lpid, "/t"); i >= 0 {
		return lpid[:i]
	}
	return lpid
}

// RuntimeBackoff says o is a wait a language runtime makes for itself as
// often as the machine's timing has it: a sleep of HotSpot's VM thread
// (the 10 µs back-off it sleeps while a thread it brings to a safepoint
// still runs Java code: whether it has to is how far that thread got), a
// poll of an Erlang VM's aux thread (it polls the VM's fallback poll set,
// the descriptors epoll refuses, whenever a scheduler hands it work, and
// how many times before the scheduler's next op is how far the two got),
// or a poll of an Erlang VM's scheduler (it checks for I/O between its
// processes, as often as how far they got has it: Mnesia's server polled
// before its accept in one run and not in the other). A replay may meet
// one the recorded run did not make, or miss one it made (Replay).
func (o *Op) RuntimeBackoff() bool {
	switch o.Kind {
	case Sleep:
		return strings.HasPrefix(o.Thread, "VM Thread")
	case Poll:
		return beamThread(o.Thread, "_aux") || beamThread(o.Thread, "_scheduler")
	}
	return false
}

// beamThread says whether a thread name is that of an Erlang VM's thread
// of a role ("1_aux", "2_scheduler": the VM names its threads by index and
// role; its dirty schedulers are "1_dirty_cpu_scheduler" and the like).
func beamThread(name, role string) bool {
	n, ok := strings.CutSuffix(name, role)
	return ok && n != "" && strings.Trim(n, "0123456789") == ""
}

// SameOnProcess reports whether a and b are the same operation of the same
// process, whichever of its threads made it: same kind, call site, object,
// syscall and (for advance ops) target. Thread indices follow the order in
// which a runtime's threads happen to be created and which of them runs a
// goroutine or task, so on Go and the JVM they differ between runs of the
// same schedule; ports chosen by the kernel differ too, so peers are not
// compared.
func SameOnProcess(a, b *Op) bool { return Differs(a, b, true) == "" }

// Resited reports whether got is want made from another call site by the
// same thread: the same kind, object, syscall and (for a send or recv) its
// connection, only the site differs. A runtime may make one exchange from
// two places (an Erlang VM writes to a distribution connection at once or
// from a queued port task, as its port happens to be busy); the bytes it
// carries are compared apart (ValuesDiffer). Faults and clock moves have
// no site.
func Resited(want, got *Op) bool {
	if want.Kind.IsFault() || want.Kind == Advance || want.Site == got.Site || want.LPID != got.LPID {
		return false
	}
	if want.Conn != got.Conn && want.Conn != "" && got.Conn != "" {
		return false
	}
	o := *got
	o.Site = want.Site
	return Differs(want, &o, false) == ""
}

// DatagramSyscall marks the deliver op of a UDP datagram (its Syscall):
// a drop fault may discard it, and it may overtake the datagrams sent
// before it on its socket pair, which a TCP delivery never does.
const DatagramSyscall = "datagram"

// Datagram says o delivers a UDP datagram.
func (o *Op) Datagram() bool { return o.Kind == Deliver && o.Syscall == DatagramSyscall }
