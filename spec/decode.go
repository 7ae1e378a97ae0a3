package spec

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"time"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// decoder decodes one spec file's YAML tree into a Spec, each error
// located in the file.
type decoder struct {
	file     string
	hostNets func() ([]netip.Prefix, error)
	// images holds each image reference's Image: nodes often share one,
	// and ResolveImages then opens it once.
	images map[string]*Image
}

// A field is one key of a mapping and the setter that decodes its value,
// at path, into the T the mapping builds. A section of the spec is a
// table of fields: a new key is a row. The table's order is the order
// in which a misspelt key's suggestions are tried (see closest).
type field[T any] struct {
	key string
	set setter[T]
}

type setter[T any] func(d *decoder, v ast.Node, path string, t T) error

// decodeMap decodes the mapping n, at path, into t: each key by its row
// of table, in the file's order. A key the table lacks, or one given
// twice, is an error (see fields).
func decodeMap[T any](d *decoder, n ast.Node, path string, table []field[T], t T) error {
	keys := make([]string, len(table))
	for i, f := range table {
		keys[i] = f.key
	}
	pairs, err := d.fields(n, path, keys...)
	if err != nil {
		return err
	}
	for _, p := range pairs {
		i := slices.IndexFunc(table, func(f field[T]) bool { return f.key == p.key })
		if err := table[i].set(d, p.value, join(path, p.key), t); err != nil {
			return err
		}
	}
	return nil
}

// section is the setter of a key whose value is a mapping of its own,
// decoded by table into the same T.
func section[T any](table []field[T]) setter[T] {
	return func(d *decoder, v ast.Node, path string, t T) error {
		return decodeMap(d, v, path, table, t)
	}
}

// durationField sets the duration at(t) points at (see decoder.duration
// for allowZero and most).
func durationField[T any](at func(T) *time.Duration, allowZero bool, most time.Duration) setter[T] {
	return func(d *decoder, v ast.Node, path string, t T) (err error) {
		*at(t), err = d.duration(v, path, allowZero, most)
		return err
	}
}

// intField sets the integer at(t) points at to one from lo to hi.
func intField[T any](at func(T) *int, lo, hi int64) setter[T] {
	return func(d *decoder, v ast.Node, path string, t T) (err error) {
		*at(t), err = d.intIn(v, path, lo, hi)
		return err
	}
}

func (d *decoder) errf(n ast.Node, field, format string, args ...any) error {
	return &Error{File: d.file, Line: lineOf(n), Field: field, Msg: fmt.Sprintf(format, args...)}
}

func lineOf(n ast.Node) int {
	if n == nil || n.GetToken() == nil {
		return 0
	}
	return n.GetToken().Position.Line
}

// keyName is a mapping key's text, without the quotes of a quoted key.
func keyName(n ast.Node) string {
	if s, ok := unwrap(n).(*ast.StringNode); ok {
		return s.Value
	}
	return n.String()
}

type kv struct {
	key   string
	knode ast.Node
	value ast.Node
}

func unwrap(n ast.Node) ast.Node {
	for {
		switch v := n.(type) {
		case *ast.TagNode:
			n = v.Value
		case *ast.AnchorNode:
			n = v.Value
		default:
			return n
		}
	}
}

