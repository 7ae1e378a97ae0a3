package coverage

import (
	"bytes"
	"strconv"
	"strings"
)

// Shape is the kind-defining part of a message whose first bytes are b and
// whose whole length is n (n below len(b) is taken as len(b)): its
// structure with the values masked. Messages a program sends from one
// statement have one shape whatever they carry; messages of different
// statements, as a rule, different ones.
//
// The formats are recognized by their bytes, not by port or system, and
// tried from the most specific:
//
//   - text: RESP commands and replies (the command's name, "+OK", "-ERR"),
//     HTTP/1 requests and responses (method and path with ids masked,
//     "HTTP 200"), chunks of a chunked body (the chunk's contents),
//     JSON (keys kept, values by type), else the line's first word;
//   - HTTP/2 frames (their types and flags; a gRPC message's protobuf);
//   - after a length field, a message between two Erlang VMs: its control
//     message's operation ("dist REG_SEND"; "dist…" when its header's
//     atom cache references run past the bytes kept);
//   - msgpack maps, after up to maxTagBytes tag bytes (kept): keys kept,
//     values by type;
//   - a length field at the start, or after one tag byte (masked), then
//     what follows it;
//   - protobuf (field numbers and wire types kept);
//   - anything else: its first byte (a type tag, as a rule), or four that
//     are a small number, and a mask.
//
// A message cut short (the trace keeps trace.data bytes) shapes as far as
// its bytes go, ending in "…": a cut in the middle of the n-th key of a
// map gives the first n-1 keys. Keep enough bytes for the keys that tell
// messages apart (e.g. trace.data 256 for hashicorp/raft).
func Shape(b []byte, n int) string {
	n = max(n, len(b))
	if len(b) == 0 {
		return ""
	}
	return shapeOf(b, n, 0)
}

// maxNest bounds how often one shape looks inside another (a length field,
// a chunk, a frame): a message is not that deep, and garbage must not
// recurse.
const maxNest = 3

// shapeOf tries each format in turn; depth counts the nestings so far.
// A nested message (after a length field, in a chunk) may end before the
// bytes do: what follows it is not its.
func shapeOf(b []byte, n, depth int) string {
	if len(b) > n {
		b = b[:n]
	}
	if s, ok := distShape(b, depth); ok {
		return s
	}
	if s, ok := textShape(b, n, depth); ok {
		return s
	}
	if s, ok := http2Shape(b, n, depth); ok {
		return s
	}
	if s, ok := msgpackShape(b, n); ok {
		return s
	}
	if depth < maxNest {
		if s, ok := lengthShape(b, n, depth); ok {
			return s
		}
	}
	if s, ok := protobufShape(b, n); ok {
		return s
	}
	return binaryShape(b, n, depth)
}

// masked stands for bytes whose values do not make a kind.
const masked = "·"

// cut ends a shape whose message was cut short, or whose structure went on
// past what a shape keeps.
const cut = "…"

// binaryShape is the fallback: the first byte, which most binary protocols
// make a type or version tag, or the first four when they are a small
// big-endian number (a type written as a Java or C int, as ZooKeeper's
// quorum packets start), and a mask for the rest. Printable runs are not
// kept: in unknown binary they are as often values as names.
func binaryShape(b []byte, n, depth int) string {
	tag := 1
	if depth == 0 && len(b) >= 4 && b[0] == 0 && b[1] == 0 && b[2] == 0 {
		// Not after a length field: there a small number is as often a
		// request's sequence number (ZooKeeper's xid).
		tag = 4
	}
	if n == tag {
		return string(b[:tag])
	}
	return string(b[:tag]) + masked
}

