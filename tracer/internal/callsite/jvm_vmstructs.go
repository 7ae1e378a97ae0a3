package callsite

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
)

// HotSpot exports the layout of its own data structures for its
// Serviceability Agent: gHotSpotVMStructs (type, field, offset or, for a
// static field, its address), gHotSpotVMTypes (type, size) and
// gHotSpotVMIntConstants, each an array whose entry layout is itself
// exported (gHotSpotVMStructEntryFieldNameOffset, ...). lockstep reads
// what it needs to name a Java frame from them, so no offset of a JVM
// build is written into lockstep: a JVM whose tables lack a field is a
// JVM whose frames stay unnamed.

// hotspotLayout is what lockstep needs of one libjvm.so's layout: field
// offsets, type sizes, a flag bit, and static fields as offsets from the
// library's load address. It is the same for every process that maps the
// same file, and read once per file (Cache.jvmLayouts).
type hotspotLayout struct {
	// Method → ConstMethod → (ConstantPool, name index, bytecodes,
	// line number table).
	methodConstMethod    uint64
	constMethodConstants uint64
	constMethodNameIndex uint64
	constMethodFlags     uint64
	constMethodCodeSize  uint64
	constMethodSize      uint64 // sizeof(ConstMethod): the bytecodes follow it
	hasLineNumberTable   uint64 // the flag bit of ConstMethod::_flags
	// ConstantPool → its class and its entries (which follow it).
	poolHolder uint64
	poolSize   uint64
	// The index of the class's source file name in its pool (0 when the
	// JVM does not say where it keeps it: frames then name no file).
	sourceFileIndex uint64
	// Klass → its name.
	klassName    uint64
	symbolLength uint64
	symbolBody   uint64
	// The code cache: CodeCache::_heaps (static, from the load address),
	// each CodeHeap's memory, segment map and segment size, the block
	// header before each blob, a blob's name, a compiled method's Method.
	codeCacheHeaps   uint64
	arrayLen         uint64 // GrowableArrayBase::_len
	arrayData        uint64 // GrowableArray<int>::_data
	heapMemory       uint64
	heapSegmap       uint64
	heapLog2Segment  uint64
	virtualSpaceLow  uint64 // VirtualSpace::_low_boundary
	virtualSpaceHigh uint64 // VirtualSpace::_high
	heapBlockSize    uint64
	blobName         uint64
	blobFrameSize    uint64 // CodeBlob::_frame_size, in words
	compiledMethod   uint64 // CompiledMethod::_method
	// blobHeader is how much of a code blob's header is read: enough for
	// every field of a blob's or an nmethod's lockstep reads.
	blobHeader uint64
	// debug is where a compiled method's debug information is, to name
	// the Java frames of a compiled frame (the methods the JIT inlined
	// and the bytecode each is at); nil when the tables do not say, and
	// compiled frames name the compiled method alone.
	debug *nmethodLayout
}

// nmethodLayout is where an nmethod keeps its debug information. Its
// sections are contiguous (nmethod.hpp): metadata (Metadata* by index),
// then the scopes data (from CompiledMethod::_scopes_data_begin, an
// address), then the PcDescs (from _scopes_pcs_offset, an offset from
// the nmethod), up to the dependencies (_dependencies_offset), which end
// them. No field says where the metadata ends: the scopes data begins
// there.
type nmethodLayout struct {
	codeBegin       uint64 // CodeBlob::_code_begin: pc offsets count from it
	scopesDataBegin uint64 // CompiledMethod::_scopes_data_begin
	metadataOffset  uint64 // nmethod::_metadata_offset (an int)
	pcsOffset       uint64 // nmethod::_scopes_pcs_offset (an int)
	depsOffset      uint64 // nmethod::_dependencies_offset (an int)
	pcDesc          pcDescLayout
	// entryBci is InvocationEntryBci (-1): a scope's bci is stored less
	// it, so as an unsigned number.
	entryBci int
	// A frame deoptimized while it waits returns to its nmethod's
	// deoptimization handler (CompiledMethod::_deopt_handler_begin, an
	// address), its own return address kept in the frame, at
	// nmethod::_orig_pc_offset (an int) from its sp.
	deoptHandler uint64
	origPCOffset uint64
}

// vmEntry is one row of gHotSpotVMStructs.
type vmEntry struct {
	static bool
	offset uint64 // a field's offset, or a static field's address
}

