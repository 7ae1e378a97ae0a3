package callsite

import (
	"encoding/binary"
	"fmt"
	"testing"
)

// pcDescs lays PcDescs out as layout says: (pc offset, scope offset)
// pairs, the rest of each record zero.
func pcDescs(layout pcDescLayout, descs [][2]int32) []byte {
	b := make([]byte, int(layout.size)*len(descs))
	for i, d := range descs {
		rec := b[i*int(layout.size):]
		binary.NativeEndian.PutUint32(rec[layout.pc:], uint32(d[0]))
		binary.NativeEndian.PutUint32(rec[layout.scope:], uint32(d[1]))
	}
	return b
}

func TestScopeOffset(t *testing.T) {
	descs := [][2]int32{
		{-1, 0}, // HotSpot's first PcDesc: below every pc
		{12, 7}, {30, 19}, {31, 1}, {400, 55},
		{0x7fffffff, 0}, // and its last: above every pc
	}
	for _, layout := range []pcDescLayout{
		{size: 16, pc: 0, scope: 4}, // JDK 17's
		{size: 24, pc: 8, scope: 16},
	} {
		d := &nmethodDebug{pcs: pcDescs(layout, descs), pcDesc: layout}
		for _, tc := range []struct {
			pc    int32
			scope int
			ok    bool
		}{
			{12, 7, true}, {30, 19, true}, {31, 1, true}, {400, 55, true},
			// Only an exact pc: a return address is where its call's
			// PcDesc was recorded.
			{13, 0, false}, {0, 0, false}, {29, 0, false}, {401, 0, false}, {1 << 30, 0, false},
		} {
			scope, ok := d.scopeOffset(tc.pc)
			if scope != tc.scope || ok != tc.ok {
				t.Errorf("layout %+v: scopeOffset(%d) = %d, %v; want %d, %v", layout, tc.pc, scope, ok, tc.scope, tc.ok)
			}
		}
	}
	if _, ok := (&nmethodDebug{}).scopeOffset(12); ok {
		t.Error("scopeOffset without PcDescs found one")
	}
}

// The scopes of a frame of serve (Method* 0x2000) at bci 25, into which
// nextLine (0x1000) was inlined, at bci 1, into which readLine (0x3000)
// was, at bci 299, as DebugInformationRecorder lays them out: a first
// byte no record starts at, then each record, its sender's first, as
// (sender, metadata index, bci+1, locals, expressions, monitors).
var scopeFixture = []byte{
	0xff,
	0, 2, 26, 0, 0, 0, // at 1: serve, sent from none
	1, 1, 2, 0, 0, 0, // at 7: nextLine, sent from 1
	// at 13: readLine, sent from 7; its bci+1, 300, in two UNSIGNED5
	// bytes: 192 + (300-192)%64 = 236, then (300-192)>>6 = 1.
	7, 3, 236, 1, 0, 0, 0,
}

func TestScopeChain(t *testing.T) {
	metadata := make([]byte, 3*8)
	for i, m := range []uint64{0x1000, 0x2000, 0x3000} {
		binary.NativeEndian.PutUint64(metadata[8*i:], m)
	}
	debug := func(scopes []byte) *nmethodDebug {
		return &nmethodDebug{metadata: metadata, scopes: scopes, entryBci: -1}
	}
	// patched is the fixture with bytes at offsets replaced.
	patched := func(at map[int]byte) []byte {
		b := append([]byte(nil), scopeFixture...)
		for i, v := range at {
			b[i] = v
		}
		return b
	}
	for _, tc := range []struct {
		name   string
		scopes []byte
		off    int
		want   string // the chain, or the error's presence: "error"
	}{
		{"inlined twice", scopeFixture, 13, "[{0x3000 299} {0x1000 1} {0x2000 25}]"},
		{"inlined once", scopeFixture, 7, "[{0x1000 1} {0x2000 25}]"},
		{"the compiled method", scopeFixture, 1, "[{0x2000 25}]"},
		{"no scope", scopeFixture, serializedNull, "[]"},
		{"at the method's entry", patched(map[int]byte{3: 0}), 1, "[{0x2000 -1}]"},
		{"a sender after its scope", patched(map[int]byte{7: 13}), 13, "error"},
		{"a scope its own sender", patched(map[int]byte{1: 1}), 1, "error"},
		{"a null method", patched(map[int]byte{8: 0}), 7, "error"},
		{"a method past the metadata", patched(map[int]byte{8: 4}), 7, "error"},
		{"an offset past the scopes", scopeFixture, len(scopeFixture), "error"},
		{"a record cut short", scopeFixture[:16], 13, "error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chain, err := debug(tc.scopes).chain(tc.off)
			got := chainString(chain)
			if err != nil {
				got = "error"
				t.Log(err)
			}
			if got != tc.want {
				t.Errorf("chain(%d) = %s, want %s", tc.off, got, tc.want)
			}
		})
	}
}

