package callsite

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
)

// A JVM's ops leave through the JDK's native code (libnio.so's read0), and
// the Java code above it is in anonymous memory: the site is the JDK's
// frame. The Java method of the program that made the call is found by
// following the frame pointers from the stop, through the JDK's native
// frame, into the Java frames. A return address into the code cache is
// looked up there (its segment map, as HotSpot's own CodeCache::find_blob
// does): into the interpreter, the caller's frame is an interpreted one,
// which keeps rbp as its frame pointer and its Method* and bytecode
// pointer at fixed slots below it; into an nmethod, the caller is
// compiled code, whose nmethod names its Method and the size of its
// frame, which leads to the next frame record whether or not the
// compiled code keeps rbp (-XX:+PreserveFramePointer): the JVM runs as
// the node's command says, with no flag or agent of lockstep's. The first
// method of a class outside the JDK is the caller, named as Java's stack
// traces name it: Class.method(File.java:line), the line from the
// method's line number table and the frame's bytecode index. An
// interpreted frame keeps that index; a compiled frame stands for the
// Java frames its nmethod's debug information lists at the return
// address (jvm_scopes.go): the methods inlined into the compiled one,
// each with its index, of which the program's may be any.
//
// Everything is read, never written; what a read finds is checked (a
// return address must lie in a code heap's used block, a name must be
// UTF-8 of sane length), so a stale or garbled frame ends the walk rather
// than naming nonsense. What one process's reads find is kept per
// process: a method's name by its Method*, a return address's code. Class
// unloading could reuse an address for another method; lockstep's nodes
// do not unload classes while they run.

// javaFrameWalk bounds the frame-pointer walk through a JVM's frames: a
// read through a BufferedReader is a dozen JDK frames deep.
const javaFrameWalk = 48

// Interpreter frame slots below the frame pointer, in words (HotSpot's
// frame_x86.hpp: interpreter_frame_method_offset = -3,
// interpreter_frame_bcp_offset = -8). They are not in the exported
// tables, and have been these since JDK 9.
const (
	interpMethodSlot = 3
	interpBCPSlot    = 8
)

// jdkPackages are the class name prefixes of the JDK's own code: a frame
// of theirs is the JDK's, not the program's.
var jdkPackages = []string{"java.", "javax.", "jdk.", "sun.", "com.sun."}

// codeKind is what a return address into a JVM's code cache returns to.
type codeKind uint8

const (
	codeOther       codeKind = iota // a stub, an adapter, or not the code cache
	codeInterpreted                 // the interpreter: the caller is interpreted
	codeCompiled                    // an nmethod: compiled Java code (or a native wrapper)
)

type javaCode struct {
	kind   codeKind
	method uint64 // a compiled method's Method*
	// words is a compiled frame's size in words, its return address
	// and saved frame pointer included (CodeBlob::_frame_size).
	words uint64
	// scopes are the Java frames a compiled frame is in at the return
	// address, innermost first, the compiled method last; nil when its
	// debug information does not say: method, at no known bci, then.
	scopes []javaScope
	// nmethod is a compiled frame's nmethod.
	nmethod uint64
	// origPC is, when the return address is the nmethod's
	// deoptimization handler, the offset from the frame's sp of the
	// word that keeps the frame's own return address; 0 otherwise.
	origPC uint64
}

// codeHeap is one of the code cache's heaps: its blocks and its segment
// map (a byte per segment: 0 at a block's start, else how many segments
// to step back towards it; 0xff for free segments).
type codeHeap struct {
	low, high uint64
	segmap    uint64
	log2      uint
}

const segmapFree = 0xff

// javaClass is a class as its frames name it.
type javaClass struct {
	name string // dotted: "java.io.BufferedReader", "CallSiteWorker$1"
	file string // its source file, "" when the class does not say
	// jdk says its frames are not the program's: the JDK's, or glue the
	// JVM generated.
	jdk bool
}

// javaMethod is what a Method* names, and how to find its lines.
type javaMethod struct {
	class *javaClass
	name  string
	// codeBase is where its bytecodes start, for a frame's bci.
	codeBase uint64
	// lines are (bci, line) pairs of its line number table, in order.
	lines [][2]int
}

// jvmProcess is what the unwinder keeps of a JVM process: the layout of
// its libjvm.so, where that is loaded, its code heaps (read once they
// exist), and what its frames were found to be.
type jvmProcess struct {
	layout  *hotspotLayout
	base    uint64
	heaps   []codeHeap
	code    map[uint64]javaCode
	methods map[uint64]*javaMethod // nil value: not a method
	classes map[uint64]*javaClass
	// blobNames are the names of the code blobs met, by address.
	blobNames map[uint64]string
}

