package sched

import (
	"fmt"
	"time"
)

// opField is one field of an Op that a replay compares, with how to show
// its value.
type opField struct {
	name string
	get  func(*Op) string
}

func str(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

// identity are the fields that say which op an op is (same); values are
// what a released op carried (Values).
var (
	identity = []opField{
		{"lpid", func(o *Op) string { return str(o.LPID) }},
		{"kind", func(o *Op) string { return o.Kind.String() }},
		{"site", func(o *Op) string { return str(o.Site) }},
		{"object", func(o *Op) string { return str(o.IdentityObject()) }},
		{"syscall", func(o *Op) string { return str(o.Syscall) }},
		// What a made fault aims at (Op.Made): two holds of one link
		// differ in the kind they hold. Empty for every other op.
		{"shape", func(o *Op) string { return fmt.Sprintf("%q", o.Shape) }},
		// The target of an advance op; other kinds leave it out (a pause's
		// end was written into At by traces of lockstep before 0.2).
		{"at", func(o *Op) string {
			if o.Kind != Advance {
				return ""
			}
			return time.Duration(o.At).String()
		}},
	}
	values = []opField{
		{"bytes", func(o *Op) string { return fmt.Sprint(o.Bytes) }},
		{"peer", func(o *Op) string { return str(o.Peer) }},
	}
)

// Differs names the first identity field in which a and b differ, with
// both values ("object: expected node:s1, got node:s2"), or "" when they
// are the same op. lpid is left out when sameProcess is set (a Go or JVM
// op may run on another thread of its process).
func Differs(want, got *Op, sameProcess bool) string {
	for _, f := range identity {
		if sameProcess && f.name == "lpid" {
			if want.Process() != got.Process() {
				return fmt.Sprintf("process: expected %s, got %s", want.Process(), got.Process())
			}
			continue
		}
		if w, g := f.get(want), f.get(got); w != g {
			return fmt.Sprintf("%s: expected %s, got %s", f.name, w, g)
		}
	}
	return ""
}

// ValuesDiffer names the first of the byte count and the peer in which a
// released op differs from the recorded one, or "". Fault ops are named by
// their identity alone.
func ValuesDiffer(want, got *Op) string {
	if want.Kind.IsFault() {
		// A fault's peer is written for show (a partition's cut side).
		return ""
	}
	for _, f := range values {
		if w, g := f.get(want), f.get(got); w != g {
			return fmt.Sprintf("%s: expected %s, got %s", f.name, w, g)
		}
	}
	return ""
}

// Resized says whether got, an op with want's identity, differs from it in
// its byte count alone on an Erlang distribution connection: data, the
// recorded op's first bytes, begin a message between two Erlang VMs. A VM
// sends an atom by its slot in a per-connection cache, and the slot
// follows the order in which the VM made its atoms, which no op shows:
// the same term may go out 3 bytes longer. Anywhere else a byte count
// that differs is another exchange.
func Resized(want, got *Op, data []byte) bool {
	return !want.Kind.IsFault() && want.Bytes != got.Bytes && want.Peer == got.Peer && distMessage(data)
}

// distMessage says whether b begins an Erlang distribution message: a
// 4-byte length, the external term format's version (131) and a
// distribution header ('D', or 'E' for a fragmented message's first
// part), the header that carries the atom cache's references.
func distMessage(b []byte) bool {
	return len(b) >= 6 && b[4] == 131 && (b[5] == 'D' || b[5] == 'E')
}

// aimed are what a probe's aim settles of a fault (sched.Op.Aimed): its
// node, its target and its size and draws.
var aimed = []opField{
	{"node", func(o *Op) string { return str(o.Node) }},
	{"target", func(o *Op) string { return str(o.Object) }},
	{"aim", func(o *Op) string { return fmt.Sprintf("%q", o.Aim) }},
	{"conn", func(o *Op) string { return str(o.Conn) }},
	{"size", func(o *Op) string { return fmt.Sprint(o.Delay) }},
	{"disk", func(o *Op) string { return str(o.Disk) }},
	{"pick", func(o *Op) string { return fmt.Sprint(o.Pick) }},
}

// AimDiffers names the first of what an aim settles in which a replayed
// probe-aimed fault differs from the recorded one, or "": a replay aims
// with the recorded answer and must hit what the trace hit.
func AimDiffers(want, got *Op) string {
	for _, f := range aimed {
		if w, g := f.get(want), f.get(got); w != g {
			return fmt.Sprintf("aimed %s: expected %s, got %s", f.name, w, g)
		}
	}
	return ""
}

// closest is the enabled op most like want, to name what differs when
// none is the same: one of its thread, else of its process, else of its
// kind, else the first.
func closest(want *Op, enabled []*Op) *Op {
	if len(enabled) == 0 {
		return nil
	}
	for _, match := range []func(*Op) bool{
		func(o *Op) bool { return o.LPID == want.LPID && o.Kind == want.Kind },
		func(o *Op) bool { return o.LPID == want.LPID },
		func(o *Op) bool { return o.Process() == want.Process() && o.Kind == want.Kind },
		func(o *Op) bool { return o.Kind == want.Kind },
	} {
		for _, o := range enabled {
			if match(o) {
				return o
			}
		}
	}
	return enabled[0]
}