// textShape recognizes a message whose first line is printable text.
func textShape(b []byte, n, depth int) (string, bool) {
	line, next, whole := firstLine(b, n)
	if !printable(line) {
		return "", false
	}
	switch {
	case line[0] == '{' || line[0] == '[':
		if s, ok := jsonShape(b, n); ok {
			return s, true
		}
	case strings.IndexByte("*+-:$", line[0]) >= 0 && whole:
		if s, ok := respShape(b[next:], line); ok {
			return s, true
		}
	}
	if s, ok := httpShape(line); ok {
		return s, true
	}
	if s, ok := chunkShape(b, n, line, next, depth); ok {
		return s, true
	}
	if binaryAfter(b, next) && !verbLike(line, crlf(b, next)) {
		// A few printable bytes and a line feed, then binary: a tag byte
		// and random bytes (a digest) as often as a line protocol.
		return "", false
	}
	return wordShape(line), true
}

// binaryAfter says whether bytes that are not text (printable ASCII, tabs
// and line ends) follow the line that ends before next.
func binaryAfter(b []byte, next int) bool {
	for _, c := range b[min(next, len(b)):] {
		if (c < 0x20 || c > 0x7e) && c != '\t' && c != '\r' && c != '\n' {
			return true
		}
	}
	return false
}

// crlf says whether the line that ends before next ended in CRLF.
func crlf(b []byte, next int) bool {
	return next >= 2 && next <= len(b) && b[next-2] == '\r' && b[next-1] == '\n'
}

// verbLike says whether a line's first word reads as a line protocol's
// verb: a letter first, then letters, digits or "+-_./" ("RS+", "srvr",
// "PUT"); two characters or more after a CRLF, three after a bare line
// feed (one random byte in 256 is one).
func verbLike(line []byte, crlf bool) bool {
	w := firstWord(line)
	least := 3
	if crlf {
		least = 2
	}
	if len(w) < least || !isLetter(w[0]) {
		return false
	}
	for _, c := range w[1:] {
		if !isLetter(c) && (c < '0' || c > '9') && !strings.ContainsRune("+-_./", rune(c)) {
			return false
		}
	}
	return true
}

// chunkShape recognizes a chunk of an HTTP/1.1 chunked body: its size in
// lower-case hex (as servers write it; "ADD" is a verb), CRLF, then the
// chunk's bytes, which are the message, and are there.
func chunkShape(b []byte, n int, line []byte, next, depth int) (string, bool) {
	if next != len(line)+2 || len(line) > 8 || depth >= maxNest || bytes.ContainsAny(line, "ABCDEF") {
		return "", false
	}
	size, err := strconv.ParseUint(string(line), 16, 32)
	switch {
	case err != nil:
		return "", false
	case size == 0:
		return "chunk end", true
	case n == next:
		return "", false // nothing follows: a line, not a chunk's size
	case len(b) == next:
		return "chunk" + cut, true
	}
	return "chunk " + shapeOf(b[next:], min(int(size), n-next), depth+1), true
}

// firstLine is b up to its first CRLF or LF, where the next line starts,
// and whether that line ended inside b (or is all of the message).
func firstLine(b []byte, n int) (line []byte, next int, whole bool) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		if len(b) < n {
			// Cut between a CR and its LF: the CR is the line's end.
			b = bytes.TrimSuffix(b, []byte("\r"))
		}
		return b, len(b), len(b) == n
	}
	return bytes.TrimSuffix(b[:i], []byte("\r")), i + 1, true
}

// printable says whether a line reads as text: printable ASCII and tabs,
// not starting with a blank.
func printable(line []byte) bool {
	if len(line) == 0 || line[0] == ' ' || line[0] == '\t' {
		return false
	}
	for _, c := range line {
		if (c < 0x20 || c > 0x7e) && c != '\t' {
			return false
		}
	}
	return true
}

// wordShape is a text line's first word, the verb of most line protocols
// ("PUT k1 v" is "PUT"); a word that is a value (has a digit) is masked.
func wordShape(line []byte) string { return maskToken(string(firstWord(line))) }

// firstWord is line up to its first space or tab.
func firstWord(line []byte) []byte {
	if i := bytes.IndexAny(line, " \t"); i >= 0 {
		return line[:i]
	}
	return line
}