// jvmOf is p's JVM state, nil when p runs no HotSpot JVM whose tables
// name what lockstep needs.
func (c *Cache) jvmOf(p *Process) *jvmProcess {
	if p.jvmKnown {
		return p.jvm
	}
	p.jvmKnown = true
	for i := range p.maps.exec {
		m := &p.maps.exec[i]
		if filepath.Base(m.path) != "libjvm.so" {
			continue
		}
		lib, layout := c.jvmLayout(p.Pid, m)
		if layout == nil {
			return nil
		}
		p.jvm = &jvmProcess{layout: layout, base: loadBase(m, lib), code: map[uint64]javaCode{},
			methods: map[uint64]*javaMethod{}, classes: map[uint64]*javaClass{}, blobNames: map[uint64]string{}}
		return p.jvm
	}
	return nil
}

// loadBase is the address the library's virtual address 0 is mapped at,
// from its executable mapping.
func loadBase(m *mapping, lib *jvmLib) uint64 {
	for _, ph := range lib.loads {
		if m.offset >= ph.Off && m.offset < ph.Off+ph.Filesz {
			return m.start - (m.offset - ph.Off + ph.Vaddr)
		}
	}
	return m.start - m.offset
}

// jvmLayout reads a libjvm.so's layout through the first process that
// maps it, once per file: nil when its tables lack a field lockstep needs
// (the error is kept for the tests).
func (c *Cache) jvmLayout(pid int, m *mapping) (*jvmLib, *hotspotLayout) {
	if l, ok := c.jvmLibs[m.path]; ok {
		return l.lib, l.layout
	}
	var entry jvmLibEntry
	defer func() { c.jvmLibs[m.path] = entry }()
	lib, err := openJVMLib(m.root + m.path)
	if err != nil {
		entry.err = err
		return nil, nil
	}
	// Its file is not kept open: a Cache lives for a trial, and
	// lockstep for a campaign of them.
	defer lib.close()
	tables, err := readJVMTables(pid, lib, loadBase(m, lib))
	if err != nil {
		entry.err = err
		return nil, nil
	}
	layout, err := tables.layout()
	if err != nil {
		entry.err = err
		return nil, nil
	}
	entry.lib, entry.layout = lib, layout
	return lib, layout
}

// jvmLibEntry is a libjvm.so's layout, or why it has none.
type jvmLibEntry struct {
	lib    *jvmLib
	layout *hotspotLayout
	err    error
}

// javaCaller is the first Java method of the program's own (a class
// outside the JDK) on the stack of p's thread stopped with frame pointer
// fp, as Class.method(File.java:line); "" when the walk finds none. The
// stack window is the stop's (Cache.site read it).
func (c *Cache) javaCaller(p *Process, fp uint64) string {
	j := c.jvmOf(p)
	if j == nil {
		return ""
	}
	stack := &c.stack
	lo := stack.sp
	// fp is a frame record (saved rbp, then the return address into the
	// caller); interp says whose: an interpreted frame's, or another's (a
	// C function's, a compiled frame's, a native wrapper's).
	interp := false
	for i := 0; i < javaFrameWalk; i++ {
		if fp < lo || fp > stack.sp+8<<20 || fp%8 != 0 {
			break
		}
		next, ok1 := c.stackWord(p, fp)
		ret, ok2 := c.stackWord(p, fp+8)
		if !ok1 || !ok2 {
			break
		}
		// one holds a frame that is one Java frame, without an
		// allocation at every stop.
		var one [1]javaScope
		var scopes []javaScope
		code := j.codeAt(p.Pid, ret)
		switch code.kind {
		case codeInterpreted:
			// The caller, whose frame is at next, is interpreted.
			if next <= fp {
				return ""
			}
			method, _ := c.stackWord(p, next-interpMethodSlot*8)
			bcp, _ := c.stackWord(p, next-interpBCPSlot*8)
			one[0] = javaScope{method: method, bci: j.bciOf(p.Pid, method, bcp)}
			scopes = one[:]
		case codeCompiled:
			// The caller is compiled: its frame, of a size its nmethod
			// knows, ends with its own return address and saved rbp, a
			// frame record (HotSpot's frame::sender_for_compiled_frame).
			// Compiled code need not keep rbp: rbp alone would skip it.
			sp, ok := c.callerSP(p, fp, interp)
			if !ok {
				return ""
			}
			next, scopes = sp+code.words*8-16, code.scopes
			if code.origPC != 0 {
				scopes = c.deoptimizedScopes(p, j, code, sp)
			}
			if scopes == nil {
				one[0] = javaScope{method: code.method, bci: -1}
				scopes = one[:]
			}
		}
		if name := j.programFrame(p.Pid, scopes); name != "" {
			return name
		}
		lo, fp, interp = fp+16, next, code.kind == codeInterpreted
	}
	return ""
}