// jvmLib is a libjvm.so: its dynamic symbols and load segments, to find
// the exported tables, and while they are read (f, then closed) the file
// the strings they point to are read from, rather than from the tracee.
type jvmLib struct {
	f     *os.File
	loads []elf.ProgHeader
	syms  map[string]uint64
	pages map[uint64]filePage // by page address
}

// close closes the file: the layout is read.
func (l *jvmLib) close() {
	if l.f != nil {
		l.f.Close()
		l.f, l.pages = nil, nil
	}
}

func openJVMLib(path string) (*jvmLib, error) {
	ef, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	defer ef.Close()
	l := &jvmLib{syms: map[string]uint64{}, pages: map[uint64]filePage{}}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD {
			l.loads = append(l.loads, p.ProgHeader)
		}
	}
	syms, err := ef.DynamicSymbols()
	if err != nil {
		return nil, fmt.Errorf("reading the dynamic symbols of %s: %w", path, err)
	}
	for _, s := range syms {
		if len(s.Name) > 9 && s.Name[:9] == "gHotSpotV" {
			l.syms[s.Name] = s.Value
		}
	}
	if l.f, err = os.Open(path); err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	return l, nil
}

// cString reads the NUL-terminated string at virtual address va of the
// library's file, "" when va is not in it. The tables' thousands of
// names lie together: the file is read a page at a time, each page once.
func (l *jvmLib) cString(va uint64) string {
	var b []byte
	for len(b) < maxSymbol {
		page, ok := l.page(va + uint64(len(b)))
		if !ok {
			return ""
		}
		if i := bytes.IndexByte(page, 0); i >= 0 {
			return string(append(b, page[:i]...))
		}
		b = append(b, page...)
	}
	return ""
}

// page is the file's bytes from virtual address va to the end of its
// page (of stringPage bytes) or of its segment, whichever comes first.
func (l *jvmLib) page(va uint64) ([]byte, bool) {
	if l.f == nil {
		return nil, false
	}
	key := va &^ (stringPage - 1)
	pg, ok := l.pages[key]
	if !ok {
		for _, p := range l.loads {
			lo, hi := max(key, p.Vaddr), min(key+stringPage, p.Vaddr+p.Filesz)
			if va < lo || va >= hi {
				continue
			}
			pg.start, pg.b = lo, make([]byte, hi-lo)
			n, _ := l.f.ReadAt(pg.b, int64(lo-p.Vaddr+p.Off))
			pg.b = pg.b[:n]
			break
		}
		l.pages[key] = pg
	}
	if va < pg.start || va-pg.start >= uint64(len(pg.b)) {
		return nil, false
	}
	return pg.b[va-pg.start:], true
}

// filePage is what the file holds of one page: from start, its bytes.
type filePage struct {
	start uint64
	b     []byte
}

// stringPage is how much of the file cString reads at once.
const stringPage = 4096

// jvmTables reads the exported tables of the libjvm.so mapped at base in
// pid: struct entries by "Type::field", type sizes by name, int constants
// by name. Strings are read from the file (lib), entries from the tracee.
type jvmTables struct {
	fields    map[string]vmEntry
	sizes     map[string]uint64
	constants map[string]uint64
}

