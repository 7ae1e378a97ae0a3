package spec

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/goccy/go-yaml/ast"
)

// BytePattern picks messages by their bytes (faults.hold.match): a
// message matches when it begins with Prefix, contains Contains and does
// not contain Lacks, and when its shape begins with Kind, a learned
// message kind's label as `lockstep kinds` prints it (an empty field says
// nothing).
type BytePattern struct {
	Prefix, Contains, Lacks, Kind []byte
}

// HoldMatchBytes is how many of a message's first bytes a pattern looks
// at (the engine hands the faults that many: faults.MatchBytes).
const HoldMatchBytes = 1024

// HoldDirections are faults.hold.direction's words.
func HoldDirections() []string { return []string{"to", "from"} }

// matchField decodes a list of byte patterns (faults.hold.match,
// faults.slow.match, faults.drop.match) into the list at(t) points at.
func matchField[T any](at func(T) *[]BytePattern) setter[T] {
	return func(d *decoder, v ast.Node, path string, t T) error {
		seq, ok := v.(*ast.SequenceNode)
		if !ok || len(seq.Values) == 0 {
			return d.errf(v, path, "must be a list of patterns ({prefix, contains, lacks, kind}), got %s", describe(v))
		}
		for i, pv := range seq.Values {
			pf := fmt.Sprintf("%s[%d]", path, i)
			var pt BytePattern
			if err := decodeMap(d, pv, pf, patternFields, &pt); err != nil {
				return err
			}
			if pt.Prefix == nil && pt.Contains == nil && pt.Lacks == nil && pt.Kind == nil {
				return d.errf(pv, pf, "needs prefix, contains, lacks or kind")
			}
			*at(t) = append(*at(t), pt)
		}
		return nil
	}
}

// holdFields are faults.hold's.
var holdFields = []field[*FaultPlan]{
	{"match", matchField(func(p *FaultPlan) *[]BytePattern { return &p.HoldMatch })},
	{"direction", func(d *decoder, v ast.Node, path string, plan *FaultPlan) error {
		str, err := d.str(v, path)
		if err != nil {
			return err
		}
		if !slices.Contains(HoldDirections(), str) {
			return d.errf(v, path, "unknown direction %q (want to or from; without it each hold draws one)", str)
		}
		plan.HoldDirection = str
		return nil
	}},
}

// slowFields are faults.slow's, dropFields faults.drop's: which messages
// a slow link delays, which datagrams a drop may discard.
var (
	slowFields = []field[*FaultPlan]{{"match", matchField(func(p *FaultPlan) *[]BytePattern { return &p.SlowMatch })}}
	dropFields = []field[*FaultPlan]{{"match", matchField(func(p *FaultPlan) *[]BytePattern { return &p.DropMatch })}}
)

// patternFields are a pattern's of faults.hold.match.
var patternFields = []field[*BytePattern]{
	{"prefix", bytesField(func(p *BytePattern) *[]byte { return &p.Prefix })},
	{"contains", bytesField(func(p *BytePattern) *[]byte { return &p.Contains })},
	{"lacks", bytesField(func(p *BytePattern) *[]byte { return &p.Lacks })},
	{"kind", bytesField(func(p *BytePattern) *[]byte { return &p.Kind })},
}

// bytesField sets the pattern at(t) points at: bytes as parseBytes reads
// them, at least one and at most HoldMatchBytes.
func bytesField[T any](at func(T) *[]byte) setter[T] {
	return func(d *decoder, v ast.Node, path string, t T) error {
		str, err := d.str(v, path)
		if err != nil {
			return err
		}
		b, err := parseBytes(str)
		if err != nil {
			return d.errf(v, path, "%v", err)
		}
		if len(b) == 0 {
			return d.errf(v, path, "is empty")
		}
		if len(b) > HoldMatchBytes {
			return d.errf(v, path, "is %d bytes; patterns look at a message's first %d", len(b), HoldMatchBytes)
		}
		*at(t) = b
		return nil
	}
}

// holdMatch decodes faults.hold: {match: [{prefix, contains, lacks}...],
// direction: to|from}, what a hold holds when it holds one kind of
// message (docs/spec.md, Network faults).
func (d *decoder) holdMatch(n ast.Node, path string, plan *FaultPlan) error {
	return d.kindMatch(n, path, holdFields, plan, func() int { return len(plan.HoldMatch) })
}

// kindMatch decodes faults.hold, faults.slow or faults.drop, whose match
// is required: the one kind of message a hold holds, a slow link delays
// or a drop discards.
func (d *decoder) kindMatch(n ast.Node, path string, fields []field[*FaultPlan], plan *FaultPlan, got func() int) error {
	if err := decodeMap(d, n, path, fields, plan); err != nil {
		return err
	}
	if got() == 0 {
		return d.errf(n, path+".match", "missing")
	}
	return nil
}

// parseBytes reads a byte pattern as a spec writes it: ASCII text in
// which \xHH stands for the byte HH and \\ for a backslash.
func parseBytes(s string) ([]byte, error) {
	var out []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && s[i+1] == '\\':
			out = append(out, '\\')
			i++
		case c == '\\' && i+3 < len(s) && s[i+1] == 'x':
			b, err := strconv.ParseUint(s[i+2:i+4], 16, 8)
			if err != nil {
				return nil, fmt.Errorf("bad escape %q (want \\xHH)", s[i:i+4])
			}
			out = append(out, byte(b))
			i += 3
		case c == '\\':
			return nil, fmt.Errorf("bad escape at %q (want \\xHH or \\\\)", s[i:])
		case c < 0x20 || c > 0x7e:
			return nil, fmt.Errorf("byte %#02x is not printable ASCII: write bytes as \\xHH inside single quotes", c)
		default:
			out = append(out, c)
		}
	}
	return out, nil
}
