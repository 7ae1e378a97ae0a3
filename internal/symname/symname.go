// Package symname turns the symbol names of compiled code into the names a
// developer wrote: C++ and Rust symbols demangled (Rust's legacy and v0
// manglings), JNI native methods back into Java's dotted names, and tells
// a Rust frame of the program's own crate from one of the toolchain's
// library crates (std and its kin) or a runtime's (tokio), which a
// program's generics instantiate inside its own binary.
//
// Both the tracer (choosing which frame labels an op) and explain
// (printing it) use it, so they agree on what is the program's own code.
package symname

import (
	"strings"

	"github.com/ianlancetaylor/demangle"
)

// Demangle returns the readable name of a C++ or Rust symbol without its
// parameter list and Rust's hash suffix; any other name (C's, Go's) is
// returned unchanged.
func Demangle(sym string) string {
	if !strings.HasPrefix(sym, "_Z") && !strings.HasPrefix(sym, "_R") {
		return sym
	}
	// Filter returns its input when the name is not one it understands.
	return dropABITags(demangle.Filter(sym, demangle.NoParams, demangle.NoClones))
}

// dropABITags removes C++ ABI tags ("handle[abi:cxx11]": libstdc++'s
// std::string in a return type), which say nothing a reader looks for.
func dropABITags(name string) string {
	for {
		i := strings.Index(name, "[abi:")
		if i < 0 {
			return name
		}
		j := strings.IndexByte(name[i:], ']')
		if j < 0 {
			return name
		}
		name = name[:i] + name[i+j+1:]
	}
}

// IsRust says whether sym is mangled the way rustc mangles: v0 (_R…) or
// the legacy scheme, an Itanium-like _ZN…E whose last element is the
// 17-character hash h0123456789abcdef.
func IsRust(sym string) bool {
	if strings.HasPrefix(sym, "_R") {
		return true
	}
	if !strings.HasPrefix(sym, "_ZN") || !strings.HasSuffix(sym, "E") {
		return false
	}
	body := sym[:len(sym)-1]
	i := strings.LastIndex(body, "17h")
	return i > 0 && len(body)-i == 3+16 && isHex(body[i+3:])
}

func isHex(s string) bool {
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// libraryCrates are crates whose code is never the call site a developer
// wants to read: Rust's standard library and the async runtimes and
// collections under most servers. Their generics are compiled into the
// program's binary and so are not told apart by module.
var libraryCrates = map[string]bool{
	"std": true, "core": true, "alloc": true, "hashbrown": true,
	"tokio": true, "mio": true, "futures_util": true, "futures_core": true,
	"futures_executor": true, "futures_channel": true, "async_std": true,
	"parking_lot": true, "parking_lot_core": true, "crossbeam_channel": true,
	"crossbeam_utils": true, "bytes": true, "std_detect": true,
	"panic_unwind": true, "rustc_std_workspace_core": true,
}

// RustLibrary says whether a demangled Rust path belongs to a library
// crate: the crate of its path, or for an impl ("<std::io::Lines<B> as
// core::iter::Iterator>::next") of the implementing type, is std, core,
// alloc, tokio or one of their kin. A trait impl of the program's own type
// for std's trait ("<app::Conn as std::io::Read>::read") is the program's.
func RustLibrary(path string) bool {
	return libraryCrates[Crate(path)]
}

// Crate is the first element of a demangled Rust path, looking through
// an impl's angle brackets and a reference, pointer or slice type to the
// implementing type's crate; for an impl on a type without a path (a
// type parameter, "<I as core::iter::IntoIterator>", or a primitive), to
// the trait's.
func Crate(path string) string {
	p, isImpl := strings.CutPrefix(path, "<")
	if isImpl {
		if self, trait, ok := strings.Cut(p, " as "); ok && !strings.Contains(self, "::") {
			p = trait
		}
	}
	for {
		q := strings.TrimLeft(p, "&[(*")
		q = strings.TrimPrefix(q, "mut ")
		q = strings.TrimPrefix(q, "const ")
		q = strings.TrimPrefix(q, "dyn ")
		if q == p {
			break
		}
		p = q
	}
	end := strings.IndexAny(p, ":<> ;,)]")
	if end < 0 {
		return p
	}
	return p[:end]
}

// cloneParts are the words GCC appends to a C function's name for a copy
// it specialized or split (-O2's constant propagation, scalar
// replacement, partial inlining, the cold part), each but "cold" with a
// number: read_request.constprop.0, serve.part.0.cold.
var cloneParts = map[string]bool{"constprop": true, "isra": true, "part": true, "cold": true, "lto_priv": true, "localalias": true}

// StripClone returns a C symbol without GCC's clone suffixes. Only a name
// whose every dot-separated part after the first is such a word or a
// number is changed, so a Go name (main.part) must not be given to it: a
// C identifier has no dot of its own.
func StripClone(sym string) string {
	parts := strings.Split(sym, ".")
	if len(parts) < 2 || parts[0] == "" {
		return sym
	}
	clone := false
	for _, p := range parts[1:] {
		switch {
		case cloneParts[p]:
			clone = true
		case p != "" && strings.Trim(p, "0123456789") == "":
		default:
			return sym
		}
	}
	if !clone {
		return sym
	}
	return parts[0]
}
