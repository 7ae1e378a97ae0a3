package spec

import (
	"bytes"
	"strings"
)

// bom is the UTF-8 byte order mark some editors put first in a file. YAML
// allows it there; left in, the parser made it part of the first key, and
// messages quoted it ("\ufeffname: unknown field").
var bom = []byte("\xef\xbb\xbf")

// stripBOM removes a leading byte order mark.
func stripBOM(data []byte) []byte { return bytes.TrimPrefix(data, bom) }

// maxNesting bounds how deeply a spec's collections nest. A spec needs
// six levels or so; the YAML parser takes memory and time that grow fast
// with depth (a 200 KB list nested 100,000 deep took 2.3 GB and 23 s before
// lockstep died), so deeper input is refused before it is parsed.
const maxNesting = 64

// nestingDepth estimates how deeply data's collections nest, before it
// is parsed: the block structure (one level per deeper indentation, and
// per further "- " that opens a nested sequence on the same line) plus
// the open flow collections ([ and {, outside quotes and comments). It
// returns the depth and the 1-based line where it first passed limit
// (0 when it never did), stopping there. Every level of nesting costs the
// input at least one byte of indentation, one "- " or one bracket, and
// each of those is counted.
func nestingDepth(data []byte, limit int) (depth, line int) {
	var indents []int // the block levels open, by column
	flow := 0         // open [ and {
	for i, raw := range strings.Split(string(data), "\n") {
		text := strings.TrimRight(raw, "\r")
		col := len(text) - len(strings.TrimLeft(text, " \t"))
		body := text[col:]
		if body == "" || body[0] == '#' {
			continue
		}
		if flow == 0 {
			for len(indents) > 0 && indents[len(indents)-1] >= col {
				indents = indents[:len(indents)-1]
			}
			indents = append(indents, col)
			// "- - - x": each indicator after the first opens a sequence
			// inside the one before.
			c := col
			for strings.HasPrefix(text[c:], "- ") {
				c += 2
				for c < len(text) && text[c] == ' ' {
					c++
				}
				if strings.HasPrefix(text[c:], "- ") || text[c:] == "-" {
					indents = append(indents, c)
				}
			}
		}
		var peak int
		flow, peak = scanFlow(body, flow)
		if d := len(indents) + peak; d > depth {
			depth = d
			if d > limit && line == 0 {
				line = i + 1
			}
		}
		if line != 0 {
			return depth, line
		}
	}
	return depth, line
}

// scanFlow counts the flow collections a line opens and closes, outside
// quoted strings and a trailing comment, from flow already open: it
// returns those open at its end and the most open at once.
func scanFlow(s string, flow int) (open, peak int) {
	var quote byte
	peak = flow
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' && quote == '"' {
				i++
			} else if c == quote {
				quote = 0
			}
		case (c == '"' || c == '\'') && (i == 0 || strings.IndexByte(" \t[{,:", s[i-1]) >= 0):
			// A quote opens a string only where a scalar may begin
			// ("don't" is plain text).
			quote = c
		case c == '#' && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t'):
			return flow, peak
		case c == '[' || c == '{':
			flow++
			peak = max(peak, flow)
		case (c == ']' || c == '}') && flow > 0:
			flow--
		}
	}
	return flow, peak
}
