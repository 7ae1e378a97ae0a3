package coverage

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
)

// TemplateOf is the template of a line a node printed: what is the same
// every time one log statement prints it. Timestamps become "<ts>", and every
// word that is a value becomes "·": a word with a digit in it (numbers,
// addresses and host:port, ids such as n1 or 8e9e05c5, UUIDs, hex such as
// 0xc000010000, durations, versions), or a run of eight or more hex
// digits. Runs of blanks become one space, so padded columns do not
// matter. A JSON line (zap, logrus, slog) keeps its keys in order, and of
// its values only the level, the message, the caller, the logger's name
// and the error, themselves masked as text; the others are values.
//
// A line that is blank has no template ("").
func TemplateOf(line string) string {
	line = strings.TrimSpace(line)
	if line == "" {
		return ""
	}
	if line[0] == '{' {
		if t, ok := jsonTemplate(line); ok {
			return clip(t)
		}
	}
	return clip(maskText(line))
}

// maxTemplate bounds a template's length: a statement shows in its first
// few hundred bytes, and a line that dumps a whole state must not make a
// feature of its tail.
const maxTemplate = 256

func clip(t string) string {
	if len(t) <= maxTemplate {
		return t
	}
	i := maxTemplate
	for i > 0 && t[i]&0xc0 == 0x80 { // not inside a UTF-8 sequence
		i--
	}
	return t[:i] + cut
}

// timestamps are the timestamp layouts logs use, masked before words so
// that a timestamp is one mark, not a row of them.
var timestamps = []*regexp.Regexp{
	// RFC 3339 and ISO 8601 (Go, zap, hclog, log4j with a comma).
	regexp.MustCompile(`\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?`),
	// Go's log package.
	regexp.MustCompile(`\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?`),
	// Redis ("01 Jan 2024 00:00:00.006"), syslog ("Jan  1 00:00:00").
	regexp.MustCompile(`\d{1,2} (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2}(?:\.\d+)?`),
	regexp.MustCompile(`(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d{1,2} \d{2}:\d{2}:\d{2}(?:\.\d+)?`),
	// A time of day alone.
	regexp.MustCompile(`\b\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\b`),
}

// maskText masks the values of a line of text (see TemplateOf).
func maskText(s string) string {
	for _, re := range timestamps {
		s = re.ReplaceAllLiteralString(s, "<ts>")
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case wordByte(c):
			j := i
			for j < len(s) && wordByte(s[j]) {
				j++
			}
			b.WriteString(maskToken(s[i:j]))
			i = j
		case c == ' ' || c == '\t':
			for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
				i++
			}
			b.WriteByte(' ')
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// wordByte says whether c belongs to a word: a value such as 10.77.0.1,
// w0.op29.1 or 123e4567-e89b-… is one word, masked whole.
func wordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
}

// textKey says whether a key of a JSON log line has a value that says
// which statement printed it.
func textKey(key string) bool {
	switch key {
	case "level", "lvl", "severity", "msg", "message", "caller", "logger", "error", "err":
		return true
	}
	return false
}

// jsonTemplate is the template of a JSON log line: its keys in order,
// "key=value" for the keys that name the statement (textKeys, their
// string values masked as text).
func jsonTemplate(line string) (string, bool) {
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", false
	}
	var parts []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return "", false
		}
		key, ok := t.(string)
		if !ok {
			return "", false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return "", false
		}
		key = maskToken(key)
		var s string
		if textKey(key) && json.Unmarshal(v, &s) == nil {
			parts = append(parts, key+"="+strconv.Quote(maskText(s)))
			continue
		}
		parts = append(parts, key)
	}
	if _, err := dec.Token(); err != nil {
		return "", false
	}
	return "{" + strings.Join(parts, " ") + "}", true
}

// Template is one template of a campaign's log lines.
type Template struct {
	// ID numbers templates in the order first seen, from 1.
	ID   int
	Text string // the template, TemplateOf a line
	// Count is how many lines had it; Example is the first.
	Count   int
	Example string
}

// Name is the template's short name, "t3".
func (t *Template) Name() string { return "t" + strconv.Itoa(t.ID) }

// Templates numbers the templates of a campaign's log lines in the order
// first seen.
type Templates struct {
	byText map[string]*Template
	list   []*Template
}

// NewTemplates returns an empty registry.
func NewTemplates() *Templates { return &Templates{byText: map[string]*Template{}} }

// Classify returns the template of a line, registering it if new, and
// counts the line; a blank line has none (nil).
func (ts *Templates) Classify(line string) *Template {
	t := TemplateOf(line)
	if t == "" {
		return nil
	}
	e := ts.byText[t]
	if e == nil {
		e = &Template{ID: len(ts.list) + 1, Text: t, Example: line}
		ts.byText[t] = e
		ts.list = append(ts.list, e)
	}
	e.Count++
	return e
}

// List is every template seen, by ID.
func (ts *Templates) List() []*Template { return ts.list }

// lines splits a node's output into lines.
func lines(b []byte) []string {
	var out []string
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		out = append(out, string(line))
	}
	return out
}
