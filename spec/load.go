package spec

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/parser"
	"github.com/lockstep-dev/lockstep/compose"
)

// Error is a one-line, located complaint about a spec.
type Error struct {
	File  string
	Line  int
	Field string
	Msg   string
}

var errorEscaper = strings.NewReplacer("\ufeff", "", "\n", `\n`, "\r", `\r`)

func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc += fmt.Sprintf(":%d", e.Line)
	}
	msg := loc + ": " + e.Msg
	if e.Field != "" {
		msg = loc + ": " + e.Field + ": " + e.Msg
	}
	// A byte order mark inside the file (one at its start is dropped)
	// would print as nothing and puzzle the reader; a line break from a
	// value (a program's path, a name) would split the one-line error.
	return errorEscaper.Replace(msg)
}

// Load reads and validates a spec file. Its image nodes' images are
// named, not read: whoever runs the nodes resolves them (ResolveImages).
func Load(path string) (*Spec, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return load(path, data, HostNets)
}

// load is Load of data read from path, a spec or a compose file, with the
// host's networks supplied by hostNets.
func load(path string, data []byte, hostNets func() ([]netip.Prefix, error)) (*Spec, error) {
	// Before compose.Is: it parses the file too, and expands its aliases.
	if err := checkText(path, data); err != nil {
		return nil, err
	}
	if err := checkAliases(path, data); err != nil {
		return nil, err
	}
	if compose.Is(path, data) {
		return loadCompose(path, data)
	}
	return parse(path, data, hostNets)
}

// readFile reads a spec file of at most MaxSize bytes. Only regular
// files are read: a FIFO would block and a device may never end.
func readFile(path string) ([]byte, error) {
	fail := func(err error) error {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return &Error{File: path, Msg: err.Error()}
	}
	// O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
	// writer before the type check below could refuse it.
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fail(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fail(err)
	}
	if !st.Mode().IsRegular() {
		return nil, &Error{File: path, Msg: fmt.Sprintf("not a regular file (%s)", fileKind(st.Mode()))}
	}
	if st.Size() > MaxSize {
		return nil, &Error{File: path, Msg: fmt.Sprintf("spec is %d bytes, more than the limit of %d", st.Size(), MaxSize)}
	}
	// The size may change after Stat; never read past the limit.
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, fail(err)
	}
	if len(data) > MaxSize {
		return nil, &Error{File: path, Msg: fmt.Sprintf("spec is more than the limit of %d bytes", MaxSize)}
	}
	return data, nil
}

func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a block device"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return m.Type().String()
}

// Parse validates a spec read from path (used for error messages and
// for resolving {{dir}}). As with Load, its images are left to
// ResolveImages.
func Parse(path string, data []byte) (*Spec, error) {
	return parse(path, data, HostNets)
}

// parse is Parse with the host's networks supplied by hostNets
// (tests give their own).
func parse(path string, data []byte, hostNets func() ([]netip.Prefix, error)) (*Spec, error) {
	d := &decoder{file: path, hostNets: hostNets}
	if err := checkText(path, data); err != nil {
		return nil, err
	}
	s := &Spec{Path: path, Digest: digest(data)}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	s.Dir = filepath.Dir(abs)
	data = stripBOM(data) // the digest above is of the file as it is
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &Error{File: path, Msg: "empty spec"}
	}
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		var se *yaml.SyntaxError
		if errors.As(err, &se) {
			return nil, &Error{File: path, Line: se.GetToken().Position.Line, Msg: "invalid YAML: " + se.GetMessage()}
		}
		return nil, &Error{File: path, Msg: "invalid YAML: " + firstLine(err.Error())}
	}
	if len(f.Docs) == 0 || f.Docs[0].Body == nil {
		return nil, &Error{File: path, Msg: "empty spec"}
	}
	// A second document would be silently ignored: say so instead.
	for _, doc := range f.Docs[1:] {
		if doc.Body != nil {
			return nil, d.errf(doc.Body, "", "a second YAML document (after ---): a spec is one document")
		}
	}
	if err := d.spec(f.Docs[0].Body, s); err != nil {
		return nil, err
	}
	return s, nil
}

// digest names a spec file's contents: a trace records it, and a replay
// refuses a spec that changed since.
func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
