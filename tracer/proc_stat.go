package tracer

import (
	"bytes"
	"os"
	"regexp"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
)

// statRSSPages is the resident set size, in pages, a node's process reads
// in its own /proc stat files. The real one moves by a few pages from run
// to run (page faults, the allocator, the kernel's lazy accounting), and
// programs report it: Redis puts it and what it derives from it
// (used_memory_rss, mem_fragmentation_ratio) in its INFO reply, whose length
// then differs between a run and its replay. Nothing a run does under
// lockstep makes a derived value reproducible (even the heap's extent moves
// with address-space randomization), so it is a fixed 16 MiB: plausible for
// a small server, and the same in every run and replay.
const statRSSPages = 4096

// procStatPath matches the link target of an fd open on a process's stat or
// statm file, or on one of its threads' stat (/proc/self and
// /proc/thread-self resolve to these).
var procStatPath = regexp.MustCompile(`^/proc/([0-9]+)/(?:task/[0-9]+/)?(stat|statm)$`)

// procStatOf says whether target is one of p's own stat files.
func (p *process) procStatOf(target string) (statm, ok bool) {
	m := procStatPath.FindStringSubmatch(target)
	if m == nil || m[1] != strconv.Itoa(p.pid) {
		return false, false
	}
	return m[2] == "statm", true
}

// procStat is the state of a read of an fdProcStat fd: the path and the
// text served, taken from the real file at the read at offset 0, and the
// offset, so that consecutive reads and the end of file behave as a
// file's. (The tracee's lseek is not seen: a program that seeks back
// instead of reopening reads the end of file.)
type procStat struct {
	path  string
	statm bool
	text  []byte
	off   int
}

// fakeProcStat answers a read(2) of one of the process's stat files: the
// real text with the resident set size replaced (rewriteRSS).
func (th *thread) fakeProcStat(ps *procStat, buf, count uint64) {
	if ps.off == 0 {
		b, err := os.ReadFile(ps.path)
		if err != nil {
			th.fake(-int64(unix.EIO))
			return
		}
		ps.text = rewriteRSS(b, ps.statm)
	}
	rest := ps.text[min(ps.off, len(ps.text)):]
	n := min(uint64(len(rest)), count)
	if n > 0 {
		if err := ptrace.WriteMem(th.tid, buf, rest[:n]); err != nil {
			th.fake(-int64(unix.EFAULT))
			return
		}
	}
	ps.off += int(n)
	th.fake(int64(n))
}

// rewriteRSS puts statRSSPages in the resident set fields of a stat file
// (field 24, rss) or a statm one (field 2, resident, and field 3, shared,
// which must not exceed it); text it cannot parse is left as it is.
func rewriteRSS(b []byte, statm bool) []byte {
	rss := []byte(strconv.Itoa(statRSSPages))
	if statm {
		f := bytes.Fields(b)
		if len(f) < 3 {
			return b
		}
		f[1], f[2] = rss, []byte(strconv.Itoa(statRSSPages/4))
		return append(bytes.Join(f, []byte(" ")), '\n')
	}
	// The command name (field 2) may hold spaces and parentheses: fields
	// are counted from its closing one, field 3 first.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return b
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 22 {
		return b
	}
	f[24-3] = rss
	out := append([]byte{}, b[:i+1]...)
	out = append(out, ' ')
	out = append(out, bytes.Join(f, []byte(" "))...)
	return append(out, '\n')
}
