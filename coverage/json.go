package coverage

import "strings"

// jsonShape is the shape of a JSON value: objects with their keys (a key
// that is a value, such as an id, masked), arrays with their first
// element's shape, other values by type (s a string, i a number, b a
// boolean, n null). It reads as far as the bytes go: a message cut short
// ends in "…".
func jsonShape(b []byte, n int) (string, bool) {
	r := jsonReader{b: b}
	err := r.value(0)
	if err == errNotFormat {
		return "", false
	}
	s := r.out.String()
	if err != nil || r.i >= len(b) && len(b) < n && !r.done {
		s += cut
	}
	return s, true
}

// jsonReader shares mpReader's errors: errCut where the bytes end,
// errNotFormat on a byte no JSON value has there.
type jsonReader struct {
	b     []byte
	i     int
	out   strings.Builder
	quiet int
	done  bool // the top value ended
}

func (r *jsonReader) write(s string) {
	if r.quiet == 0 {
		r.out.WriteString(s)
	}
}

func (r *jsonReader) space() error {
	for r.i < len(r.b) && strings.IndexByte(" \t\r\n", r.b[r.i]) >= 0 {
		r.i++
	}
	if r.i == len(r.b) {
		return errCut
	}
	return nil
}

func (r *jsonReader) value(depth int) error {
	if err := r.space(); err != nil {
		return err
	}
	var err error
	switch c := r.b[r.i]; {
	case c == '{':
		err = r.object(depth)
	case c == '[':
		err = r.array(depth)
	case c == '"':
		r.write("s")
		_, err = r.str()
	case c == 't' || c == 'f':
		r.write("b")
		err = r.word()
	case c == 'n':
		r.write("n")
		err = r.word()
	case c == '-' || c >= '0' && c <= '9':
		r.write("i")
		err = r.word()
	default:
		return errNotFormat
	}
	if err == nil && depth == 0 {
		r.done = true
	}
	return err
}

// word passes a literal or a number.
func (r *jsonReader) word() error {
	for r.i < len(r.b) && strings.IndexByte(",]} \t\r\n", r.b[r.i]) < 0 {
		r.i++
	}
	if r.i == len(r.b) {
		return errCut
	}
	return nil
}

// str passes a string and returns its raw contents.
func (r *jsonReader) str() (string, error) {
	start := r.i + 1
	for r.i++; r.i < len(r.b); r.i++ {
		switch r.b[r.i] {
		case '\\':
			r.i++
		case '"':
			r.i++
			return string(r.b[start : r.i-1]), nil
		}
	}
	r.i = len(r.b)
	return "", errCut
}

func (r *jsonReader) object(depth int) error {
	r.i++
	if depth >= maxDepth && r.quiet == 0 {
		r.write("{" + masked + "}")
		r.quiet++
		defer func() { r.quiet-- }()
	}
	r.write("{")
	for j := 0; ; j++ {
		if err := r.space(); err != nil {
			return err
		}
		if r.b[r.i] == '}' {
			r.i++
			r.write("}")
			return nil
		}
		if j > 0 {
			if r.b[r.i] != ',' {
				return errNotFormat
			}
			r.i++
			if err := r.space(); err != nil {
				return err
			}
			r.write(" ")
		}
		if j == maxKeys && r.quiet == 0 {
			return errFull
		}
		if r.b[r.i] != '"' {
			return errNotFormat
		}
		k, err := r.str()
		if err != nil {
			return err
		}
		if err := r.space(); err != nil {
			return err
		}
		if r.b[r.i] != ':' {
			return errNotFormat
		}
		r.i++
		r.write(maskToken(k) + ":")
		if err := r.value(depth + 1); err != nil {
			return err
		}
	}
}

func (r *jsonReader) array(depth int) error {
	r.i++
	if err := r.space(); err != nil {
		return err
	}
	if r.b[r.i] == ']' {
		r.i++
		r.write("[]")
		return nil
	}
	r.write("[")
	if err := r.value(depth + 1); err != nil {
		return err
	}
	r.write("]")
	r.quiet++
	defer func() { r.quiet-- }()
	for {
		if err := r.space(); err != nil {
			return err
		}
		switch r.b[r.i] {
		case ']':
			r.i++
			return nil
		case ',':
			r.i++
			if err := r.value(depth + 1); err != nil {
				return err
			}
		default:
			return errNotFormat
		}
	}
}