// callerSP is the stack pointer of the caller of the frame whose record
// is at fp, as it was at the call: just above the return address, unless
// the frame is interpreted, whose caller's sp it keeps below its frame
// pointer (interpreter_frame_sender_sp_offset): a compiled caller reaches
// the interpreter through an adapter that lays the arguments out between
// the two frames.
func (c *Cache) callerSP(p *Process, fp uint64, interp bool) (uint64, bool) {
	if !interp {
		return fp + 16, true
	}
	sp, ok := c.stackWord(p, fp-8)
	return sp, ok && sp >= fp+16 && sp%8 == 0
}

// stackWord is the word at addr of the stopped thread's stack: from the
// stop's window, or read on its own past it.
func (c *Cache) stackWord(p *Process, addr uint64) (uint64, bool) {
	if b, ok := c.stack.bytes(addr, 8); ok {
		return binary.NativeEndian.Uint64(b), true
	}
	v, err := ptrace.ReadU64(p.Pid, addr)
	return v, err == nil
}

// deoptimizedScopes are the Java frames of a compiled frame at sp that
// the JVM deoptimized while it waited (code at its return address is
// its nmethod's deoptimization handler, where the frame is turned into
// interpreted ones once it is returned to): those at its own return
// address, which the JVM keeps in the frame (nmethod::_orig_pc_offset),
// as its own stack walks find them. The handler's address is shared by
// every deoptimized frame of the nmethod: what it is in is not cached
// by it, but by the original address.
func (c *Cache) deoptimizedScopes(p *Process, j *jvmProcess, code javaCode, sp uint64) []javaScope {
	orig, ok := c.stackWord(p, sp+code.origPC)
	if !ok {
		return nil
	}
	o := j.codeAt(p.Pid, orig)
	if o.kind != codeCompiled || o.nmethod != code.nmethod || o.origPC != 0 {
		return nil
	}
	return o.scopes
}

// programFrame names the first of the Java frames scopes (innermost
// first) whose method is the program's, "" when none is.
func (j *jvmProcess) programFrame(pid int, scopes []javaScope) string {
	for _, s := range scopes {
		if s.method == 0 {
			continue
		}
		if m := j.method(pid, s.method); m != nil && !m.class.jdk {
			return m.frame(s.bci)
		}
	}
	return ""
}

// bciOf is the bytecode index of an interpreted frame of the method at
// Method* method whose bytecode pointer is bcp; -1 when bcp is not in
// its bytecodes (a frame still being set up, or not a method).
func (j *jvmProcess) bciOf(pid int, method, bcp uint64) int {
	if method == 0 {
		return -1
	}
	m := j.method(pid, method)
	if m == nil || bcp < m.codeBase || bcp-m.codeBase >= 1<<16 {
		return -1
	}
	return int(bcp - m.codeBase)
}

// frame names a frame of the method at bytecode index bci:
// Class.method(File.java:line), the line when bci finds one.
func (m *javaMethod) frame(bci int) string {
	where := m.class.file
	if where == "" {
		where = "Unknown Source"
	} else if line := m.lineAt(bci); line > 0 {
		where += ":" + strconv.Itoa(line)
	}
	return m.class.name + "." + m.name + "(" + where + ")"
}

// lineAt is the source line of the bytecode at index bci, as the JVM's
// own stack traces find it: the entry of the line number table with the
// greatest bci not past it. 0 when unknown (a negative bci).
func (m *javaMethod) lineAt(bci int) int {
	if bci < 0 || bci >= 1<<16 || len(m.lines) == 0 {
		return 0
	}
	best, line := -1, 0
	for _, e := range m.lines {
		if e[0] == bci {
			return e[1]
		}
		if e[0] < bci && e[0] >= best {
			best, line = e[0], e[1]
		}
	}
	return line
}

