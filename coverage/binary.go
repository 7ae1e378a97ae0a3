package coverage

import (
	"encoding/binary"
	"strconv"
	"strings"
)

// What a structured shape keeps: a message's kind shows in its first keys
// and fields, and a bound keeps labels readable and the cost of a shape
// flat whatever the message.
const (
	maxKeys  = 12 // keys of one map or fields of one message
	maxDepth = 3  // maps within maps
	// maxTagBytes is how many bytes may precede a msgpack map and be kept
	// as its tag (hashicorp/raft's rpc type byte, or its error string
	// before a response; see mpTag).
	maxTagBytes = 8
)

// http2Frames are HTTP/2's frame types by their type byte, with what RFC
// 9113 requires of each: a stream (or none), a length, the flags defined.
// Checking them keeps a run of zero bytes, which parses as empty frames,
// from being taken for HTTP/2.
var http2Frames = [...]struct {
	name   string
	stream int8 // 1 a stream's, -1 the connection's (stream 0), 0 either
	size   int  // the payload's length, -1 any
	least  int  // the payload's least length
	unit   int  // the payload's length is a multiple of it
	flags  byte // the flags defined
}{
	{"DATA", 1, -1, 0, 1, 0x09},
	{"HEADERS", 1, -1, 1, 1, 0x2d},
	{"PRIORITY", 1, 5, 5, 1, 0},
	{"RST_STREAM", 1, 4, 4, 1, 0},
	{"SETTINGS", -1, -1, 0, 6, 0x01},
	{"PUSH_PROMISE", 1, -1, 4, 1, 0x0c},
	{"PING", -1, 8, 8, 1, 0x01},
	{"GOAWAY", -1, -1, 8, 1, 0},
	{"WINDOW_UPDATE", 0, 4, 4, 1, 0},
	{"CONTINUATION", 1, -1, 1, 1, 0x04},
}

// http2Shape recognizes a run of HTTP/2 frames (frame headers that follow
// RFC 9113 and lengths that the frames' bytes add up to exactly, up to
// where the bytes were cut): their types with the flags that change their
// meaning (ack, end of stream), and a gRPC message's protobuf shape.
func http2Shape(b []byte, n, depth int) (string, bool) {
	var names []string
	i, whole := 0, 0
	for i < n && len(names) < 4 {
		if i+9 > len(b) {
			names = append(names, cut)
			break
		}
		h, ok := readHTTP2Header(b[i:i+9], n-i-9)
		if !ok {
			return "", false
		}
		names = append(names, h.label(b[min(i+9, len(b)):min(i+9+h.size, len(b))], depth))
		i += 9 + h.size
		if i <= len(b) {
			whole++
		}
	}
	if whole == 0 {
		return "", false // not one frame seen whole: too little to tell
	}
	if i < n && names[len(names)-1] != cut {
		names = append(names, cut)
	}
	return "h2 " + strings.Join(names, " "), true
}

// http2Header is an HTTP/2 frame's header.
type http2Header struct {
	size       int // the payload's length
	typ, flags byte
	stream     uint32
}

// readHTTP2Header reads the 9-byte frame header hdr, which room bytes of
// the message follow, and reports whether it is one RFC 9113 allows: a
// known type with a stream, a length and flags that type may have, and a
// payload within the message.
func readHTTP2Header(hdr []byte, room int) (http2Header, bool) {
	h := http2Header{
		size:   int(hdr[0])<<16 | int(hdr[1])<<8 | int(hdr[2]),
		typ:    hdr[3],
		flags:  hdr[4],
		stream: binary.BigEndian.Uint32(hdr[5:9]) &^ (1 << 31),
	}
	if int(h.typ) >= len(http2Frames) || h.size > room {
		return h, false
	}
	t := http2Frames[h.typ]
	if t.size >= 0 && h.size != t.size || h.size < t.least || h.size%t.unit != 0 || h.flags&^t.flags != 0 ||
		t.stream == 1 && h.stream == 0 || t.stream == -1 && h.stream != 0 ||
		h.typ == 0 && h.size == 0 && h.flags&1 == 0 { // an empty DATA frame only ends a stream
		return h, false
	}
	return h, true
}

// label names the frame: its type, the flag that changes its meaning, and
// for a DATA frame whose payload p (as far as the bytes go) holds a gRPC
// message, the message's protobuf shape unless depth is already at
// maxNest.
func (h http2Header) label(p []byte, depth int) string {
	name := http2Frames[h.typ].name
	switch {
	case (h.typ == 4 || h.typ == 6) && h.flags&1 != 0: // SETTINGS, PING
		name += "/ack"
	case (h.typ == 0 || h.typ == 1) && h.flags&1 != 0: // DATA, HEADERS
		name += "/end"
	}
	if h.typ == 0 && h.size > 5 && len(p) >= 5 && p[0] <= 1 &&
		int(binary.BigEndian.Uint32(p[1:5])) == h.size-5 && depth < maxNest {
		// gRPC: a compressed flag and a 4-byte length, then the
		// message.
		name += " grpc"
		if s, ok := protobufShape(p[5:], h.size-5); ok {
			name += " " + s
		}
	}
	return name
}