// readJVMTables reads the three tables. It costs a few reads of the
// tracee's memory of some tens of KiB, once per libjvm.so file.
func readJVMTables(pid int, lib *jvmLib, base uint64) (*jvmTables, error) {
	word := func(name string) (uint64, error) {
		va, ok := lib.syms[name]
		if !ok {
			return 0, fmt.Errorf("libjvm.so exports no %s", name)
		}
		return ptrace.ReadU64(pid, base+va)
	}
	vars := map[string]uint64{}
	for _, n := range []string{
		"gHotSpotVMStructs", "gHotSpotVMStructEntryArrayStride", "gHotSpotVMStructEntryTypeNameOffset",
		"gHotSpotVMStructEntryFieldNameOffset", "gHotSpotVMStructEntryIsStaticOffset",
		"gHotSpotVMStructEntryOffsetOffset", "gHotSpotVMStructEntryAddressOffset",
		"gHotSpotVMTypes", "gHotSpotVMTypeEntryArrayStride", "gHotSpotVMTypeEntryTypeNameOffset",
		"gHotSpotVMTypeEntrySizeOffset",
		"gHotSpotVMIntConstants", "gHotSpotVMIntConstantEntryArrayStride",
		"gHotSpotVMIntConstantEntryNameOffset", "gHotSpotVMIntConstantEntryValueOffset",
	} {
		v, err := word(n)
		if err != nil {
			return nil, err
		}
		vars[n] = v
	}
	t := &jvmTables{fields: map[string]vmEntry{}, sizes: map[string]uint64{}, constants: map[string]uint64{}}
	// A table's strings point into the library: read from the file.
	str := func(addr uint64) string {
		if addr < base {
			return ""
		}
		return lib.cString(addr - base)
	}
	err := eachEntry(pid, vars["gHotSpotVMStructs"], vars["gHotSpotVMStructEntryArrayStride"], vars["gHotSpotVMStructEntryTypeNameOffset"], func(e []byte) {
		typ := str(u64At(e, vars["gHotSpotVMStructEntryTypeNameOffset"]))
		field := str(u64At(e, vars["gHotSpotVMStructEntryFieldNameOffset"]))
		ent := vmEntry{static: binary.NativeEndian.Uint32(e[vars["gHotSpotVMStructEntryIsStaticOffset"]:]) != 0}
		if ent.static {
			// As an offset from the load address: the layout serves
			// every process that maps the file.
			ent.offset = u64At(e, vars["gHotSpotVMStructEntryAddressOffset"]) - base
		} else {
			ent.offset = u64At(e, vars["gHotSpotVMStructEntryOffsetOffset"])
		}
		t.fields[typ+"::"+field] = ent
	})
	if err != nil {
		return nil, fmt.Errorf("reading gHotSpotVMStructs: %w", err)
	}
	err = eachEntry(pid, vars["gHotSpotVMTypes"], vars["gHotSpotVMTypeEntryArrayStride"], vars["gHotSpotVMTypeEntryTypeNameOffset"], func(e []byte) {
		t.sizes[str(u64At(e, vars["gHotSpotVMTypeEntryTypeNameOffset"]))] = u64At(e, vars["gHotSpotVMTypeEntrySizeOffset"])
	})
	if err != nil {
		return nil, fmt.Errorf("reading gHotSpotVMTypes: %w", err)
	}
	err = eachEntry(pid, vars["gHotSpotVMIntConstants"], vars["gHotSpotVMIntConstantEntryArrayStride"], vars["gHotSpotVMIntConstantEntryNameOffset"], func(e []byte) {
		v := binary.NativeEndian.Uint32(e[vars["gHotSpotVMIntConstantEntryValueOffset"]:])
		t.constants[str(u64At(e, vars["gHotSpotVMIntConstantEntryNameOffset"]))] = uint64(v)
	})
	if err != nil {
		return nil, fmt.Errorf("reading gHotSpotVMIntConstants: %w", err)
	}
	return t, nil
}

func u64At(b []byte, off uint64) uint64 { return binary.NativeEndian.Uint64(b[off:]) }

// tableEntries bounds a table's length (JDK 17 exports some 3,000
// structs' fields).
const tableEntries = 1 << 14

// eachEntry calls fn with each entry of the table at addr, whose entries
// are stride bytes and end at one whose name (at nameOff) is NULL. The
// table is read in pieces of 256 entries.
func eachEntry(pid int, addr, stride, nameOff uint64, fn func([]byte)) error {
	if addr == 0 || stride == 0 || stride > 256 || nameOff+8 > stride {
		return errors.New("no such table")
	}
	buf := make([]byte, 256*stride)
	for i := uint64(0); i < tableEntries; i += 256 {
		n, err := ptrace.ReadMemPrefix(pid, addr+i*stride, buf)
		if err != nil {
			return err
		}
		for j := uint64(0); (j+1)*stride <= uint64(n); j++ {
			e := buf[j*stride : (j+1)*stride]
			if u64At(e, nameOff) == 0 {
				return nil
			}
			fn(e)
		}
		if uint64(n) < uint64(len(buf)) {
			return errors.New("table ends past readable memory")
		}
	}
	return errors.New("table has no end")
}

