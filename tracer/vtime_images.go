package tracer

import (
	"bytes"
	"cmp"
	"debug/elf"
	"debug/gosym"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"

	"golang.org/x/arch/x86/x86asm"
	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/tracer/internal/callsite"
)

// tscSite is an rdtsc (size 2) or rdtscp (size 3) at a link-time address.
type tscSite struct {
	addr uint64
	size uint8
}

// image is what lockstep learned of one executable file.
type image struct {
	sites []tscSite
	entry uint64 // ELF entry point, for the load bias of a PIE
	pie   bool
	err   error
}

type fileID struct {
	dev, ino uint64
	size     int64
	mtime    unix.Timespec
}

// Images caches what lockstep finds in the executables its nodes run, so a
// job scans each file once however many trials start it: their counter
// reads here, their modules' symbols for naming call sites in symbols.
// Safe for concurrent use.
type Images struct {
	mu      sync.Mutex
	m       map[fileID]*image
	symbols *callsite.Symbols
}

// NewImages returns an empty cache.
func NewImages() *Images { return &Images{m: map[fileID]*image{}, symbols: callsite.NewSymbols()} }

// lookup returns the scan of the file at path (a process's /proc/PID/exe).
func (c *Images) lookup(path string) *image {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return &image{err: err}
	}
	id := fileID{dev: st.Dev, ino: st.Ino, size: st.Size, mtime: st.Mtim}
	c.mu.Lock()
	defer c.mu.Unlock()
	if im, ok := c.m[id]; ok {
		return im
	}
	im := scanImage(path)
	c.m[id] = im
	return im
}

// scanImage finds the rdtsc and rdtscp instructions of an ELF executable.
func scanImage(path string) *image {
	f, err := elf.Open(path)
	if err != nil {
		return &image{err: err}
	}
	defer f.Close()
	im := &image{entry: f.Entry, pie: f.Type == elf.ET_DYN}
	if f.Machine != elf.EM_X86_64 {
		return im
	}
	var funcs []span // loaded lazily: most images have no candidate
	for _, sec := range f.Sections {
		if sec.Type != elf.SHT_PROGBITS || sec.Flags&elf.SHF_EXECINSTR == 0 {
			continue
		}
		code, err := sec.Data()
		if err != nil {
			im.err = fmt.Errorf("reading %s: %w", sec.Name, err)
			return im
		}
		cands := tscCandidates(code)
		if len(cands) == 0 {
			continue
		}
		if funcs == nil {
			if funcs, err = functions(f); err != nil {
				im.err = err
				return im
			}
		}
		decoded := map[span][]tscSite{}
		for _, off := range cands {
			addr := sec.Addr + uint64(off)
			i := sort.Search(len(funcs), func(i int) bool { return funcs[i].end > addr })
			if i == len(funcs) || funcs[i].start > addr {
				continue // outside every known function
			}
			fn := funcs[i]
			sites, ok := decoded[fn]
			if !ok {
				sites = decodeTSC(code, sec.Addr, fn)
				decoded[fn] = sites
			}
			for _, s := range sites {
				if s.addr == addr {
					im.sites = append(im.sites, s)
				}
			}
		}
	}
	slices.SortFunc(im.sites, func(a, b tscSite) int { return cmp.Compare(a.addr, b.addr) })
	im.sites = slices.Compact(im.sites)
	return im
}

// tscCandidates returns the offsets in code of the bytes of rdtsc (0f 31)
// and rdtscp (0f 01 f9), instructions or not.
func tscCandidates(code []byte) []int {
	var offs []int
	for _, pat := range [][]byte{{0x0f, 0x31}, {0x0f, 0x01, 0xf9}} {
		for base := 0; ; {
			i := bytes.Index(code[base:], pat)
			if i < 0 {
				break
			}
			offs = append(offs, base+i)
			base += i + 1
		}
	}
	return offs
}

// span is a function's address range [start, end).
type span struct{ start, end uint64 }

// functions lists the image's functions, sorted: from the symbol table, or
// from the pclntab a stripped Go binary keeps.
func functions(f *elf.File) ([]span, error) {
	var fs []span
	syms, err := f.Symbols()
	if err == nil {
		for _, s := range syms {
			if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Size > 0 {
				fs = append(fs, span{s.Value, s.Value + s.Size})
			}
		}
	} else if !errors.Is(err, elf.ErrNoSymbols) {
		return nil, fmt.Errorf("reading symbols: %w", err)
	}
	if len(fs) == 0 {
		if fs, err = goFunctions(f); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(fs, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	return fs, nil
}

// goFunctions reads the functions of a Go binary's pclntab (nil, nil when
// the image has none).
func goFunctions(f *elf.File) ([]span, error) {
	sec, text := f.Section(".gopclntab"), f.Section(".text")
	if sec == nil || text == nil {
		return nil, nil
	}
	data, err := sec.Data()
	if err != nil {
		return nil, fmt.Errorf("reading .gopclntab: %w", err)
	}
	// Function entries are offsets from the start of Go's text, which is
	// not .text's when an external linker put C code first (cgo). Go 1.18
	// to 1.21 write it in the table's header; later ones write 0 there, and
	// then .text's start is trusted only if it puts Go's entry point at
	// the image's. debug/gosym takes the start it is given.
	textStart, fromHeader := text.Addr, false
	if len(data) >= 32 && data[7] == 8 {
		switch binary.LittleEndian.Uint32(data) {
		case 0xfffffff0, 0xfffffff1: // Go 1.18, Go 1.20
			if s := binary.LittleEndian.Uint64(data[24:]); s != 0 {
				textStart, fromHeader = s, true
			}
		}
	}
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, textStart))
	if err != nil {
		return nil, fmt.Errorf("reading .gopclntab: %w", err)
	}
	if !fromHeader {
		if rt0 := tab.LookupFunc("_rt0_amd64_linux"); rt0 == nil || rt0.Entry != f.Entry {
			return nil, nil // Go's text starts somewhere unknown
		}
	}
	fs := make([]span, 0, len(tab.Funcs))
	for _, fn := range tab.Funcs {
		if fn.End > fn.Entry {
			fs = append(fs, span{fn.Entry, fn.End})
		}
	}
	return fs, nil
}

// decodeTSC decodes fn from its entry and returns its rdtsc and rdtscp
// instructions; it stops at the first byte it cannot decode.
func decodeTSC(code []byte, base uint64, fn span) []tscSite {
	if fn.start < base || fn.end > base+uint64(len(code)) {
		return nil
	}
	b := code[fn.start-base : fn.end-base]
	var sites []tscSite
	for off := 0; off < len(b); {
		in, err := x86asm.Decode(b[off:], 64)
		if err != nil || in.Len == 0 {
			break
		}
		switch in.Op {
		case x86asm.RDTSC, x86asm.RDTSCP:
			sites = append(sites, tscSite{addr: fn.start + uint64(off), size: uint8(in.Len)})
		}
		off += in.Len
	}
	return sites
}
