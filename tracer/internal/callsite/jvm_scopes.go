package callsite

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
)

// A compiled frame is one nmethod's, but may stand for several Java
// frames: the JIT inlines small methods into their callers, and the
// program's method may be one inlined into a JDK method, or hold JDK
// methods inlined into it. HotSpot keeps, for each place compiled code
// may stop or call out (a return address among them), the Java frames
// that place is in, for deoptimization and stack traces: the nmethod's
// debug information. A PcDesc, found by the place's offset from the
// code's start, gives the offset of the innermost frame's record in the
// scopes data; each record names its method (an index into the nmethod's
// metadata), its bytecode index and its sender's record, the frame it
// was inlined into (0: none, the compiled method itself). The numbers
// are UNSIGNED5, as in line number tables.

// javaScope is one Java frame of a compiled frame: its Method* and the
// bytecode index it is at (negative: unknown, the method's entry).
type javaScope struct {
	method uint64
	bci    int
}

// pcDescLayout is where a PcDesc keeps what lockstep reads of it.
type pcDescLayout struct {
	size  uint64 // sizeof(PcDesc): the array's stride
	pc    uint64 // _pc_offset: the place's offset from the code's start
	scope uint64 // _scope_decode_offset: its innermost scope's record
}

// nmethodDebug is an nmethod's debug information as read from it.
type nmethodDebug struct {
	metadata []byte // Metadata* by index, from 1 (0 is null)
	scopes   []byte // scope records, by decode offset from its start
	pcs      []byte // PcDescs, sorted by pc offset
	pcDesc   pcDescLayout
	entryBci int // InvocationEntryBci: what a stored bci of 0 means
}

// serializedNull is the decode offset of no record (HotSpot's
// DebugInformationRecorder::serialized_null): the stream begins with a
// byte no record starts at, so that no record's offset is 0.
const serializedNull = 0

// maxScopes bounds a chain of inlined frames as decoded (JDK 17 inlines
// at most 15 levels deep with C2, 9 with C1).
const maxScopes = 32

// maxDebugInfo bounds an nmethod's debug information as read: a larger
// one is taken for a misread.
const maxDebugInfo = 4 << 20

// scopeOffset is the decode offset of the innermost scope at pcOffset,
// as nmethod::find_pc_desc finds it for an exact pc: the PcDesc whose pc
// offset is pcOffset; ok is false when there is none (a pc no call or
// safepoint is at).
func (d *nmethodDebug) scopeOffset(pcOffset int32) (int, bool) {
	size := int(d.pcDesc.size)
	if size == 0 {
		return 0, false
	}
	at := func(i int, field uint64) int32 {
		return int32(binary.NativeEndian.Uint32(d.pcs[i*size+int(field):]))
	}
	n := len(d.pcs) / size
	i := sort.Search(n, func(i int) bool { return at(i, d.pcDesc.pc) >= pcOffset })
	if i == n || at(i, d.pcDesc.pc) != pcOffset {
		return 0, false
	}
	return int(at(i, d.pcDesc.scope)), true
}

// chain decodes the scopes from the record at offset off out to the
// compiled method's own: innermost first. Each record starts with its
// sender's offset, its method's metadata index and its bci less
// InvocationEntryBci (ScopeDesc::decode_body; the offsets of its
// locals, expressions and monitors follow, which lockstep does not
// need). A sender's record is written before the records of the frames
// inlined into it, or shared with an earlier one, so its offset is
// smaller: a record that says otherwise is a misread, and the walk ends.
func (d *nmethodDebug) chain(off int) ([]javaScope, error) {
	var scopes []javaScope
	for off != serializedNull {
		if len(scopes) == maxScopes {
			return nil, errors.New("scopes nested too deep")
		}
		if off < 0 || off >= len(d.scopes) {
			return nil, fmt.Errorf("a scope at %d of %d bytes", off, len(d.scopes))
		}
		var v [3]uint32
		b := d.scopes[off:]
		for i := range v {
			n := 0
			if v[i], n = unsigned5(b); n == 0 {
				return nil, fmt.Errorf("a scope at %d cut short", off)
			}
			b = b[n:]
		}
		sender, index, bci := int(v[0]), uint64(v[1]), int(int32(v[2]))+d.entryBci
		if sender >= off {
			return nil, fmt.Errorf("a scope at %d sent from %d", off, sender)
		}
		if index == 0 || index*8 > uint64(len(d.metadata)) {
			return nil, fmt.Errorf("a scope at %d with metadata %d of %d", off, index, len(d.metadata)/8)
		}
		scopes = append(scopes, javaScope{method: u64At(d.metadata, (index-1)*8), bci: bci})
		off = sender
	}
	return scopes, nil
}

// readScopes is the chain of Java frames the compiled code of the nmethod
// at addr, whose header is hdr, is in at the return address ret: nil when
// the JVM's layout does not say, or the nmethod has none at ret (a
// native method's wrapper records none), or what is read does not
// decode.
func (j *jvmProcess) readScopes(pid int, addr uint64, hdr []byte, ret uint64) []javaScope {
	l := j.layout.debug
	if l == nil {
		return nil
	}
	i32 := func(off uint64) uint64 { return uint64(int64(int32(binary.NativeEndian.Uint32(hdr[off:])))) }
	code := u64At(hdr, l.codeBegin)
	meta, scopes := addr+i32(l.metadataOffset), u64At(hdr, l.scopesDataBegin)
	pcs, end := addr+i32(l.pcsOffset), addr+i32(l.depsOffset)
	if ret <= code || ret-code > 1<<31 || meta < addr || meta > scopes || scopes > pcs || pcs > end || end-meta > maxDebugInfo {
		return nil
	}
	b := make([]byte, end-meta)
	if ptrace.ReadMem(pid, meta, b) != nil {
		return nil
	}
	d := &nmethodDebug{metadata: b[:scopes-meta], scopes: b[scopes-meta : pcs-meta], pcs: b[pcs-meta:],
		pcDesc: l.pcDesc, entryBci: l.entryBci}
	off, ok := d.scopeOffset(int32(ret - code))
	if !ok {
		return nil
	}
	chain, err := d.chain(off)
	if err != nil {
		return nil
	}
	return chain
}
