package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"

	"github.com/anishathalye/porcupine"
)

// Model is a sequential specification that histories are checked against.
type Model struct {
	name string
	// convert turns a history operation into porcupine's input and output.
	// keep is false for an operation that constrains nothing (a failed
	// one, or a read whose result was not seen).
	convert func(op *Op) (in, out any, keep bool, err error)
	p       porcupine.Model
}

// Name is the model's name as a spec gives it.
func (m *Model) Name() string { return m.name }

// ModelNames lists the models NewModel knows.
func ModelNames() []string { return []string{"register", "kv", "set"} }

// NewModel returns the model of the given name:
//   - register: one value; read, write, cas.
//   - kv: a map from keys to values, checked key by key (porcupine's
//     partitioning); get, put, append, cas.
//   - set: a set of values; add, read.
func NewModel(name string) (*Model, error) {
	switch name {
	case "register":
		return &Model{name: name, convert: convertRegister, p: registerModel(false)}, nil
	case "kv":
		return &Model{name: name, convert: convertKV, p: registerModel(true)}, nil
	case "set":
		return &Model{name: name, convert: convertSet, p: setModel()}, nil
	}
	return nil, fmt.Errorf("unknown model %q (want %s)", name, strings.Join(ModelNames(), ", "))
}

// value is a register's or a key's content; absent is JSON null (never
// written, or a get of a missing key).
type value struct {
	s       string
	present bool
}

func (v value) String() string {
	if !v.present {
		return "nil"
	}
	return strconv.Quote(v.s)
}

// parseValue accepts a JSON string, a number (taken as its decimal text,
// as a Redis client would see it) or null.
func parseValue(m json.RawMessage) (value, error) {
	m = bytes.TrimSpace(m)
	if isNull(m) {
		return value{}, nil
	}
	switch m[0] {
	case '"':
		var s string
		if err := json.Unmarshal(m, &s); err != nil {
			return value{}, err
		}
		return value{s: s, present: true}, nil
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		var n json.Number
		if err := json.Unmarshal(m, &n); err != nil {
			return value{}, err
		}
		return value{s: n.String(), present: true}, nil
	}
	return value{}, fmt.Errorf("value %s must be a string, a number or null", m)
}

// regInput is a register or key operation.
type regInput struct {
	op       string // read, write, append, cas
	key      string
	arg, old value
}

// regOutput is what the client saw; known is false for an operation of
// unknown outcome, whose effect (if any) the model applies as if it
// succeeded: porcupine may place it after everything else, which is the
// same as never having taken effect.
type regOutput struct {
	known bool
	read  value
	ok    bool // cas
}

func convertRegister(op *Op) (any, any, bool, error) {
	if op.Key != "" {
		return nil, nil, false, fmt.Errorf("a register operation has no key (use model kv)")
	}
	var name string
	switch op.Name {
	case "read":
		name = "read"
	case "write", "cas":
		name = op.Name
	default:
		return nil, nil, false, fmt.Errorf("unknown register operation %q (want read, write or cas)", op.Name)
	}
	return convertReg(op, name)
}

func convertKV(op *Op) (any, any, bool, error) {
	var name string
	switch op.Name {
	case "get":
		name = "read"
	case "put":
		name = "write"
	case "append", "cas":
		name = op.Name
	default:
		return nil, nil, false, fmt.Errorf("unknown kv operation %q (want get, put, append or cas)", op.Name)
	}
	return convertReg(op, name)
}

func convertReg(op *Op, name string) (any, any, bool, error) {
	in := regInput{op: name, key: op.Key}
	out := regOutput{known: op.Outcome() == OK}
	var err error
	switch name {
	case "read":
		if !isNull(op.Input) {
			return nil, nil, false, fmt.Errorf("%s takes no input", op.Name)
		}
		if out.known {
			if out.read, err = parseValue(op.Output); err != nil {
				return nil, nil, false, fmt.Errorf("output: %w", err)
			}
		}
	case "write", "append":
		if in.arg, err = parseValue(op.Input); err != nil {
			return nil, nil, false, fmt.Errorf("input: %w", err)
		}
		if !in.arg.present {
			return nil, nil, false, fmt.Errorf("%s needs a value as input", op.Name)
		}
	case "cas":
		var pair []json.RawMessage
		if err := json.Unmarshal(op.Input, &pair); err != nil || len(pair) != 2 {
			return nil, nil, false, fmt.Errorf(`cas input must be [old, new], got %s`, op.Input)
		}
		if in.old, err = parseValue(pair[0]); err != nil {
			return nil, nil, false, fmt.Errorf("input: %w", err)
		}
		if in.arg, err = parseValue(pair[1]); err != nil {
			return nil, nil, false, fmt.Errorf("input: %w", err)
		}
		if !in.arg.present {
			return nil, nil, false, fmt.Errorf("cas needs a new value")
		}
		if out.known {
			if err := json.Unmarshal(op.Output, &out.ok); err != nil {
				return nil, nil, false, fmt.Errorf("cas output must be true or false, got %s", op.Output)
			}
		}
	}
	switch op.Outcome() {
	case Fail:
		return nil, nil, false, nil
	case Unknown:
		// A read whose result nobody saw constrains nothing.
		if name == "read" {
			return nil, nil, false, nil
		}
	}
	return in, out, true, nil
}

