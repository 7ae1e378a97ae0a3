package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
)

// Status says what a client knows about an operation's outcome.
type Status string

const (
	// OK: the operation completed and its output is what the client saw.
	OK Status = "ok"
	// Fail: the operation definitely did not take effect (e.g. the server
	// answered with an error before applying it). It is left out of the
	// check.
	Fail Status = "fail"
	// Unknown: the client did not see the outcome (a timeout, a closed
	// connection). The operation may or may not have taken effect, at any
	// time after its call: porcupine treats it as never returned.
	Unknown Status = "unknown"
)

// Op is one client operation, one line of a history file.
type Op struct {
	// Process is the client that issued the operation; a client issues
	// one operation at a time. Unique within one file.
	Process int `json:"process"`
	// Name is the operation, a name the model knows (read, write, cas,
	// get, put, append, add).
	Name string `json:"op"`
	// Key partitions a key-value history; empty for other models.
	Key string `json:"key,omitempty"`
	// Input and Output are the operation's argument and result, in the
	// JSON shape the model documents (docs/history.md).
	Input  json.RawMessage `json:"input,omitempty"`
	Output json.RawMessage `json:"output,omitempty"`
	// Call and Return are the client's clock readings (nanoseconds; under
	// lockstep the virtual clock) just before sending the request and just
	// after reading the reply. Return is nil for an Unknown operation.
	Call   int64  `json:"call"`
	Return *int64 `json:"return,omitempty"`
	// Status is OK when empty and Return is given, Unknown when empty and
	// Return is missing.
	Status Status `json:"status,omitempty"`

	// Source names where the operation was read ("node/file:line"), for
	// error messages and the visualization.
	Source string `json:"-"`
}

// Outcome is the operation's status with the defaults applied.
func (o *Op) Outcome() Status {
	if o.Status != "" {
		return o.Status
	}
	if o.Return == nil {
		return Unknown
	}
	return OK
}

// validate checks what every model relies on.
func (o *Op) validate() error {
	if o.Process < 0 {
		return fmt.Errorf("process must not be negative, got %d", o.Process)
	}
	if o.Name == "" {
		return errors.New(`missing "op"`)
	}
	switch o.Outcome() {
	case OK:
		if o.Return == nil {
			return errors.New(`status ok needs a "return" time`)
		}
	case Fail:
	case Unknown:
		if len(o.Output) > 0 && !isNull(o.Output) {
			return errors.New(`an operation of unknown outcome has no "output"`)
		}
	default:
		return fmt.Errorf("unknown status %q (want ok, fail or unknown)", o.Status)
	}
	if o.Return != nil && *o.Return < o.Call {
		return fmt.Errorf("return time %d is before call time %d", *o.Return, o.Call)
	}
	return nil
}

func isNull(m json.RawMessage) bool {
	return len(m) == 0 || string(bytes.TrimSpace(m)) == "null"
}

// Read parses a history in JSON lines. Blank lines are skipped; name is
// used in errors and in each Op's Source.
func Read(r io.Reader, name string) ([]Op, error) {
	var ops []Op
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var op Op
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&op); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if err := op.validate(); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		op.Source = fmt.Sprintf("%s:%d", name, line)
		ops = append(ops, op)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	return ops, nil
}

// ReadFile parses the history in a file.
func ReadFile(path string) ([]Op, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f, path)
}

// Write appends ops to w as JSON lines.
func Write(w io.Writer, ops []Op) error {
	enc := json.NewEncoder(w)
	for i := range ops {
		if err := enc.Encode(&ops[i]); err != nil {
			return fmt.Errorf("writing operation %d: %w", i, err)
		}
	}
	return nil
}

// Client is one client's history, named (e.g. by its node) so that the
// processes of different clients stay apart when merged.
type Client struct {
	Name string
	Ops  []Op
}

// Process is a merged history's process: which client and which of its
// processes.
type Process struct {
	Client  string
	Process int
}

// Merge combines the histories of several clients, which must share one
// clock (lockstep's virtual clock does), into one, renumbering processes
// densely from 0 in order of client then process. It returns the merged
// operations, sorted by call time, and what each new process number was.
func Merge(clients []Client) ([]Op, []Process) {
	var procs []Process
	var out []Op
	for _, c := range clients {
		local := map[int]int{}
		var ids []int
		for _, op := range c.Ops {
			if _, ok := local[op.Process]; !ok {
				local[op.Process] = 0
				ids = append(ids, op.Process)
			}
		}
		sort.Ints(ids)
		for _, id := range ids {
			local[id] = len(procs)
			procs = append(procs, Process{Client: c.Name, Process: id})
		}
		for _, op := range c.Ops {
			op.Process = local[op.Process]
			out = append(out, op)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Call < out[j].Call })
	return out, procs
}