// lengthShape recognizes a length field at the start of a message, or
// after one tag byte (kept): a big- or little-endian integer of 2, 4 or 8
// bytes (3, little-endian, as MySQL's) that counts the bytes after it, or
// all of them, or at least the bytes of a first message of several (see
// lengthFields). The field is masked and what follows shaped.
func lengthShape(b []byte, n, depth int) (string, bool) {
	for _, off := range []int{0, 1} {
		for _, f := range lengthFields {
			end := off + f.width
			if end >= len(b) || end >= n {
				continue
			}
			v := f.read(b[off:end])
			after := uint64(n - end)
			exact := v == after || v == uint64(n) || v == uint64(n-off)
			first := off == 0 && f.firstOfMany && v >= uint64(f.width) && v < after
			if !exact && !first {
				continue
			}
			rest := n - end
			if first {
				rest = int(v)
			}
			return string(b[:off]) + "⟨len⟩" + shapeOf(b[end:], rest, depth+1), true
		}
	}
	return "", false
}

// lengthFields are the layouts of length fields, widest first: a 4-byte
// field whose high bytes are zero is not also taken for a 2-byte one.
//
// A field that counts fewer bytes than follow it is taken for the first
// of several messages only if it is a big-endian field of 8 bytes
// (firstOfMany, as etcd's streams batch them): a small 4-byte or
// little-endian number is as often a type ("\x00\x00\x00\x05", Java's
// writeInt) or a tag byte followed by zeros ("\x02\x00\x00\x00").
var lengthFields = []struct {
	width       int
	read        func([]byte) uint64
	firstOfMany bool
}{
	{8, binary.BigEndian.Uint64, true},
	{8, binary.LittleEndian.Uint64, false},
	{4, func(b []byte) uint64 { return uint64(binary.BigEndian.Uint32(b)) }, false},
	{4, func(b []byte) uint64 { return uint64(binary.LittleEndian.Uint32(b)) }, false},
	{3, func(b []byte) uint64 { return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 }, false},
	{2, func(b []byte) uint64 { return uint64(binary.BigEndian.Uint16(b)) }, false},
	{2, func(b []byte) uint64 { return uint64(binary.LittleEndian.Uint16(b)) }, false},
}

// msgpackShape recognizes a msgpack map whose first key is a name,
// possibly after a few tag bytes, which are kept.
func msgpackShape(b []byte, n int) (string, bool) {
	for off := 0; off <= maxTagBytes && off < len(b); off++ {
		if !mpMapHeader(b[off]) || !mpTag(b[:off]) {
			continue
		}
		r := mpReader{b: b, i: off}
		err := r.value(0)
		if err == errNotFormat || r.keys == 0 || err == errCut && len(b) >= n {
			// A map that runs off a message that was not cut is not one.
			continue
		}
		s := string(b[:off]) + r.out.String()
		if err != nil {
			// A space before the cut says more keys followed: a map cut
			// there is not one that ended there.
			s += cut
		}
		return s, true
	}
	return "", false
}

func mpMapHeader(c byte) bool { return c >= 0x80 && c <= 0x8f || c == 0xde || c == 0xdf }

// mpTag says whether the bytes before a map may be its tag: none, one (a
// type byte), or one msgpack string whole (an error before a response).
// Random bytes hold a map header within a few bytes more often than not.
func mpTag(t []byte) bool {
	switch {
	case len(t) <= 1:
		return true
	case t[0] >= 0xa0 && t[0] <= 0xbf:
		return int(t[0]&0x1f) == len(t)-1
	case t[0] == 0xd9:
		return int(t[1]) == len(t)-2
	}
	return false
}

type mpError string

func (e mpError) Error() string { return string(e) }

const (
	// errCut: the bytes ended inside a value.
	errCut mpError = "cut short"
	// errNotFormat: the bytes are not of the format read (for msgpack,
	// not a map with named keys).
	errNotFormat mpError = "not msgpack"
	// errFull: the shape holds all a shape keeps.
	errFull mpError = "shape full"
)

// mpReader writes the shape of msgpack values: maps with their keys,
// arrays with their first element's shape, other values by type (s a
// string or bytes, i an integer, f a float, b a boolean, n nil, e an
// extension).
type mpReader struct {
	b     []byte
	i     int
	out   strings.Builder
	quiet int // > 0 while skipping values whose shapes are not kept
	keys  int // keys written
}

