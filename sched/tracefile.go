package sched

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// TraceWriter writes a trace as JSON Lines.
type TraceWriter struct {
	w   *bufio.Writer
	enc *json.Encoder
}

// NewTraceWriter writes to w; call Flush at the end.
func NewTraceWriter(w io.Writer) *TraceWriter {
	bw := bufio.NewWriter(w)
	return &TraceWriter{w: bw, enc: json.NewEncoder(bw)}
}

func (t *TraceWriter) WriteHeader(h Header) error   { return t.enc.Encode(Entry{Header: &h}) }
func (t *TraceWriter) WriteRecord(r Record) error   { return t.enc.Encode(Entry{Record: &r}) }
func (t *TraceWriter) WriteOutcome(o Outcome) error { return t.enc.Encode(Entry{Outcome: &o}) }
func (t *TraceWriter) Flush() error                 { return t.w.Flush() }

// ReadTrace parses a trace; errors name the line.
func ReadTrace(r io.Reader) (*Trace, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var tr Trace
	header := false
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		if len(strings.TrimSpace(string(b))) == 0 {
			continue
		}
		var e Entry
		if err := json.Unmarshal(b, &e); err != nil {
			if !header {
				// A spec, a log or a report given for a trace.
				return nil, fmt.Errorf("line %d: not a lockstep trace (its lines are JSON, the first its header): %w", line, err)
			}
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		switch {
		case e.Header != nil:
			if header {
				return nil, fmt.Errorf("line %d: second header", line)
			}
			tr.Header, header = *e.Header, true
		case e.Record != nil:
			if !header {
				return nil, fmt.Errorf("line %d: record before the header", line)
			}
			if o := &e.Record.Op; o.Made() && strings.ContainsRune(string(o.Shape), utf8.RuneError) && !bytes.Contains(b, []byte(`"shape":"\"`)) {
				tr.Lossy = append(tr.Lossy, e.Record.Step)
			}
			tr.Records = append(tr.Records, *e.Record)
		case e.Outcome != nil:
			tr.Outcome = e.Outcome
		default:
			return nil, fmt.Errorf("line %d: neither header, record nor outcome", line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !header {
		return nil, errors.New("no header: not a lockstep trace")
	}
	return &tr, nil
}

// FormatRecord renders one released op as a line of an event listing:
// step, virtual time, node, logical thread, op, peer, bytes.
func FormatRecord(r Record) string { return FormatRecordWide(r, 16) }

// FormatRecordWide is FormatRecord with the logical thread's column lpidWidth
// wide: a listing's longest LPID (a thread a pool's thread started is
// named by both, "zk2/0/t0.1.15.1.3").
func FormatRecordWide(r Record, lpidWidth int) string {
	op := r.Op.Kind.String()
	if r.Op.Syscall != "" && r.Op.Syscall != op {
		op += "(" + r.Op.Syscall + ")"
	}
	bytes := ""
	if r.Op.Bytes != 0 {
		bytes = fmt.Sprint(r.Op.Bytes)
	}
	peer := Describe(r)
	vt := time.Duration(r.VTime)
	line := fmt.Sprintf("  %5d  %8.3fs  %-10s %-*s %-22s %-22s %s", r.Step, vt.Seconds(), r.Op.Node, lpidWidth, r.Op.LPID, op, peer, bytes)
	if len(r.Data) > 0 {
		line += fmt.Sprintf("%*s%s", max(1, 6-len(bytes)), "", FormatData(r.Data, DataLen(&r)))
	}
	return line
}

// The fault kinds whose show text Describe and diskPeer write from the
// op's fields, by their names in traces. They are for display only (no
// replay or scheduling decision reads them): these kinds predate the rule
// that a kind writes its own text into Op.Peer when drawn, as slow, flap
// and every later kind do. Package faults defines them; no new kind
// belongs here.
const (
	crashKind       Kind = "crash"
	partitionKind   Kind = "partition"
	healKind        Kind = "heal"
	dropKind        Kind = "drop"
	pauseKind       Kind = "pause"
	clockJumpKind   Kind = "clock"
	clockDriftKind  Kind = "drift"
	resetKind       Kind = "reset"
	oneWayKind      Kind = "oneway"
	linkKind        Kind = "link"
	bipartitionKind Kind = "bipartition"
	holdKind        Kind = "hold"
	slowKind        Kind = "slow"
	powerKind       Kind = "power"
	corruptKind     Kind = "corrupt"
	ioErrorKind     Kind = "ioerror"
	stallKind       Kind = "stall"
)

// describeMade is what a fault an exploring branch aimed says: a
// kind-aimed hold its kind, link and length, a kind-aimed slow its delay
// and while ("slow messages lead>r1 of "HB" by 296ms for 801ms"); a gray
// or a drop wrote what it did, or why nothing, into Peer.
func describeMade(r Record) string {
	switch {
	case r.Op.Kind == holdKind:
		return fmt.Sprintf("holds %s for %v", r.Op.Conn, time.Duration(r.Op.Delay))
	case r.Op.Kind == slowKind && !strings.HasPrefix(r.Op.Peer, "slows nothing"):
		return fmt.Sprintf("%s by %v for %v", r.Op.Conn, time.Duration(r.Op.Delay), time.Duration(r.Op.Pick))
	}
	return r.Op.Peer
}

// Describe is what a record says beside its op: the peer, or an
// advance's target, a fault's target and size.
func Describe(r Record) string {
	peer := r.Op.Peer
	if r.Op.Made() {
		return describeMade(r)
	}
	switch {
	case r.Op.Kind == Advance:
		// What it ran to, and for how long the ops it held were late.
		peer = fmt.Sprintf("to %.3fs (+%v)", time.Duration(r.Op.At).Seconds(), time.Duration(r.Op.Delay))
	case r.Op.Kind == pauseKind:
		peer = fmt.Sprintf("for %v", time.Duration(r.Op.Delay))
	case r.Op.Kind == clockJumpKind:
		peer = fmt.Sprintf("wall clock %+v", time.Duration(r.Op.Delay))
	case r.Op.Kind == partitionKind:
		peer = "cuts off " + r.Op.Node
		if r.Op.Peer != "" {
			peer = "cuts off " + r.Op.Peer // the node's whole group
		}
		if r.Op.Delay > 0 {
			peer += fmt.Sprintf(" for ≥%v", time.Duration(r.Op.Delay))
		}
	case r.Op.Kind == clockDriftKind && r.Op.Delay == 0:
		peer = "wall clock back in step"
	case r.Op.Kind == clockDriftKind:
		peer = fmt.Sprintf("wall clock %+.4g%%", float64(r.Op.Delay)/1e4)
	case r.Op.Kind == oneWayKind || r.Op.Kind == linkKind || r.Op.Kind == bipartitionKind:
		// "cuts a>b,c" (one way), "cuts a|b" (both ways), "bridge a|c".
		if r.Op.Delay > 0 {
			peer += fmt.Sprintf(" for ≥%v", time.Duration(r.Op.Delay))
		}
	case r.Op.Kind == holdKind:
		peer = fmt.Sprintf("holds %s for %v", r.Op.Conn, time.Duration(r.Op.Delay))
	case r.Op.Kind == healKind && strings.ContainsAny(r.Op.Node, ">|"):
		peer = "mends " + r.Op.Node
	case r.Op.Kind == resetKind:
		peer = "aborts " + r.Op.Conn
	case r.Op.Kind == dropKind:
		peer = fmt.Sprintf("loses #%d %s", r.Op.Delay, r.Op.Conn)
	case r.Op.Kind == crashKind && r.Op.Delay > 0:
		peer = fmt.Sprintf("down for ≥%v", time.Duration(r.Op.Delay))
	case r.Op.Kind == powerKind || r.Op.Kind == corruptKind || r.Op.Kind == ioErrorKind || r.Op.Kind == stallKind:
		peer = diskPeer(&r)
	}
	if r.Op.ProbeAimed() {
		peer += fmt.Sprintf(" (probe said %q)", r.Op.Aim)
	}
	if r.Auto {
		peer = strings.TrimSpace(peer + " (quiet period)")
	}
	return peer
}

// DataLen is the length of the message whose first bytes r.Data holds:
// the result when lockstep knows it, a send's or a delivery's byte count,
// and for a recv whose result is not known (it asked for Bytes, and may
// have read fewer) just what Data holds.
func DataLen(r *Record) int {
	switch {
	case r.Result > 0:
		return int(r.Result)
	case r.Op.Kind == Recv:
		return len(r.Data)
	}
	return r.Op.Bytes
}

// FormatData renders a message's first bytes as a quoted string with Go's
// escapes ("LOCK\n"), followed by "…" when the message (n bytes) was
// longer than what was kept.
func FormatData(b []byte, n int) string {
	s := strconv.Quote(string(b))
	if n > len(b) {
		s += "…"
	}
	return s
}

// diskPeer says what a storage fault was and what it did: "persist prefix,
// down for ≥1.2s: kept 3 of 7 unsynced changes", "flip: flipped bit 3 of
// byte 812 of s1/wal", "next write fails with EIO: write of s1/wal failed
// with EIO", "next fsync takes 300ms".
func diskPeer(r *Record) string {
	var s string
	switch r.Op.Kind {
	case powerKind:
		s = "persist " + r.Op.Disk
		if r.Op.Delay > 0 {
			s += fmt.Sprintf(", down for ≥%v", time.Duration(r.Op.Delay))
		}
	case corruptKind:
		s = r.Op.Disk
	case ioErrorKind:
		s = "next " + r.Op.Syscall + " fails with " + r.Op.Disk
	case stallKind:
		s = fmt.Sprintf("next fsync takes %v", time.Duration(r.Op.Delay))
	}
	switch {
	case r.Op.Hit != "":
		s += ": " + r.Op.Hit
	case r.Op.Kind == ioErrorKind || r.Op.Kind == stallKind:
		s += " (did not strike)"
	}
	return s
}