// codeAt is what the return address ret returns to, once per address.
func (j *jvmProcess) codeAt(pid int, ret uint64) javaCode {
	if code, ok := j.code[ret]; ok {
		return code
	}
	if j.heaps == nil {
		j.heaps = j.readHeaps(pid)
		if j.heaps == nil {
			return javaCode{} // not yet set up: asked again at the next stop
		}
	}
	code := j.findCode(pid, ret)
	if len(j.code) >= maxNotCode {
		j.code = map[uint64]javaCode{}
	}
	j.code[ret] = code
	return code
}

// readHeaps reads the code cache's heaps (CodeCache::_heaps), nil when
// it cannot or there are none yet.
func (j *jvmProcess) readHeaps(pid int) []codeHeap {
	l := j.layout
	arr, err := ptrace.ReadU64(pid, j.base+l.codeCacheHeaps)
	if err != nil || arr == 0 {
		return nil
	}
	var hdr [16]byte
	if ptrace.ReadMem(pid, arr+l.arrayLen, hdr[:4]) != nil || ptrace.ReadMem(pid, arr+l.arrayData, hdr[8:]) != nil {
		return nil
	}
	n := int(int32(binary.NativeEndian.Uint32(hdr[:4])))
	data := binary.NativeEndian.Uint64(hdr[8:])
	if n <= 0 || n > 16 {
		return nil
	}
	ptrs := make([]byte, 8*n)
	if ptrace.ReadMem(pid, data, ptrs) != nil {
		return nil
	}
	size := max(l.heapMemory, l.heapSegmap) + max(l.virtualSpaceLow, l.virtualSpaceHigh) + 8
	size = max(size, l.heapLog2Segment+4)
	buf := make([]byte, size)
	var heaps []codeHeap
	for i := range n {
		if ptrace.ReadMem(pid, binary.NativeEndian.Uint64(ptrs[8*i:]), buf) != nil {
			return nil
		}
		h := codeHeap{
			low:    u64At(buf, l.heapMemory+l.virtualSpaceLow),
			high:   u64At(buf, l.heapMemory+l.virtualSpaceHigh),
			segmap: u64At(buf, l.heapSegmap+l.virtualSpaceLow),
			log2:   uint(binary.NativeEndian.Uint32(buf[l.heapLog2Segment:])),
		}
		if h.low == 0 || h.high <= h.low || h.log2 == 0 || h.log2 > 16 {
			continue
		}
		heaps = append(heaps, h)
	}
	return heaps
}

// segmapWindow is how much of a segment map is read at once, walking
// back to a block's start (a hop is at most 254 segments; the
// interpreter is some 2,000 segments long).
const segmapWindow = 4096

// findCode looks ret up in the code heaps, as CodeHeap::find_start does:
// the segment map leads back to the block's start, the block's header is
// followed by the blob, whose name says what it is.
func (j *jvmProcess) findCode(pid int, ret uint64) javaCode {
	for _, h := range j.heaps {
		if ret < h.low || ret >= h.high {
			continue
		}
		seg, ok := h.blockStart(pid, (ret-h.low)>>h.log2)
		if !ok {
			return javaCode{}
		}
		blob := h.low + seg<<h.log2 + j.layout.heapBlockSize
		return j.blobCode(pid, blob, ret)
	}
	return javaCode{}
}

// blockStart follows the segment map back from segment seg to the start
// of its block; ok is false for a free segment or a map that cannot be
// read.
func (h codeHeap) blockStart(pid int, seg uint64) (uint64, bool) {
	buf := make([]byte, segmapWindow)
	for range 16 {
		from := seg - min(seg, segmapWindow-1)
		w := buf[:seg-from+1]
		if ptrace.ReadMem(pid, h.segmap+from, w) != nil {
			return 0, false
		}
		i := seg - from
		for w[i] > 0 && w[i] != segmapFree && uint64(w[i]) <= i {
			i -= uint64(w[i])
		}
		switch {
		case w[i] == segmapFree:
			return 0, false
		case w[i] == 0:
			return from + i, true
		case from == 0:
			return 0, false // a hop before the map's start: misread
		}
		seg = from + i // a hop past the window: read the one before
	}
	return 0, false
}