func regStep(state, input, output any) (bool, any) {
	st, in, out := state.(value), input.(regInput), output.(regOutput)
	switch in.op {
	case "read":
		return st == out.read, st
	case "write":
		return true, in.arg
	case "append":
		return true, value{s: st.s + in.arg.s, present: true}
	case "cas":
		swapped := st == in.old
		if out.known && out.ok != swapped {
			return false, st
		}
		if swapped {
			return true, in.arg
		}
		return true, st
	}
	return false, st
}

func describeReg(input, output any) string {
	in, out := input.(regInput), output.(regOutput)
	prefix := ""
	if in.key != "" {
		prefix = strconv.Quote(in.key)
	}
	var s string
	switch in.op {
	case "read":
		s = "read(" + prefix + ")"
		if out.known {
			return s + " -> " + out.read.String()
		}
	case "write", "append":
		if prefix != "" {
			prefix += ", "
		}
		s = in.op + "(" + prefix + in.arg.String() + ")"
		if out.known {
			return s
		}
	case "cas":
		if prefix != "" {
			prefix += ", "
		}
		s = "cas(" + prefix + in.old.String() + " -> " + in.arg.String() + ")"
		if out.known {
			return s + " -> " + strconv.FormatBool(out.ok)
		}
	}
	return s + " -> ?"
}

func registerModel(partitioned bool) porcupine.Model {
	m := porcupine.Model{
		Init:              func() any { return value{} },
		Step:              regStep,
		Equal:             func(a, b any) bool { return a.(value) == b.(value) },
		DescribeOperation: describeReg,
		DescribeState:     func(s any) string { return s.(value).String() },
		DescribeOperationMetadata: func(info any) string {
			s, _ := info.(string)
			return s
		},
	}
	if partitioned {
		m.Partition = func(h []porcupine.Operation) [][]porcupine.Operation {
			byKey := map[string][]porcupine.Operation{}
			var keys []string
			for _, op := range h {
				k := op.Input.(regInput).key
				if _, ok := byKey[k]; !ok {
					keys = append(keys, k)
				}
				byKey[k] = append(byKey[k], op)
			}
			slices.Sort(keys) // a stable order for the visualization
			out := make([][]porcupine.Operation, 0, len(keys))
			for _, k := range keys {
				out = append(out, byKey[k])
			}
			return out
		}
	}
	return m
}

// setInput is an add or a read of the set model.
type setInput struct {
	op  string // add, read
	arg string
}

// setOutput is a read's result, sorted and without duplicates; known is
// false for an add of unknown outcome.
type setOutput struct {
	known bool
	read  []string
}

func convertSet(op *Op) (any, any, bool, error) {
	if op.Key != "" {
		return nil, nil, false, fmt.Errorf("a set operation has no key")
	}
	in := setInput{op: op.Name}
	out := setOutput{known: op.Outcome() == OK}
	switch op.Name {
	case "add":
		v, err := parseValue(op.Input)
		if err != nil {
			return nil, nil, false, fmt.Errorf("input: %w", err)
		}
		if !v.present {
			return nil, nil, false, fmt.Errorf("add needs a value as input")
		}
		in.arg = v.s
	case "read":
		if !isNull(op.Input) {
			return nil, nil, false, fmt.Errorf("read takes no input")
		}
		if out.known {
			var raw []json.RawMessage
			if err := json.Unmarshal(op.Output, &raw); err != nil {
				return nil, nil, false, fmt.Errorf("read output must be a list of values, got %s", op.Output)
			}
			for _, r := range raw {
				v, err := parseValue(r)
				if err != nil || !v.present {
					return nil, nil, false, fmt.Errorf("read output must be a list of values, got %s", op.Output)
				}
				out.read = append(out.read, v.s)
			}
			slices.Sort(out.read)
			out.read = slices.Compact(out.read)
		}
	default:
		return nil, nil, false, fmt.Errorf("unknown set operation %q (want add or read)", op.Name)
	}
	if op.Outcome() == Fail || (op.Outcome() == Unknown && op.Name == "read") {
		return nil, nil, false, nil
	}
	return in, out, true, nil
}

func setModel() porcupine.Model {
	return porcupine.Model{
		// The state is a sorted slice without duplicates; Step never
		// changes it in place.
		Init: func() any { return []string(nil) },
		Step: func(state, input, output any) (bool, any) {
			st, in, out := state.([]string), input.(setInput), output.(setOutput)
			if in.op == "read" {
				return slices.Equal(st, out.read), st
			}
			i, found := slices.BinarySearch(st, in.arg)
			if found {
				return true, st
			}
			return true, slices.Insert(slices.Clip(st), i, in.arg)
		},
		Equal: func(a, b any) bool { return slices.Equal(a.([]string), b.([]string)) },
		Hash: func(s any) uint64 {
			h := fnv.New64a()
			for _, e := range s.([]string) {
				h.Write([]byte(e))
				h.Write([]byte{0})
			}
			return h.Sum64()
		},
		DescribeOperation: func(input, output any) string {
			in, out := input.(setInput), output.(setOutput)
			if in.op == "add" {
				s := "add(" + strconv.Quote(in.arg) + ")"
				if !out.known {
					s += " -> ?"
				}
				return s
			}
			return "read() -> " + describeSet(out.read)
		},
		DescribeState: func(s any) string { return describeSet(s.([]string)) },
		DescribeOperationMetadata: func(info any) string {
			s, _ := info.(string)
			return s
		},
	}
}

func describeSet(s []string) string {
	q := make([]string, len(s))
	for i, e := range s {
		q[i] = strconv.Quote(e)
	}
	return "{" + strings.Join(q, ", ") + "}"
}