// respShape names a RESP (Redis) message, given its first line and the
// bytes after it: a command by its name, a simple reply or error by its
// first word, a number or bulk reply by its type.
func respShape(rest, line []byte) (string, bool) {
	switch line[0] {
	case '+', '-':
		return string(line[0]) + maskToken(string(firstWord(line[1:]))), true
	case ':':
		return ":" + masked, isInt(line[1:])
	case '$':
		if string(line) == "$-1" {
			return "$-1", true
		}
		return "$" + masked, isInt(line[1:])
	}
	// "*3\r\n$3\r\nSET\r\n…": a command is an array of bulk strings.
	if !isInt(line[1:]) {
		return "", false
	}
	if len(rest) == 0 {
		return "*" + cut, true
	}
	hdr, next, whole := firstLine(rest, len(rest)+1)
	if !whole || len(hdr) < 2 || hdr[0] != '$' || !isInt(hdr[1:]) {
		return "*" + masked, true
	}
	size, _ := strconv.Atoi(string(hdr[1:]))
	name := rest[next:]
	if len(name) < size {
		return "*" + cut, true
	}
	if w := maskToken(string(name[:size])); w != masked && w != "" {
		return strings.ToUpper(w), true
	}
	return "*" + masked, true // an array reply whose first element is a value (or empty)
}

func isInt(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// httpShape names an HTTP/1 request by its method and path (ids and query
// values masked) and a response by its status code.
func httpShape(line []byte) (string, bool) {
	f := strings.Fields(string(line))
	if len(f) >= 2 && strings.HasPrefix(f[0], "HTTP/") && len(f[1]) == 3 && isInt([]byte(f[1])) {
		return "HTTP " + f[1], true
	}
	if len(f) != 3 || !strings.HasPrefix(f[2], "HTTP/") || !upper(f[0]) {
		return "", false
	}
	return f[0] + " " + maskPath(f[1]), true
}

func upper(s string) bool {
	for _, c := range []byte(s) {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return s != ""
}

// maskPath masks the segments of a URL path that are values (numbers,
// hex ids, UUIDs) and the values of its query, keeping names
// ("/raft/stream/msgappv2/8e9e05c52164694d?rev=3" is
// "/raft/stream/msgappv2/·?rev=").
func maskPath(p string) string {
	path, query, hasQuery := strings.Cut(p, "?")
	segs := strings.Split(path, "/")
	for i, s := range segs {
		if isValueSegment(s) {
			segs[i] = masked
		}
	}
	out := strings.Join(segs, "/")
	if hasQuery {
		var keys []string
		for _, kv := range strings.Split(query, "&") {
			k, _, _ := strings.Cut(kv, "=")
			keys = append(keys, k+"=")
		}
		out += "?" + strings.Join(keys, "&")
	}
	return out
}

// isValueSegment says whether a path segment is an id rather than a name:
// all digits, or hex of 8 or more, or a UUID. Names with a digit in them
// ("v3", "msgappv2") stay.
func isValueSegment(s string) bool {
	if s == "" {
		return false
	}
	if isInt([]byte(s)) || isUUID(s) {
		return true
	}
	return len(s) >= 8 && isHex(s)
}

func isHex(s string) bool {
	for _, c := range []byte(s) {
		if !isHexDigit(c) {
			return false
		}
	}
	return s != ""
}

func isHexDigit(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range []byte(s) {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !isHexDigit(c) {
				return false
			}
		}
	}
	return true
}

// maskToken masks a word that is a value: one with a digit in it (a
// number, an id such as n1 or 8e9e05c5, an address, a version), or a long
// run of hex digits.
func maskToken(w string) string {
	if w == "" {
		return w
	}
	if strings.ContainsAny(w, "0123456789") || len(w) >= 8 && isHex(w) {
		return masked
	}
	return w
}