// blobCode is what the code blob at blob is, returning to ret: the
// interpreter, an nmethod (with its Method* and the Java frames at ret),
// or other code.
func (j *jvmProcess) blobCode(pid int, blob, ret uint64) javaCode {
	l := j.layout
	buf := make([]byte, l.blobHeader)
	if ptrace.ReadMem(pid, blob, buf) != nil {
		return javaCode{}
	}
	switch j.blobName(pid, u64At(buf, l.blobName)) {
	case "Interpreter":
		return javaCode{kind: codeInterpreted}
	case "nmethod":
		words := uint64(binary.NativeEndian.Uint32(buf[l.blobFrameSize:]))
		if words < 2 || words > 1<<16 {
			return javaCode{}
		}
		code := javaCode{kind: codeCompiled, method: u64At(buf, l.compiledMethod), words: words, nmethod: blob}
		if d := l.debug; d != nil && ret == u64At(buf, d.deoptHandler) {
			code.origPC = uint64(int64(int32(binary.NativeEndian.Uint32(buf[d.origPCOffset:]))))
			if code.origPC == 0 || code.origPC >= words*8 {
				code.origPC = 0 // not in the frame: the compiled method alone
			}
			return code
		}
		code.scopes = j.readScopes(pid, blob, buf, ret)
		return code
	}
	return javaCode{}
}

// blobName is the code blob name at addr (a string of libjvm.so's, one
// per kind of blob), read once per process.
func (j *jvmProcess) blobName(pid int, addr uint64) string {
	if name, ok := j.blobNames[addr]; ok {
		return name
	}
	var buf [32]byte
	name := ""
	if n, err := ptrace.ReadMemPrefix(pid, addr, buf[:]); err == nil {
		if i := bytes.IndexByte(buf[:n], 0); i >= 0 {
			name = string(buf[:i])
		}
	}
	if len(j.blobNames) < 1024 {
		j.blobNames[addr] = name
	}
	return name
}

// method is what the Method* m names, read once; nil when it does not
// read as a method.
func (j *jvmProcess) method(pid int, m uint64) *javaMethod {
	if jm, ok := j.methods[m]; ok {
		return jm
	}
	jm, err := j.readMethod(pid, m)
	if err != nil {
		jm = nil
	}
	if len(j.methods) >= maxNotCode {
		j.methods = map[uint64]*javaMethod{}
	}
	j.methods[m] = jm
	return jm
}

func (j *jvmProcess) readMethod(pid int, m uint64) (*javaMethod, error) {
	l := j.layout
	cm, err := ptrace.ReadU64(pid, m+l.methodConstMethod)
	if err != nil {
		return nil, err
	}
	hdr := make([]byte, l.constMethodSize)
	if err := ptrace.ReadMem(pid, cm, hdr); err != nil {
		return nil, err
	}
	u16 := func(off uint64) uint64 { return uint64(binary.NativeEndian.Uint16(hdr[off:])) }
	cp := u64At(hdr, l.constMethodConstants)
	name, err := j.poolSymbol(pid, cp, u16(l.constMethodNameIndex))
	if err != nil {
		return nil, err
	}
	pool := make([]byte, l.poolSize)
	if err := ptrace.ReadMem(pid, cp, pool); err != nil {
		return nil, err
	}
	src := uint64(0)
	if l.sourceFileIndex != 0 {
		src = uint64(binary.NativeEndian.Uint16(pool[l.sourceFileIndex:]))
	}
	class, err := j.class(pid, u64At(pool, l.poolHolder), cp, src)
	if err != nil {
		return nil, err
	}
	jm := &javaMethod{class: class, name: name, codeBase: cm + l.constMethodSize}
	if u16(l.constMethodFlags)&l.hasLineNumberTable != 0 {
		// A table no read can decode leaves the method without lines.
		jm.lines, _ = readLineTable(pid, jm.codeBase+u16(l.constMethodCodeSize))
	}
	return jm, nil
}

// class is the class at Klass* k, whose constant pool is cp and source
// file name that pool's entry src (0: none), read once.
func (j *jvmProcess) class(pid int, k, cp, src uint64) (*javaClass, error) {
	if c, ok := j.classes[k]; ok {
		return c, nil
	}
	sym, err := ptrace.ReadU64(pid, k+j.layout.klassName)
	if err != nil {
		return nil, err
	}
	name, err := j.symbol(pid, sym)
	if err != nil {
		return nil, err
	}
	c := &javaClass{name: strings.ReplaceAll(name, "/", ".")}
	if src != 0 {
		c.file, _ = j.poolSymbol(pid, cp, src)
	}
	for _, pre := range jdkPackages {
		c.jdk = c.jdk || strings.HasPrefix(c.name, pre)
	}
	// A lambda's hidden class (Main$$Lambda$3+0x0000...) only forwards to
	// the lambda's body, a method of the program's class further down;
	// its name carries an address.
	c.jdk = c.jdk || strings.Contains(c.name, "$$Lambda")
	j.classes[k] = c
	return c, nil
}

