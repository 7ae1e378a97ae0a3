package procfs

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Field numbers of a stat line, as proc(5) counts them.
const (
	FieldPPID      = 4
	FieldFlags     = 9
	FieldStartTime = 22
	FieldProcessor = 39
	FieldPolicy    = 41
)

// Stat is one /proc/PID/stat or /proc/PID/task/TID/stat line.
type Stat struct {
	Comm  string // the task's name, between the parentheses
	State byte   // R, S, D, t, Z...
	rest  []string
}

// Field returns numeric field n (proc(5)'s numbering, from 4 on); false
// when the line is shorter or the field not a number.
func (s Stat) Field(n int) (int64, bool) {
	i := n - 4
	if i < 0 || i >= len(s.rest) {
		return 0, false
	}
	v, err := strconv.ParseInt(s.rest[i], 10, 64)
	return v, err == nil
}

// ParseStat parses a stat line. The name may hold spaces and parentheses:
// it ends at the line's last ')'.
func ParseStat(b []byte) (Stat, error) {
	comm, state, ok := ParseState(b)
	if !ok {
		return Stat{}, fmt.Errorf("malformed stat line %q", b)
	}
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	return Stat{Comm: string(comm), State: state, rest: f[1:]}, nil
}

// ParseState returns a stat line's name and state without allocating, for
// the tracer's frequent checks; ok is false for a malformed line.
func ParseState(b []byte) (comm []byte, state byte, ok bool) {
	i := bytes.LastIndexByte(b, ')')
	j := bytes.IndexByte(b, '(')
	if i < 0 || j < 0 || j > i || i+2 >= len(b) {
		return nil, 0, false
	}
	return b[j+1 : i], b[i+2], true
}

// ReadStat reads and parses /proc/PID/stat.
func ReadStat(pid int) (Stat, error) {
	return readStat("/proc/" + strconv.Itoa(pid) + "/stat")
}

// ReadTaskStat reads and parses /proc/PID/task/TID/stat.
func ReadTaskStat(pid, tid int) (Stat, error) {
	return readStat("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid) + "/stat")
}

func readStat(path string) (Stat, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Stat{}, err
	}
	s, err := ParseStat(b)
	if err != nil {
		return Stat{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}
