package tracer

import (
	"bytes"
	"os"
	"regexp"
	"strconv"
	"strings"

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

// procStatOf says whether target, the link target of the process's fd,
// is one of p's own stat files. The target names the file as the process
// sees it: a node in a PID namespace of its own has its own /proc, and
// /proc/self/stat is /proc/1/stat there, not /proc/PID/stat with the pid
// the tracer knows it by.
func (p *process) procStatOf(target string) (statm, ok bool) {
	m := procStatPath.FindStringSubmatch(target)
	if m == nil || m[1] != strconv.Itoa(p.ownPid()) {
		return false, false
	}
	return m[2] == "statm", true
}

// ownPid is the process's pid in its own PID namespace, the one it reads
// from getpid and finds its /proc files by: the last of the NSpid line of
// its status file (the pid itself outside a namespace, or when that line
// cannot be read). It is read once: a process keeps its pid.
func (p *process) ownPid() int {
	if p.nspid == 0 {
		p.nspid = p.pid
		if s, err := statusField(p.pid, "NSpid"); err == nil {
			if f := strings.Fields(s); len(f) > 0 {
				if n, err := strconv.Atoi(f[len(f)-1]); err == nil && n > 0 {
					p.nspid = n
				}
			}
		}
	}
	return p.nspid
}

// procStat is the state of a read of an fdProcStat fd: where the tracer
// reads the file, the text served, taken from the real file at the read at
// offset 0, and the offset, so that consecutive reads and the end of file
// behave as a file's. (The tracee's lseek is not seen: a program that
// seeks back instead of reopening reads the end of file.)
//
// The file is read through the fd's own link, /proc/PID/fd/N, which
// opens the very file the process has open: its link target is named in
// the process's /proc, and the same name in the tracer's /proc is another
// process's file (/proc/1/stat is the host's init).
type procStat struct {
	src   string
	statm bool
	text  []byte
	off   int
}

// fakeProcStat answers a read(2) of one of the process's stat files: the
// real text with the resident set size and the CPU times replaced
// (rewriteStat).
func (th *thread) fakeProcStat(ps *procStat, buf, count uint64) {
	if ps.off == 0 {
		b, err := os.ReadFile(ps.src)
		if err != nil {
			th.fake(-int64(unix.EIO))
			return
		}
		ps.text = rewriteStat(b, ps.statm)
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

// rewriteStat puts statRSSPages in the resident set fields of a stat file
// (field 24, rss) or a statm one (field 2, resident, and field 3, shared,
// which must not exceed it), and 0 in a stat file's CPU times (fields 14
// to 17: utime, stime, cutime, cstime); text it cannot parse is left as it
// is. CPU work takes no virtual time, and the kernel's ticks vary with the
// host and its load: a NATS server sends its peers the CPU share it derives
// from them, and the message's length changed between a run and its
// replay. getrusage, times and the CPU-time clocks stay the kernel's.
func rewriteStat(b []byte, statm bool) []byte {
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
	for i := 14; i <= 17; i++ {
		f[i-3] = []byte("0")
	}
	out := append([]byte{}, b[:i+1]...)
	out = append(out, ' ')
	out = append(out, bytes.Join(f, []byte(" "))...)
	return append(out, '\n')
}
