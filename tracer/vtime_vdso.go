package tracer

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/tracer/internal/launch"
)

const (
	clockPageSize = 4096
	pageValues    = 0x000 // values[id]: ns of clock id
	pageServed    = 0x080 // served[id]: 1 where the page answers the id
	pageClockIDs  = 16

	atSysinfoEhdr = 33 // auxv key of the vDSO's base
	atRandom      = 25 // auxv key of 16 random bytes for the new image
	atIgnore      = 1
)

// errNoVDSO says the new image has no vDSO (nothing reads clocks through one).
var errNoVDSO = errors.New("no vDSO in the auxiliary vector")

// vdsoEntries are the offsets from a vDSO's base of the entry points the
// page replaces (0 = absent). The kernel maps one image into every 64-bit
// process, so lockstep's own vDSO gives them for every tracee.
type vdsoEntries struct {
	clockGettime, gettimeofday, time, getrandom uint64
}

// ownVDSO reads lockstep's own vDSO image and finds its entry points.
func ownVDSO() (vdsoEntries, error) {
	var e vdsoEntries
	aux, err := os.ReadFile("/proc/self/auxv")
	if err != nil {
		return e, err
	}
	var base uint64
	for i := 0; i+16 <= len(aux); i += 16 {
		if binary.LittleEndian.Uint64(aux[i:]) == atSysinfoEhdr {
			base = binary.LittleEndian.Uint64(aux[i+8:])
		}
	}
	if base == 0 {
		return e, errNoVDSO
	}
	size, err := vdsoSize(base)
	if err != nil {
		return e, err
	}
	mem, err := os.Open("/proc/self/mem")
	if err != nil {
		return e, err
	}
	defer mem.Close()
	img := make([]byte, size)
	if _, err := mem.ReadAt(img, int64(base)); err != nil {
		return e, fmt.Errorf("reading the vDSO: %w", err)
	}
	f, err := elf.NewFile(bytes.NewReader(img))
	if err != nil {
		return e, fmt.Errorf("parsing the vDSO: %w", err)
	}
	var load *elf.Prog
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			load = p
			break
		}
	}
	if load == nil {
		return e, errors.New("the vDSO has no PT_LOAD segment")
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		return e, fmt.Errorf("the vDSO's symbols: %w", err)
	}
	for _, s := range syms {
		if s.Section == elf.SHN_UNDEF || s.Value < load.Vaddr {
			continue
		}
		off := s.Value - load.Vaddr + load.Off
		if s.Size < uint64(len(jumpTo(0))) {
			continue // too short to hold a jump; the syscall path stays
		}
		switch s.Name {
		case "__vdso_clock_gettime":
			e.clockGettime = off
		case "__vdso_gettimeofday":
			e.gettimeofday = off
		case "__vdso_time":
			e.time = off
		case "__vdso_getrandom":
			e.getrandom = off
		}
	}
	if e.clockGettime == 0 {
		return e, errors.New("the vDSO has no __vdso_clock_gettime")
	}
	return e, nil
}

func vdsoSize(base uint64) (uint64, error) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if !strings.HasSuffix(sc.Text(), "[vdso]") {
			continue
		}
		lo, hi, _ := strings.Cut(strings.Fields(sc.Text())[0], "-")
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || a != base || b <= a {
			return 0, fmt.Errorf("unexpected [vdso] line %q", sc.Text())
		}
		return b - a, nil
	}
	return 0, errors.New("no [vdso] mapping in /proc/self/maps")
}

// clockPage is one node's page.
type clockPage struct {
	fd   int
	mem  []byte // the tracer's read-write mapping
	path string // where a tracee opens it
	// What was last published, so an unchanged clock is not rewritten.
	published bool
	now       time.Duration
	offset    time.Duration
}

func (pg *clockPage) close() {
	unix.Munmap(pg.mem)
	unix.Close(pg.fd)
}

// inherited reports whether process pid holds this page as launch.ClockPageFd (a
// program may have closed it, or put something else there).
func (pg *clockPage) inherited(pid int) bool {
	var a, b unix.Stat_t
	if unix.Fstat(pg.fd, &a) != nil || unix.Stat("/proc/"+strconv.Itoa(pid)+"/fd/"+strconv.Itoa(launch.ClockPageFd), &b) != nil {
		return false
	}
	return a.Dev == b.Dev && a.Ino == b.Ino
}