// layout picks lockstep's fields out of the tables; an error names the
// first one missing.
func (t *jvmTables) layout() (*hotspotLayout, error) {
	l := &hotspotLayout{}
	var missing error
	field := func(dst *uint64, name string, static bool) {
		e, ok := t.fields[name]
		if (!ok || e.static != static) && missing == nil {
			missing = fmt.Errorf("the JVM's tables have no %s", name)
		}
		*dst = e.offset
	}
	size := func(dst *uint64, name string) {
		s, ok := t.sizes[name]
		if !ok && missing == nil {
			missing = fmt.Errorf("the JVM's tables have no size of %s", name)
		}
		*dst = s
	}
	field(&l.methodConstMethod, "Method::_constMethod", false)
	field(&l.constMethodConstants, "ConstMethod::_constants", false)
	field(&l.constMethodNameIndex, "ConstMethod::_name_index", false)
	field(&l.constMethodFlags, "ConstMethod::_flags", false)
	field(&l.constMethodCodeSize, "ConstMethod::_code_size", false)
	size(&l.constMethodSize, "ConstMethod")
	field(&l.poolHolder, "ConstantPool::_pool_holder", false)
	size(&l.poolSize, "ConstantPool")
	field(&l.klassName, "Klass::_name", false)
	if e, ok := t.fields["ConstantPool::_source_file_name_index"]; ok && !e.static {
		l.sourceFileIndex = e.offset
	}
	field(&l.symbolLength, "Symbol::_length", false)
	field(&l.symbolBody, "Symbol::_body", false)
	field(&l.codeCacheHeaps, "CodeCache::_heaps", true)
	field(&l.arrayLen, "GrowableArrayBase::_len", false)
	field(&l.arrayData, "GrowableArray<int>::_data", false)
	field(&l.heapMemory, "CodeHeap::_memory", false)
	field(&l.heapSegmap, "CodeHeap::_segmap", false)
	field(&l.heapLog2Segment, "CodeHeap::_log2_segment_size", false)
	field(&l.virtualSpaceLow, "VirtualSpace::_low_boundary", false)
	field(&l.virtualSpaceHigh, "VirtualSpace::_high", false)
	size(&l.heapBlockSize, "HeapBlock")
	field(&l.blobName, "CodeBlob::_name", false)
	field(&l.blobFrameSize, "CodeBlob::_frame_size", false)
	field(&l.compiledMethod, "CompiledMethod::_method", false)
	bit, ok := t.constants["ConstMethod::_has_linenumber_table"]
	if !ok && missing == nil {
		missing = errors.New("the JVM's tables have no ConstMethod::_has_linenumber_table")
	}
	l.hasLineNumberTable = bit
	l.debug = t.nmethodLayout()
	l.blobHeader = max(l.blobName, l.compiledMethod, l.blobFrameSize) + 8
	if d := l.debug; d != nil {
		l.blobHeader = max(l.blobHeader, d.codeBegin+8, d.scopesDataBegin+8, d.metadataOffset+4, d.pcsOffset+4, d.depsOffset+4,
			d.deoptHandler+8, d.origPCOffset+4)
	}
	return l, missing
}

// nmethodLayout picks where nmethods keep their debug information out of
// the tables; nil when one of its fields is missing: a JVM whose compiled
// frames then name their compiled method alone, as before lockstep read
// the debug information.
func (t *jvmTables) nmethodLayout() *nmethodLayout {
	d := &nmethodLayout{}
	ok := true
	field := func(dst *uint64, name string) {
		e, found := t.fields[name]
		ok = ok && found && !e.static
		*dst = e.offset
	}
	field(&d.codeBegin, "CodeBlob::_code_begin")
	field(&d.scopesDataBegin, "CompiledMethod::_scopes_data_begin")
	field(&d.metadataOffset, "nmethod::_metadata_offset")
	field(&d.pcsOffset, "nmethod::_scopes_pcs_offset")
	field(&d.depsOffset, "nmethod::_dependencies_offset")
	field(&d.pcDesc.pc, "PcDesc::_pc_offset")
	field(&d.pcDesc.scope, "PcDesc::_scope_decode_offset")
	field(&d.deoptHandler, "CompiledMethod::_deopt_handler_begin")
	field(&d.origPCOffset, "nmethod::_orig_pc_offset")
	d.pcDesc.size = t.sizes["PcDesc"]
	bci, found := t.constants["InvocationEntryBci"]
	d.entryBci = int(int32(uint32(bci)))
	if !ok || !found || d.pcDesc.size < max(d.pcDesc.pc, d.pcDesc.scope)+4 {
		return nil
	}
	return d
}
