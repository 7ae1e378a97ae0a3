package spec

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// checkText refuses, before any YAML parser sees it, input that would cost
// a parser more than its size: more than MaxSize bytes, nesting deeper
// than maxNesting, or bytes that are not UTF-8 (a spec is text; the parser
// took a stray Latin-1 byte in a comment without a word). data is the
// file as read, a byte order mark included.
func checkText(path string, data []byte) error {
	if len(data) > MaxSize {
		return &Error{File: path, Msg: fmt.Sprintf("spec is %d bytes, more than the limit of %d", len(data), MaxSize)}
	}
	data = stripBOM(data)
	if line, col, b, ok := invalidUTF8(data); ok {
		return &Error{File: path, Line: line, Msg: fmt.Sprintf("not UTF-8 text: byte 0x%02x at column %d (save the file as UTF-8)", b, col)}
	}
	if depth, line := nestingDepth(data, maxNesting); line != 0 {
		return &Error{File: path, Line: line, Msg: fmt.Sprintf("nested more than %d levels deep (%d here): a spec needs a handful", maxNesting, depth)}
	}
	if line := countEntries(data, maxEntries); line != 0 {
		return &Error{File: path, Line: line, Msg: fmt.Sprintf("more than %d entries (lines, or items of a [...] or {...}): a spec needs a few hundred", maxEntries)}
	}
	return nil
}

// maxEntries bounds a spec's entries: its lines that are not blank
// (comments too: the parser keeps them) and the items of its flow
// collections. The YAML parser allocates a few hundred bytes per entry,
// all told (a 1 MiB list of 500,000 one-letter items took 575 MB, 262,000
// comment lines 91 MB); the longest spec shipped has 200 lines.
const maxEntries = 20_000

// countEntries counts data's entries (see maxEntries) and returns the
// 1-based line where they first passed limit, 0 when they never did. It
// counts a line of a block scalar as an entry too: over-counting only
// refuses a spec with 20,000 lines.
func countEntries(data []byte, limit int) (line int) {
	n, flow := 0, 0
	for i, raw := range strings.Split(string(data), "\n") {
		body := strings.TrimLeft(strings.TrimRight(raw, "\r"), " \t")
		if body == "" {
			continue
		}
		n++
		var commas int
		flow, _, commas = scanFlow(body, flow)
		if n += commas; n > limit {
			return i + 1
		}
	}
	return 0
}

// invalidUTF8 finds the first byte of data that is not UTF-8: its line,
// its column (1-based, in bytes) and value.
func invalidUTF8(data []byte) (line, col int, b byte, found bool) {
	if utf8.Valid(data) {
		return 0, 0, 0, false
	}
	line, start := 1, 0
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			return line, i - start + 1, data[i], true
		}
		if data[i] == '\n' {
			line, start = line+1, i+1
		}
		i += n
	}
	return 0, 0, 0, false
}

// maxExpanded bounds the nodes a YAML document holds once its aliases are
// expanded, a scalar counting one more per scalarBytes of its text. A
// spec uses no alias, but a compose file may, and the decoder that reads
// one expands them: nine anchors each listing the one before nine times
// (a "billion laughs", a few hundred bytes) would make 9^9 nodes. The
// decoder allocates about 3.5 KB per node and 45 bytes per byte of a
// scalar, so the bound keeps loading within maxLoadAlloc (bound_test.go):
// six levels of laughs, 531,441 nodes of three letters, allocated 1.9 GB
// under a bound of 2^20 nodes.
const (
	maxExpanded = 1 << 15
	scalarBytes = 64
)

// checkAliases refuses a document whose aliases expand past maxExpanded
// nodes. data has passed checkText; input the parser refuses is left for
// the caller's parse to report.
func checkAliases(path string, data []byte) error {
	if !bytes.ContainsRune(data, '*') {
		return nil // no alias: no parse
	}
	f, err := parser.ParseBytes(stripBOM(data), 0)
	if err != nil {
		return nil
	}
	for _, doc := range f.Docs {
		anchors := map[string]int{}
		if expanded(doc.Body, anchors) > maxExpanded {
			return &Error{File: path, Msg: fmt.Sprintf("its aliases expand to more than %d nodes (a scalar counting one per %d bytes): a spec or compose file needs far fewer", maxExpanded, scalarBytes)}
		}
	}
	return nil
}

// expanded counts n's nodes with its aliases expanded, up to just past
// maxExpanded; anchors are the anchors seen so far, by name, with their
// counts (an alias names an anchor before it).
func expanded(n ast.Node, anchors map[string]int) int {
	add := func(a, b int) int { return min(a+b, maxExpanded+1) }
	switch n := n.(type) {
	case nil:
		return 0
	case *ast.MappingNode:
		c := 1
		for _, v := range n.Values {
			c = add(c, expanded(v, anchors))
		}
		return c
	case *ast.MappingValueNode:
		return add(expanded(n.Key, anchors), expanded(n.Value, anchors))
	case *ast.MappingKeyNode:
		return expanded(n.Value, anchors)
	case *ast.SequenceNode:
		c := 1
		for _, v := range n.Values {
			c = add(c, expanded(v, anchors))
		}
		return c
	case *ast.AnchorNode:
		c := expanded(n.Value, anchors)
		if n.Name != nil {
			anchors[n.Name.String()] = c
		}
		return c
	case *ast.AliasNode:
		if n.Value == nil {
			return 1
		}
		return max(anchors[n.Value.String()], 1)
	case *ast.TagNode:
		return expanded(n.Value, anchors)
	}
	if tok := n.GetToken(); tok != nil {
		return 1 + len(tok.Value)/scalarBytes
	}
	return 1
}

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
		flow, peak, _ = scanFlow(body, flow)
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

// scanFlow counts the flow collections a line opens and closes, and the
// commas inside them, outside quoted strings and a trailing comment, from
// flow already open: it returns those open at its end, the most open at
// once and the commas (countEntries, nestingDepth).
func scanFlow(s string, flow int) (open, peak, commas int) {
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
			return flow, peak, commas
		case c == '[' || c == '{':
			flow++
			peak = max(peak, flow)
		case (c == ']' || c == '}') && flow > 0:
			flow--
		case c == ',' && flow > 0:
			commas++
		}
	}
	return flow, peak, commas
}
