package tracer

// Clock reads without a stop. Each node gets one page of lockstep's, a
// memfd the tracer maps read-write and every traced process of the node maps
// read+exec (sealed, so that no other mapping or descriptor writes it); the vDSO's clock_gettime, gettimeofday and time are written over
// with a jump into the page's code, which answers from the values there.
// Virtual time changes only while every tracee is stopped (in a Step), and
// the tracer publishes the values before it resumes any, so a read through
// the page gives what the syscall path would have answered at that moment.
// Programs that make the syscall themselves, and clocks the page does not
// serve, still stop at the seccomp filter.

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/tracer/internal/launch"
	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
)

// newClockPage makes a page holding the code, with served[] set from the
// clock ids the Clock answers.
//
// Precondition: runs on the tracer thread.
func (vt *vtime) newClockPage() (*clockPage, error) {
	fd, err := unix.MemfdCreate("lockstep-clock", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_EXEC)
	if errors.Is(err, unix.EINVAL) { // kernels before 6.3 know no MFD_EXEC
		fd, err = unix.MemfdCreate("lockstep-clock", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if err != nil {
		return nil, fmt.Errorf("memfd for the clock page: %w", err)
	}
	if err := unix.Ftruncate(fd, clockPageSize); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("sizing the clock page: %w", err)
	}
	mem, err := unix.Mmap(fd, 0, clockPageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("mapping the clock page: %w", err)
	}
	copy(mem[pageClockGettimeAt:], pageClockGettime)
	copy(mem[pageGettimeofdayAt:], pageGettimeofday)
	copy(mem[pageTimeAt:], pageTime)
	for id := int32(0); id < pageClockIDs; id++ {
		if _, ok := vt.opts.Clock.Read(id); ok {
			mem[pageServed+id] = 1
		}
	}
	// From here on only the mapping above writes: a node's processes hold
	// the memfd (ClockPageFd) and could otherwise write it, map it
	// writable, or reopen it read-write through /proc/self/fd, and so move
	// their own clock; shrinking it would fault lockstep's mapping.
	const seals = unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_FUTURE_WRITE | unix.F_SEAL_SEAL
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
		unix.Munmap(mem)
		unix.Close(fd)
		return nil, fmt.Errorf("sealing the clock page: %w", err)
	}
	return &clockPage{fd: fd, mem: mem, path: fmt.Sprintf("/proc/%d/fd/%d", vt.selfPid, fd)}, nil
}

// publishClocks writes every node's clock values into its page.
//
// Precondition: runs on the tracer thread, with no tracee running user code
// that could read a value being replaced.
func (vt *vtime) publishClocks() {
	if vt.opts.Clock == nil {
		return
	}
	now := vt.opts.Clock.Now()
	for _, ni := range vt.pt.nodesInOrder() {
		pg := ni.clockPage
		off := vt.wallOffset(ni)
		if pg == nil || (pg.published && pg.now == now && pg.offset == off) {
			continue
		}
		for id := int32(0); id < pageClockIDs; id++ {
			if pg.mem[pageServed+id] == 0 {
				continue
			}
			ns, _ := vt.readClock(ni, id)
			storeU64(pg.mem[pageValues+8*id:], uint64(ns))
		}
		pg.published, pg.now, pg.offset = true, now, off
	}
}

// mapClockPage maps the node's clock page into a process that has just
// exec'd and points its vDSO's clock entries at it.
//
// Precondition: runs on the tracer thread; th is at its exec stop.
func (vt *vtime) mapClockPage(th *thread) error {
	th.proc.clockEntry = 0
	_, base, err := auxvEntry(th, atSysinfoEhdr)
	if err != nil {
		return err
	}
	if base == 0 {
		return errNoVDSO
	}
	if vt.vdso == nil {
		e, err := ownVDSO()
		if err != nil {
			return err
		}
		vt.vdso = &e
	}
	pg, err := vt.nodeClockPage(th.proc.node)
	if err != nil {
		return err
	}
	var addr uint64
	if pg.inherited(th.proc.pid) {
		addr, err = vt.mapFd(th, launch.ClockPageFd)
	} else {
		addr, err = vt.mapInto(th, pg.path)
	}
	if err != nil {
		return err
	}
	type patch struct {
		at   uint64
		code []byte
	}
	patches := []patch{{vt.vdso.clockGettime, jumpTo(addr + pageClockGettimeAt)}, {vt.vdso.getrandom, enosys}}
	if pg.mem[pageServed+unix.CLOCK_REALTIME] != 0 {
		patches = append(patches, patch{vt.vdso.gettimeofday, jumpTo(addr + pageGettimeofdayAt)}, patch{vt.vdso.time, jumpTo(addr + pageTimeAt)})
	}
	for _, p := range patches {
		if p.at == 0 {
			continue
		}
		if err := ptrace.WriteMem(th.tid, base+p.at, p.code); err != nil {
			return fmt.Errorf("patching the vDSO: %w", err)
		}
	}
	if vt.vdso.clockGettime != 0 {
		th.proc.clockEntry = addr + pageClockGettimeAt
	}
	return nil
}

