package symname

import (
	"strconv"
	"strings"
)

// JNIMethod turns the symbol of a JNI native method
// (Java_sun_nio_ch_SocketDispatcher_read0) into the Java method it
// implements (sun.nio.ch.SocketDispatcher.read0), undoing JNI's escapes:
// _1 for '_', _0xxxx for a Unicode character, and a "__" that starts an
// overloaded method's signature (dropped). ok is false for any other
// symbol.
func JNIMethod(sym string) (name string, ok bool) {
	rest, ok := strings.CutPrefix(sym, "Java_")
	if !ok || rest == "" {
		return "", false
	}
	if i := strings.Index(rest, "__"); i > 0 {
		rest = rest[:i] // the argument signature of an overload
	}
	var b strings.Builder
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if c != '_' {
			b.WriteByte(c)
			continue
		}
		if i+1 >= len(rest) {
			return "", false
		}
		switch rest[i+1] {
		case '1':
			b.WriteByte('_')
			i++
		case '2':
			b.WriteByte(';')
			i++
		case '3':
			b.WriteByte('[')
			i++
		case '0':
			if i+6 > len(rest) {
				return "", false
			}
			var r rune
			for _, h := range rest[i+2 : i+6] {
				r = r<<4 | rune(hexVal(byte(h)))
			}
			b.WriteRune(r)
			i += 5
		default:
			b.WriteByte('.')
		}
	}
	return b.String(), true
}

func hexVal(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10
	}
	return 0
}

// JavaFrame reads a Java frame as the tracer names a JVM op's caller and
// Java's stack traces name a frame: "Class.method(File.java:line)", the
// line left out when it is not known, "Unknown Source" when the class
// names no file. ok is false for any other text (a site, module+0xoff).
func JavaFrame(s string) (method, file string, line int, ok bool) {
	open := strings.IndexByte(s, '(')
	if open <= 0 || !strings.HasSuffix(s, ")") || strings.Contains(s, "+0x") {
		return "", "", 0, false
	}
	method, where := s[:open], s[open+1:len(s)-1]
	if !strings.Contains(method, ".") || strings.ContainsAny(method, " ()") {
		return "", "", 0, false
	}
	if where == "Unknown Source" {
		return method, "", 0, true
	}
	file = where
	if f, l, found := strings.Cut(where, ":"); found {
		n, err := strconv.Atoi(l)
		if err != nil || n <= 0 {
			return "", "", 0, false
		}
		file, line = f, n
	}
	return method, file, line, true
}