func (r *mpReader) write(s string) {
	if r.quiet == 0 {
		r.out.WriteString(s)
	}
}

func (r *mpReader) need(k int) ([]byte, error) {
	if r.i+k > len(r.b) {
		r.i = len(r.b)
		return nil, errCut
	}
	p := r.b[r.i : r.i+k]
	r.i += k
	return p, nil
}

// size reads a k-byte big-endian count.
func (r *mpReader) size(k int) (int, error) {
	p, err := r.need(k)
	if err != nil {
		return 0, err
	}
	var v uint64
	for _, c := range p {
		v = v<<8 | uint64(c)
	}
	if v > uint64(len(r.b))<<8 {
		return 0, errNotFormat // no message here is that large
	}
	return int(v), nil
}

// skip passes k bytes of a value's body; a body cut short still tells the
// value's type, which is already written.
func (r *mpReader) skip(k int) error {
	_, err := r.need(k)
	return err
}

func (r *mpReader) value(depth int) error {
	p, err := r.need(1)
	if err != nil {
		return err
	}
	c := p[0]
	switch {
	case c <= 0x7f || c >= 0xe0:
		r.write("i")
		return nil
	case c <= 0x8f:
		return r.mapBody(int(c&0x0f), depth)
	case c <= 0x9f:
		return r.arrayBody(int(c&0x0f), depth)
	case c <= 0xbf:
		r.write("s")
		return r.skip(int(c & 0x1f))
	}
	switch c {
	case 0xc0:
		r.write("n")
	case 0xc2, 0xc3:
		r.write("b")
	case 0xc4, 0xc5, 0xc6, 0xd9, 0xda, 0xdb:
		r.write("s")
		w := 1 << (c - 0xc4) // bin8, bin16, bin32
		if c >= 0xd9 {
			w = 1 << (c - 0xd9) // str8, str16, str32
		}
		k, err := r.size(w)
		if err != nil {
			return err
		}
		return r.skip(k)
	case 0xc7, 0xc8, 0xc9:
		r.write("e")
		k, err := r.size(1 << (c - 0xc7))
		if err != nil {
			return err
		}
		return r.skip(k + 1)
	case 0xca, 0xcb:
		r.write("f")
		return r.skip(4 << (c - 0xca))
	case 0xcc, 0xcd, 0xce, 0xcf, 0xd0, 0xd1, 0xd2, 0xd3:
		r.write("i")
		return r.skip(1 << ((c - 0xcc) & 3))
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8:
		r.write("e")
		return r.skip(1 + 1<<(c-0xd4))
	case 0xdc, 0xdd:
		k, err := r.size(2 << (c - 0xdc))
		if err != nil {
			return err
		}
		return r.arrayBody(k, depth)
	case 0xde, 0xdf:
		k, err := r.size(2 << (c - 0xde))
		if err != nil {
			return err
		}
		return r.mapBody(k, depth)
	default: // 0xc1 is never used
		return errNotFormat
	}
	return nil
}

func (r *mpReader) mapBody(k, depth int) error {
	if depth >= maxDepth && r.quiet == 0 {
		r.write("{" + masked + "}")
		r.quiet++
		defer func() { r.quiet-- }()
	}
	r.write("{")
	for j := range k {
		if j == maxKeys && r.quiet == 0 {
			r.write(" ")
			return errFull
		}
		if j > 0 {
			r.write(" ")
		}
		if err := r.key(); err != nil {
			return err
		}
		r.write(":")
		if err := r.value(depth + 1); err != nil {
			return err
		}
	}
	r.write("}")
	return nil
}

// key writes a map's key: a name is kept, a key that is a value (a number,
// an id) is masked. The first key of all must be a name, or the bytes are
// not taken for msgpack.
func (r *mpReader) key() error {
	start := r.i
	p, err := r.need(1)
	if err != nil {
		return err
	}
	c := p[0]
	var k int
	switch {
	case c >= 0xa0 && c <= 0xbf:
		k = int(c & 0x1f)
	case c == 0xd9:
		if k, err = r.size(1); err != nil {
			return err
		}
	default:
		if r.keys == 0 {
			return errNotFormat
		}
		r.i = start
		return r.value(maxDepth)
	}
	name, err := r.need(k)
	if err != nil {
		if r.keys == 0 {
			// Not even one key whole: too little to call it msgpack.
			return errNotFormat
		}
		return err
	}
	if r.keys == 0 && !firstKey(name) {
		return errNotFormat
	}
	if k == 0 || !printable(name) {
		r.write(masked)
		return nil
	}
	r.keys++
	r.write(maskToken(string(name)))
	return nil
}