// nodeClockPage returns the node's page, made on first use.
//
// Precondition: runs on the tracer thread.
func (vt *vtime) nodeClockPage(ni *nodeInfo) (*clockPage, error) {
	if ni.clockPage == nil {
		pg, err := vt.newClockPage()
		if err != nil {
			return nil, err
		}
		ni.clockPage = pg
		vt.publishClocks()
	}
	return ni.clockPage, nil
}

// mapFd makes th map its descriptor fd read+exec, and returns the address.
//
// Precondition: runs on the tracer thread; th is stopped.
func (vt *vtime) mapFd(th *thread, fd int) (uint64, error) {
	addr, err := th.inject(unix.SYS_MMAP, 0, clockPageSize, unix.PROT_READ|unix.PROT_EXEC, unix.MAP_SHARED, uint64(fd), 0)
	if err != nil {
		return 0, err
	}
	if addr < 0 && addr > -4096 {
		return 0, fmt.Errorf("mapping the clock page in the tracee: %w", unix.Errno(-addr))
	}
	return uint64(addr), nil
}

// mapInto makes th open path and map it read+exec, and returns the address.
//
// Precondition: runs on the tracer thread; th is stopped.
func (vt *vtime) mapInto(th *thread, path string) (uint64, error) {
	if err := ptrace.GetRegs(th.tid, &th.regs); err != nil {
		return 0, err
	}
	// The path goes below the stack pointer, past the red zone; the stack
	// mapping extends well below it at exec.
	scratch := (th.regs.SP() - 1024) &^ 15
	name := append([]byte(path), 0)
	saved := make([]byte, len(name))
	if err := ptrace.ReadMem(th.tid, scratch, saved); err != nil {
		return 0, err
	}
	if err := ptrace.WriteMem(th.tid, scratch, name); err != nil {
		return 0, err
	}
	defer ptrace.WriteMem(th.tid, scratch, saved)
	cwd := int64(unix.AT_FDCWD)
	fd, err := th.inject(unix.SYS_OPENAT, uint64(cwd), scratch, unix.O_RDONLY|unix.O_CLOEXEC)
	if err != nil {
		return 0, err
	}
	if fd < 0 {
		return 0, fmt.Errorf("opening %s in the tracee: %w", path, unix.Errno(-fd))
	}
	addr, err := vt.mapFd(th, int(fd))
	if _, cerr := th.inject(unix.SYS_CLOSE, uint64(fd)); err == nil {
		err = cerr
	}
	return addr, err
}

// auxvEntry finds key in the auxiliary vector of an image at its exec stop:
// the entry's address on the stack and its value (0, 0 when absent).
func auxvEntry(th *thread, key uint64) (at, val uint64, err error) {
	if err := ptrace.GetRegs(th.tid, &th.regs); err != nil {
		return 0, 0, err
	}
	pid := th.tid
	sp := th.regs.SP()
	argc, err := ptrace.ReadU64(pid, sp)
	if err != nil {
		return 0, 0, err
	}
	addr := sp + 8 + 8*(argc+1)  // skip argc, argv and its NULL
	for i := 0; i < 1<<16; i++ { // envp
		v, err := ptrace.ReadU64(pid, addr)
		if err != nil {
			return 0, 0, err
		}
		addr += 8
		if v == 0 {
			break
		}
	}
	for i := 0; i < 64; i++ {
		var pair [16]byte
		if err := ptrace.ReadMem(pid, addr, pair[:]); err != nil {
			return 0, 0, err
		}
		k := binary.LittleEndian.Uint64(pair[:8])
		if k == 0 { // AT_NULL
			return 0, 0, nil
		}
		if k == key {
			return addr, binary.LittleEndian.Uint64(pair[8:]), nil
		}
		addr += 16
	}
	return 0, 0, nil
}

// hideVDSO rewrites AT_SYSINFO_EHDR in the new image's auxv to AT_IGNORE so
// the C library and language runtimes make real clock syscalls: the path
// when the clock page cannot be used.
func hideVDSO(th *thread) error {
	at, _, err := auxvEntry(th, atSysinfoEhdr)
	if err != nil || at == 0 {
		return err
	}
	var ign [16]byte
	ign[0] = atIgnore
	return ptrace.WriteMem(th.tid, at, ign[:])
}

// clockReadsWithoutStops sets up a freshly exec'd image's clock reads: through
// the clock page, or, when that cannot be, by hiding the vDSO so that they
// become syscalls.
//
// Precondition: runs on the tracer thread; th is at its exec stop.
func (vt *vtime) clockReadsWithoutStops(th *thread) error {
	if !vt.opts.ClockSyscalls {
		err := vt.mapClockPage(th)
		if err == nil || errors.Is(err, errNoVDSO) {
			return nil
		}
		vt.log.Debug("clock page unavailable; clock reads will stop", "thread", th.String(), "err", err)
	}
	return hideVDSO(th)
}
