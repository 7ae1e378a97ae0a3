package tracer

// Time-stamp counter reads that trap on every machine. lockstep asks the
// kernel to fault rdtsc and rdtscp (PR_TSC_SIGSEGV), but a hypervisor may
// ignore CR4.TSD, and then they read the host's real counter. Go's runtime
// up to 1.21 mixes that counter into each M's random state (map seeds,
// select order, the scheduler's choices), so a Go 1.19 etcd allocated
// differently in every run of the same schedule and its garbage collector
// then polled the network a different number of times. So, at every exec,
// lockstep rewrites the rdtsc and rdtscp instructions of the new image's
// functions into ud2 and answers the SIGILL from virtual time, as it answers
// the SIGSEGV where the trap works.
//
// Only instructions lockstep can place are rewritten: a candidate must begin
// an instruction when its function (from the symbol table, or a stripped Go
// binary's pclntab) is decoded from its entry. Shared libraries, mapped
// later by the dynamic loader, and stripped binaries other than Go ones are
// left alone.

import (
	"fmt"
	"strconv"

	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
)

const atEntry = 9 // auxv key of the new image's entry point

// ud2 (0f 0b) and nops to fill the rest of the instruction it replaces.
var tscPatch = [3]byte{0x0f, 0x0b, 0x90}

// patchTSC rewrites the time-stamp counter reads of the image th just
// exec'd and records where they are. It returns how many it rewrote.
//
// Precondition: runs on the tracer thread; th is at its exec stop.
func (vt *vtime) patchTSC(th *thread) (int, error) {
	p := th.proc
	p.tscSites = nil
	im := vt.opts.Images.lookup("/proc/" + strconv.Itoa(p.pid) + "/exe")
	if im.err != nil {
		return 0, im.err
	}
	if len(im.sites) == 0 {
		return 0, nil
	}
	var bias uint64
	if im.pie {
		_, entry, err := auxvEntry(th, atEntry)
		if err != nil {
			return 0, fmt.Errorf("reading AT_ENTRY: %w", err)
		}
		bias = entry - im.entry
	}
	sites := make(map[uint64]uint8, len(im.sites))
	for _, s := range im.sites {
		addr := s.addr + bias
		if err := ptrace.PokeText(th.tid, addr, tscPatch[:s.size]); err != nil {
			return len(sites), fmt.Errorf("rewriting the counter read at %#x: %w", addr, err)
		}
		sites[addr] = s.size
	}
	p.tscSites = sites
	return len(sites), nil
}

// emulatePatchedTSC answers the SIGILL of a counter read patchTSC rewrote
// from virtual time. It reports false for any other SIGILL.
func (vt *vtime) emulatePatchedTSC(th *thread) bool {
	if th.proc == nil || len(th.proc.tscSites) == 0 {
		return false
	}
	if err := ptrace.GetRegs(th.tid, &th.regs); err != nil {
		return false
	}
	size, ok := th.proc.tscSites[th.regs.PC()]
	if !ok {
		return false
	}
	th.regs.AnswerTSC(tscBase+uint64(vt.opts.Clock.Now()), uint64(size))
	if err := ptrace.SetRegs(th.tid, &th.regs); err != nil {
		return false
	}
	vt.stats.TSCReads++
	th.cont(0)
	return true
}

// emulateTSC answers a faulting rdtsc or rdtscp (PR_TSC_SIGSEGV) from
// virtual time. It reports false for any other SIGSEGV.
func (vt *vtime) emulateTSC(th *thread) bool {
	if err := ptrace.GetRegs(th.tid, &th.regs); err != nil {
		return false
	}
	var code [3]byte
	if ptrace.ReadMem(th.tid, th.regs.PC(), code[:]) != nil {
		return false
	}
	if !th.regs.EmulateTSC(code, tscBase+uint64(vt.opts.Clock.Now())) {
		return false
	}
	if err := ptrace.SetRegs(th.tid, &th.regs); err != nil {
		return false
	}
	vt.stats.TSCReads++
	th.cont(0)
	return true
}

// tscBase makes the virtual time-stamp counter start well above zero, as a
// real one does after boot; it ticks once per virtual nanosecond.
const tscBase = uint64(3600e9)