// firstKey says whether a map's first key reads as a field's name: two
// characters or more, a letter first, then letters, digits, '_' or '-'.
// Random bytes past a few tag bytes often hold a map header and a short
// printable string; each such draw kept its tag bytes and made a shape of
// its own.
func firstKey(name []byte) bool {
	if len(name) < 2 || !isLetter(name[0]) {
		return false
	}
	for _, c := range name[1:] {
		if !isLetter(c) && (c < '0' || c > '9') && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func (r *mpReader) arrayBody(k, depth int) error {
	if k == 0 {
		r.write("[]")
		return nil
	}
	r.write("[")
	if err := r.value(depth + 1); err != nil {
		return err
	}
	r.write("]")
	// The other elements are skipped: how many there are is a value.
	r.quiet++
	defer func() { r.quiet-- }()
	for range k - 1 {
		if err := r.value(depth + 1); err != nil {
			return err
		}
	}
	return nil
}

// protobufShape recognizes a protobuf message: fields whose numbers are
// plausible and whose lengths fit, at least two of them (one field that is
// the whole message will do), up to where the bytes were cut. The fields
// must come in field-number order, as encoders write them, and a number
// keep its wire type: random bytes (a digest, a nonce) parse as protobuf
// often enough, and each draw would be a kind of its own. Its shape
// lists the field numbers with their wire types (i varint, 8 fixed64,
// s length-delimited, 4 fixed32); a field repeated is written once, with
// "+".
func protobufShape(b []byte, n int) (string, bool) {
	var fields []string
	i, count := 0, 0
	cutShort := false
	var last, lastWire uint64
	for i < n {
		if i >= len(b) {
			cutShort = true
			break
		}
		tag, k := binary.Uvarint(b[i:])
		if k <= 0 {
			if k == 0 && i+10 > len(b) && len(b) < n {
				cutShort = true
				break
			}
			return "", false
		}
		num, wire := tag>>3, tag&7
		if num == 0 || num > 1<<16 || num < last || num == last && wire != lastWire {
			return "", false
		}
		last, lastWire = num, wire
		typ, next, ok := skipProtobufValue(b, i+k, n, wire)
		if !ok || next > n {
			return "", false
		}
		i = next
		count++
		fields, cutShort = addProtobufField(fields, strconv.FormatUint(num, 10)+":"+typ)
		if cutShort {
			break
		}
	}
	if count < 2 && (count == 0 || cutShort || i != n || !oneField(b)) {
		return "", false
	}
	s := "pb{" + strings.Join(fields, " ") + "}"
	if cutShort || i > len(b) {
		s += cut
	}
	return s, true
}

// oneField says whether a message that is one protobuf field, whole, is
// taken for protobuf: a number or a fixed value, or bytes that read as
// text or as a message themselves (or that were cut, and cannot be read).
// A tag byte of wire type 2 followed by a byte that counts the rest is 1
// in 256 of random tails.
func oneField(b []byte) bool {
	tag, k := binary.Uvarint(b)
	if tag&7 != 2 {
		return true
	}
	size, m := binary.Uvarint(b[k:])
	start := k + m
	if size == 0 || start+int(size) > len(b) {
		return true // an empty string or message, or one cut: nothing to judge
	}
	payload := b[start : start+int(size)]
	if printable(payload) {
		return true
	}
	_, ok := protobufShape(payload, len(payload))
	return ok
}

// skipProtobufValue skips the value of wire type wire at b[i:] of an
// n-byte message and returns the type's letter in a shape and where the
// next field starts. A varint or a length the bytes were cut in counts as
// running to their end (the next field is then past them); one that is
// malformed, or cut in a message that was not, is not a value, nor is a
// length longer than the message or a group.
func skipProtobufValue(b []byte, i, n int, wire uint64) (typ string, next int, ok bool) {
	switch wire {
	case 0:
		_, k := binary.Uvarint(b[min(i, len(b)):])
		if k < 0 || k == 0 && len(b) == n {
			return "", 0, false
		}
		if k == 0 {
			i = len(b)
		}
		return "i", i + k, true
	case 1:
		return "8", i + 8, true
	case 5:
		return "4", i + 4, true
	case 2:
		size, k := binary.Uvarint(b[min(i, len(b)):])
		if k < 0 || size > uint64(n) || k == 0 && len(b) == n {
			return "", 0, false
		}
		if k == 0 {
			i = len(b)
		}
		return "s", i + k + int(size), true
	}
	return "", 0, false // groups are long deprecated
}

// addProtobufField adds field f ("number:type") to a shape's fields: a
// repeat of the last one marks it "+"; past maxKeys fields, f is left out
// and full says the shape is cut there.
func addProtobufField(fields []string, f string) (out []string, full bool) {
	switch last := len(fields) - 1; {
	case last >= 0 && (fields[last] == f || fields[last] == f+"+"):
		fields[last] = f + "+"
	case len(fields) == maxKeys:
		return fields, true
	default:
		fields = append(fields, f)
	}
	return fields, false
}