// poolSymbol is the Utf8 entry idx of the constant pool at cp: a Symbol*
// in the slots that follow the pool.
func (j *jvmProcess) poolSymbol(pid int, cp, idx uint64) (string, error) {
	if idx == 0 || idx > 1<<16 {
		return "", fmt.Errorf("constant pool index %d", idx)
	}
	sym, err := ptrace.ReadU64(pid, cp+j.layout.poolSize+8*idx)
	if err != nil {
		return "", err
	}
	return j.symbol(pid, sym&^1)
}

// maxSymbol bounds the names read: a class or method name longer than
// this is taken for a misread.
const maxSymbol = 1024

// symbol reads a Symbol: its length, then its bytes.
func (j *jvmProcess) symbol(pid int, s uint64) (string, error) {
	l := j.layout
	buf := make([]byte, l.symbolBody+128)
	if s == 0 {
		return "", fmt.Errorf("a null symbol")
	}
	n, err := ptrace.ReadMemPrefix(pid, s, buf)
	if err != nil || uint64(n) < l.symbolBody {
		return "", fmt.Errorf("reading a symbol at %#x: %w", s, err)
	}
	length := uint64(binary.NativeEndian.Uint16(buf[l.symbolLength:]))
	if length == 0 || length > maxSymbol {
		return "", fmt.Errorf("a symbol of %d bytes at %#x", length, s)
	}
	body := buf[l.symbolBody:n]
	if uint64(len(body)) < length {
		body = make([]byte, length)
		if err := ptrace.ReadMem(pid, s+l.symbolBody, body); err != nil {
			return "", err
		}
	}
	body = body[:length]
	if !utf8.Valid(body) {
		return "", fmt.Errorf("a symbol at %#x is not UTF-8", s)
	}
	return string(body), nil
}

// lineTableMax bounds a method's line number table as read.
const lineTableMax = 16 << 10

// readLineTable decodes the compressed line number table at addr
// (HotSpot's CompressedLineNumberReadStream): a byte (bci delta << 3 |
// line delta) when both are small, else 0xff and the two deltas as
// signed UNSIGNED5 numbers; a 0 byte ends it.
func readLineTable(pid int, addr uint64) ([][2]int, error) {
	buf := make([]byte, 512)
	for {
		n, err := ptrace.ReadMemPrefix(pid, addr, buf)
		if err != nil {
			return nil, err
		}
		lines, done := decodeLineTable(buf[:n])
		if done {
			return lines, nil
		}
		if n < len(buf) || len(buf) >= lineTableMax {
			return nil, fmt.Errorf("a line number table at %#x without an end", addr)
		}
		buf = make([]byte, 2*len(buf))
	}
}

// decodeLineTable decodes what b holds of a table; done is false when b
// ends before the table does.
func decodeLineTable(b []byte) (lines [][2]int, done bool) {
	bci, line := 0, 0
	for i := 0; i < len(b); {
		next := b[i]
		i++
		switch next {
		case 0:
			return lines, true
		case 0xff:
			db, n := unsigned5(b[i:])
			if n == 0 {
				return nil, false
			}
			dl, m := unsigned5(b[i+n:])
			if m == 0 {
				return nil, false
			}
			i += n + m
			bci += decodeSign(db)
			line += decodeSign(dl)
		default:
			bci += int(next >> 3)
			line += int(next & 7)
		}
		lines = append(lines, [2]int{bci, line})
	}
	return nil, false
}

// unsigned5 decodes HotSpot's UNSIGNED5 number at the start of b (bytes
// below 192 end it; each byte above adds its value shifted by 6 more
// bits; at most 5 bytes), and how many bytes it took: 0 when b ends
// first.
func unsigned5(b []byte) (uint32, int) {
	const lgH, low = 6, 192
	var sum uint32
	shift := uint(0)
	for i := 0; i < 5; i++ {
		if i >= len(b) {
			return 0, 0
		}
		sum += uint32(b[i]) << shift
		if b[i] < low || i == 4 {
			return sum, i + 1
		}
		shift += lgH
	}
	return 0, 0
}

// decodeSign undoes UNSIGNED5's sign folding of a signed number.
func decodeSign(v uint32) int { return int(int32(v>>1) ^ -int32(v&1)) }