// fields returns a mapping's pairs, rejecting keys not in known.
func (d *decoder) fields(n ast.Node, path string, known ...string) ([]kv, error) {
	n = unwrap(n)
	var pairs []*ast.MappingValueNode
	switch m := n.(type) {
	case *ast.MappingNode:
		pairs = m.Values
	case *ast.MappingValueNode:
		pairs = []*ast.MappingValueNode{m}
	default:
		return nil, d.errf(n, path, "must be a mapping, got %s", describe(n))
	}
	seen := map[string]bool{}
	var out []kv
	for _, p := range pairs {
		k := keyName(p.Key)
		field := join(path, k)
		if !contains(known, k) {
			msg := "unknown field"
			if s := closest(k, known); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			return nil, d.errf(p.Key, field, "%s", msg)
		}
		if seen[k] {
			return nil, d.errf(p.Key, field, "given twice")
		}
		seen[k] = true
		out = append(out, kv{key: k, knode: p.Key, value: unwrap(p.Value)})
	}
	return out, nil
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// closest suggests a known name within edit distance 2.
func closest(s string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if dd := editDistance(s, k); dd < bestD {
			best, bestD = k, dd
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func describe(n ast.Node) string {
	switch v := n.(type) {
	case nil, *ast.NullNode:
		return "nothing"
	case *ast.StringNode:
		return fmt.Sprintf("string %q", v.Value)
	case *ast.IntegerNode:
		return fmt.Sprintf("integer %v", v.Value)
	case *ast.FloatNode:
		return fmt.Sprintf("number %v", v.Value)
	case *ast.BoolNode:
		return fmt.Sprintf("boolean %v", v.Value)
	case *ast.SequenceNode:
		return "a list"
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.NanNode:
		return "NaN"
	case *ast.InfinityNode:
		return "infinity"
	}
	return n.Type().String()
}

func (d *decoder) str(n ast.Node, field string) (string, error) {
	switch v := n.(type) {
	case *ast.StringNode:
		return v.Value, nil
	case *ast.LiteralNode:
		return v.Value.Value, nil
	}
	return "", d.errf(n, field, "must be a string, got %s", describe(n))
}

// word accepts strings and plain numbers (argv elements, env values).
func (d *decoder) word(n ast.Node, field string) (string, error) {
	switch v := n.(type) {
	case *ast.IntegerNode:
		return v.GetToken().Value, nil
	case *ast.FloatNode:
		return v.GetToken().Value, nil
	case *ast.BoolNode:
		return v.GetToken().Value, nil
	}
	return d.str(n, field)
}

var digitsRE = regexp.MustCompile(`^[-+]?[0-9]+$`)

func (d *decoder) integer(n ast.Node, field string) (int64, error) {
	v, ok := n.(*ast.IntegerNode)
	if !ok {
		// The YAML parser makes a string of an integer too large for 64 bits.
		if s, isStr := n.(*ast.StringNode); isStr && digitsRE.MatchString(s.Value) && s.GetToken().Type != token.DoubleQuoteType && s.GetToken().Type != token.SingleQuoteType {
			return 0, d.errf(n, field, "%s is out of range (a 64-bit signed integer)", s.Value)
		}
		return 0, d.errf(n, field, "must be an integer, got %s", describe(n))
	}
	switch x := v.Value.(type) {
	case int64:
		return x, nil
	case uint64:
		if x > 1<<63-1 {
			return 0, d.errf(n, field, "%d is out of range (a 64-bit signed integer)", x)
		}
		return int64(x), nil
	}
	return 0, d.errf(n, field, "must be an integer")
}

// intIn decodes an integer from lo to hi.
func (d *decoder) intIn(n ast.Node, field string, lo, hi int64) (int, error) {
	v, err := d.integer(n, field)
	if err != nil {
		return 0, err
	}
	if v < lo || v > hi {
		return 0, d.errf(n, field, "must be between %d and %d, got %d", lo, hi, v)
	}
	return int(v), nil
}

func (d *decoder) number(n ast.Node, field string) (float64, error) {
	switch v := n.(type) {
	case *ast.IntegerNode:
		i, err := d.integer(n, field)
		return float64(i), err
	case *ast.FloatNode:
		return v.Value, nil
	}
	return 0, d.errf(n, field, "must be a number, got %s", describe(n))
}

func (d *decoder) duration(n ast.Node, field string, allowZero bool, maxD time.Duration) (time.Duration, error) {
	s, err := d.str(n, field)
	if err != nil {
		if _, ok := n.(*ast.IntegerNode); ok {
			return 0, d.errf(n, field, "must be a duration with a unit such as 10s or 5m, got %s", describe(n))
		}
		return 0, err
	}
	v, perr := time.ParseDuration(s)
	if perr != nil {
		return 0, d.errf(n, field, "invalid duration %q (use e.g. 500ms, 10s, 5m)", s)
	}
	if v < 0 || (v == 0 && !allowZero) {
		if allowZero {
			return 0, d.errf(n, field, "must not be negative, got %s", s)
		}
		return 0, d.errf(n, field, "must be positive, got %s", s)
	}
	if v > maxD {
		return 0, d.errf(n, field, "at most %s, got %s", fmtDuration(maxD), s)
	}
	return v, nil
}

// fmtDuration prints whole hours as hours ("8760h", not "8760h0m0s").
func fmtDuration(v time.Duration) string {
	if v >= time.Hour && v%time.Hour == 0 {
		return fmt.Sprintf("%dh", v/time.Hour)
	}
	return v.String()
}

func (d *decoder) strings(n ast.Node, field string) ([]string, error) {
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		return nil, d.errf(n, field, "must be a list of strings, got %s", describe(n))
	}
	var out []string
	for i, v := range seq.Values {
		s, err := d.word(unwrap(v), fmt.Sprintf("%s[%d]", field, i))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}