// chainString prints a chain's methods in hex and bcis in decimal.
func chainString(chain []javaScope) string {
	s := "["
	for i, sc := range chain {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("{%#x %d}", sc.method, sc.bci)
	}
	return s + "]"
}

func TestScopeChainDepth(t *testing.T) {
	// Each record sent from the one before: deeper than any JIT
	// inlines, taken for a misread.
	scopes := []byte{0xff}
	off := 0
	for range maxScopes + 1 {
		next := len(scopes)
		scopes = append(scopes, byte(off), 1, 1, 0, 0, 0)
		off = next
	}
	d := &nmethodDebug{metadata: make([]byte, 8), scopes: scopes, entryBci: -1}
	if chain, err := d.chain(off); err == nil {
		t.Errorf("a chain of %d scopes decoded: %d", maxScopes+1, len(chain))
	}
	if chain, err := d.chain(1 + 6*(maxScopes-1)); err != nil || len(chain) != maxScopes {
		t.Errorf("a chain of %d scopes: %d, %v", maxScopes, len(chain), err)
	}
}

func TestNmethodLayout(t *testing.T) {
	full := func() *jvmTables {
		t := &jvmTables{fields: map[string]vmEntry{}, sizes: map[string]uint64{"PcDesc": 16},
			constants: map[string]uint64{"InvocationEntryBci": 0xffffffff}}
		for name, off := range map[string]uint64{
			"CodeBlob::_code_begin": 32, "CompiledMethod::_scopes_data_begin": 120,
			"nmethod::_metadata_offset": 260, "nmethod::_scopes_pcs_offset": 268,
			"nmethod::_dependencies_offset": 272, "PcDesc::_pc_offset": 0, "PcDesc::_scope_decode_offset": 4,
			"CompiledMethod::_deopt_handler_begin": 128, "nmethod::_orig_pc_offset": 300,
		} {
			t.fields[name] = vmEntry{offset: off}
		}
		return t
	}
	d := full().nmethodLayout()
	want := nmethodLayout{codeBegin: 32, scopesDataBegin: 120, metadataOffset: 260, pcsOffset: 268, depsOffset: 272,
		pcDesc: pcDescLayout{size: 16, pc: 0, scope: 4}, entryBci: -1, deoptHandler: 128, origPCOffset: 300}
	if d == nil || *d != want {
		t.Fatalf("nmethodLayout = %+v, want %+v", d, want)
	}
	for _, tc := range []struct {
		name   string
		mutate func(*jvmTables)
	}{
		{"no scopes data", func(t *jvmTables) { delete(t.fields, "CompiledMethod::_scopes_data_begin") }},
		{"a static field", func(t *jvmTables) { t.fields["nmethod::_metadata_offset"] = vmEntry{static: true, offset: 8} }},
		{"no InvocationEntryBci", func(t *jvmTables) { delete(t.constants, "InvocationEntryBci") }},
		{"a PcDesc smaller than its fields", func(t *jvmTables) { t.sizes["PcDesc"] = 6 }},
	} {
		tables := full()
		tc.mutate(tables)
		if d := tables.nmethodLayout(); d != nil {
			t.Errorf("%s: nmethodLayout = %+v, want none", tc.name, d)
		}
	}
}
