package disk

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/internal/safefs"
)

// Op is what a call does to the node's files.
type Op uint8

const (
	OpInvalid Op = iota
	// OpWrite writes Len bytes to Fd at Off, or at the file's position
	// when Off is -1 (at its end with O_APPEND).
	OpWrite
	// OpRead reads from Fd.
	OpRead
	// OpSync is an fsync or fdatasync of Fd (a file or a directory).
	OpSync
	// OpSyncAll is a syncfs or sync.
	OpSyncAll
	// OpTruncate sets the size of Fd, or of Path when Fd is -1, to Len.
	OpTruncate
	// OpOpen opens Path (relative to Dirfd) with Flags; only O_CREAT and
	// O_TRUNC change anything.
	OpOpen
	// OpMkdir creates the directory Path.
	OpMkdir
	// OpLink creates the name Path2 (relative to Dirfd2): a hard link or a
	// symbolic link.
	OpLink
	// OpRename renames Path to Path2 (Flags: RENAME_NOREPLACE,
	// RENAME_EXCHANGE).
	OpRename
	// OpUnlink removes Path (a directory with Flags AT_REMOVEDIR).
	OpUnlink
)

// Call is a call of the node's that the tracer stopped, before it runs.
// Paths are as the process sees them; Dirfd and Dirfd2 are the process's
// descriptors (unix.AT_FDCWD: its working directory).
type Call struct {
	Pid         int
	Op          Op
	Fd          int
	Off, Len    int64
	Dirfd       int
	Path        string
	Dirfd2      int
	Path2       string
	Flags       int
	SyscallName string // for what a fault reports
}

// Answer is what the tracer does with the call: run it (the zero Answer),
// fail it with Errno without running it, or hold its thread for Stall of
// virtual time and then return 0.
type Answer struct {
	Errno syscall.Errno
	Stall time.Duration
}

// Stats count what the books did.
type Stats struct {
	Calls   uint64 // calls the tracer reported
	Changes uint64 // changes recorded
	Kept    uint64 // bytes read and kept before writes and truncations
}

// Books are one node's.
type Books struct {
	roots   []string               // data paths, as the node sees them
	base    string                 // what show strips off a path
	journal bool                   // an fsync of a file makes every name change durable
	reads   bool                   // an ioerror may fail reads
	rootFds map[string]*safefs.Dir // each root, once it exists (rootOf)
	files   map[fileKey]*file
	dirs    map[fileKey]*dirRef // data directories name changes were in
	log     []*change           // changes not yet durable, in program order
	armed   armed
	stats   Stats
	seq     int
}

type fileKey struct{ dev, ino uint64 }

// file is a data file the node wrote, opened by lockstep (read and write)
// so that its changes can be undone after the node's processes are gone.
type file struct {
	f    *os.File
	key  fileKey
	path string // its name when last seen, as the node sees it
	seq  int    // order of first write, for a stable order
}

// armed is a fault waiting for its call.
type armed struct {
	call  string // "write", "fsync" or "read": an ioerror
	errno syscall.Errno
	stall time.Duration // > 0: a stall of the next fsync
	hit   func(string)
}

// New starts a node's books over its data paths (absolute, as the node
// sees them). What the books report names files relative to base (the
// trial's directory as the node sees it: "s1/db/wal"). With journal, an
// fsync of any data file also makes every name change before it durable,
// as a journaling file system commits them together; without, only an
// fsync of the directory does (POSIX).
func New(roots []string, base string, journal bool) *Books {
	b := &Books{rootFds: map[string]*safefs.Dir{}, files: map[fileKey]*file{}, dirs: map[fileKey]*dirRef{}, base: filepath.Clean(base), journal: journal}
	for _, r := range roots {
		b.roots = append(b.roots, filepath.Clean(r))
	}
	return b
}

// Close releases the files the books hold open.
func (b *Books) Close() {
	for _, f := range b.files {
		f.f.Close()
	}
	for _, c := range b.log {
		if c.kept != nil {
			c.kept.Close()
		}
	}
	for _, f := range b.rootFds {
		f.Close()
	}
	for _, d := range b.dirs {
		d.dir.Close()
	}
	clear(b.dirs)
	clear(b.files)
	clear(b.rootFds)
	b.log = nil
}

// Stats returns the books' counters.
func (b *Books) Stats() Stats { return b.stats }

// Pending is how many changes are not durable.
func (b *Books) Pending() int { return len(b.log) }

// Arm makes the next call of kind call ("write", "fsync", "read") on a
// data file fail with errno (an ioerror), or, with stall > 0, the next
// fsync wait that long (a stall). hit is told what the fault did when it
// strikes.
func (b *Books) Arm(call string, errno syscall.Errno, stall time.Duration, hit func(string)) {
	b.armed = armed{call: call, errno: errno, stall: stall, hit: hit}
}

// Disarm withdraws an armed fault that has not struck.
func (b *Books) Disarm() { b.armed = armed{} }

// Reads reports whether the books may fail a read (SetReads).
func (b *Books) Reads() bool { return b.reads }

// SetReads says whether an ioerror may fail reads: the tracer then stops
// at the reads it does not stop at anyway.
func (b *Books) SetReads(on bool) { b.reads = on }

// Armed reports whether a fault waits for its call.
func (b *Books) Armed() bool { return b.armed.call != "" }

// Before records what c is about to change, and says what to do with it.
func (b *Books) Before(c Call) Answer {
	b.stats.Calls++
	switch c.Op {
	case OpRead:
		if b.armed.call != "read" {
			return Answer{}
		}
		if p, ok := b.fdPath(c.Pid, c.Fd); ok && b.regular(c.Pid, c.Fd) {
			return b.strike(c, p)
		}
	case OpWrite:
		p, ok := b.fdPath(c.Pid, c.Fd)
		if !ok {
			return Answer{}
		}
		f, err := b.fileOf(c.Pid, c.Fd, p)
		if err != nil {
			return Answer{} // not a regular file
		}
		if b.armed.call == "write" {
			return b.strike(c, p)
		}
		b.write(c, f)
	case OpSync:
		p, ok := b.fdPath(c.Pid, c.Fd)
		if !ok {
			return Answer{}
		}
		if b.armed.call == "fsync" {
			return b.strike(c, p)
		}
		a := Answer{}
		if b.armed.stall > 0 {
			a.Stall = b.armed.stall
			b.report(fmt.Sprintf("%s of %s took %v", c.SyscallName, b.show(p), a.Stall))
		}
		b.sync(c, p)
		return a
	case OpSyncAll:
		b.syncAll()
	case OpTruncate:
		b.truncate(c)
	case OpOpen:
		b.open(c)
	case OpMkdir, OpLink:
		b.create(c)
	case OpRename:
		b.rename(c)
	case OpUnlink:
		b.unlink(c)
	}
	return Answer{}
}

// strike fails c with the armed error.
func (b *Books) strike(c Call, path string) Answer {
	e := b.armed.errno
	b.report(fmt.Sprintf("%s of %s failed with %s", c.SyscallName, b.show(path), ErrnoName(e)))
	return Answer{Errno: e}
}

func (b *Books) report(what string) {
	hit := b.armed.hit
	b.armed = armed{}
	if hit != nil {
		hit(what)
	}
}

// ErrnoName is the errno's name (EIO, ENOSPC).
func ErrnoName(e syscall.Errno) string {
	if n := unix.ErrnoName(e); n != "" {
		return n
	}
	return "errno " + strconv.Itoa(int(e))
}

// show is a data path for humans: relative to base when under it
// ("s1/db/wal" for /run/lockstep/trial/s1/db/wal), else whole.
func (b *Books) show(p string) string {
	if rel, ok := under(b.base, p); ok && rel != "." {
		return rel
	}
	return p
}

// under reports whether p is root or below it, and its path relative to
// root.
func under(root, p string) (string, bool) {
	if p == root {
		return ".", true
	}
	if strings.HasPrefix(p, root+"/") || root == "/" {
		rel, err := filepath.Rel(root, p)
		return rel, err == nil
	}
	return "", false
}

// data reports whether p, as the node sees it, is under a data path.
func (b *Books) data(p string) bool {
	for _, r := range b.roots {
		if _, ok := under(r, p); ok {
			return true
		}
	}
	return false
}

func procPath(pid int, rest string) string { return "/proc/" + strconv.Itoa(pid) + "/" + rest }

// fdPath is the path of the process's descriptor as the process sees it,
// when it is under a data path.
func (b *Books) fdPath(pid, fd int) (string, bool) {
	if fd < 0 {
		return "", false
	}
	p, err := os.Readlink(procPath(pid, "fd/"+strconv.Itoa(fd)))
	if err != nil || !strings.HasPrefix(p, "/") || strings.HasSuffix(p, " (deleted)") {
		return "", false
	}
	return p, b.data(p)
}

func (b *Books) regular(pid, fd int) bool {
	var st unix.Stat_t
	return unix.Stat(procPath(pid, "fd/"+strconv.Itoa(fd)), &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG
}

// resolve is the absolute path, as the process sees it, of path relative
// to its descriptor dirfd.
func resolve(pid, dirfd int, path string) (string, bool) {
	if path == "" {
		return "", false
	}
	if filepath.IsAbs(path) {
		return filepath.Clean(path), true
	}
	link := procPath(pid, "cwd")
	if dirfd != unix.AT_FDCWD {
		link = procPath(pid, "fd/"+strconv.Itoa(dirfd))
	}
	base, err := os.Readlink(link)
	if err != nil || !filepath.IsAbs(base) {
		return "", false
	}
	return filepath.Join(base, path), true
}

// errUnreachable: a path is under no data root, or its root never
// existed while a process of the node did.
var errUnreachable = errors.New("not reachable")

// rootOf is the data root that holds p, a path under a data root as the
// node sees it, and p below it. lockstep reaches the root through its
// descriptor, now and after the node's processes are gone: opened the
// first time the root exists, through the process's root, its links
// resolved as the node sees them (safefs.OpenInRoot), never to lockstep's
// own files. Below the root, names are resolved through no link at all
// (safefs.Dir): a link a node put in its data paths does not take lockstep
// out of them, and a change made through one is not in the books.
func (b *Books) rootOf(pid int, p string) (*safefs.Dir, string, error) {
	for _, r := range b.roots {
		rel, ok := under(r, p)
		if !ok {
			continue
		}
		rd := b.rootFds[r]
		if rd == nil {
			if pid == 0 {
				return nil, "", errUnreachable
			}
			d, err := safefs.OpenInRoot(procPath(pid, "root"), r)
			if err != nil {
				return nil, "", err
			}
			b.rootFds[r], rd = d, d
		}
		return rd, rel, nil
	}
	return nil, "", errUnreachable
}

// dirAt opens d, a directory under a data root as the node sees it (see
// rootOf).
func (b *Books) dirAt(pid int, d string) (*safefs.Dir, error) {
	root, rel, err := b.rootOf(pid, d)
	if err != nil {
		return nil, err
	}
	return root.Sub(rel)
}

// fileOf is the books' file for the process's descriptor fd, opened on
// first use through the descriptor itself (a file the node has open, on
// the node's mount: a host file it opened read-only cannot be opened for
// writing so).
func (b *Books) fileOf(pid, fd int, path string) (*file, error) {
	hp := procPath(pid, "fd/"+strconv.Itoa(fd))
	var st unix.Stat_t
	if err := unix.Stat(hp, &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, safefs.ErrNotRegular
	}
	if f := b.files[fileKey{st.Dev, st.Ino}]; f != nil {
		f.path = path
		return f, nil
	}
	h, err := os.OpenFile(hp, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	return b.adopt(h, path)
}

// fileAt is fileOf for a path (as the node sees it), reached below its
// data root through no link.
func (b *Books) fileAt(pid int, p string) (*file, error) {
	root, rel, err := b.rootOf(pid, p)
	if err != nil {
		return nil, err
	}
	h, err := root.OpenFile(rel, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	return b.adopt(h, p)
}

// adopt makes h, a regular file opened read-write, the books' file for
// its inode (p as the node sees it), or closes it when the books have one.
func (b *Books) adopt(h *os.File, p string) (*file, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(h.Fd()), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		h.Close()
		if err == nil {
			err = safefs.ErrNotRegular
		}
		return nil, err
	}
	k := fileKey{st.Dev, st.Ino}
	if f := b.files[k]; f != nil {
		h.Close()
		f.path = p
		return f, nil
	}
	b.seq++
	f := &file{f: h, key: k, path: p, seq: b.seq}
	b.files[k] = f
	return f, nil
}

// fdinfo reads a descriptor's position and open flags.
func fdinfo(pid, fd int) (pos int64, flags int, err error) {
	raw, err := os.ReadFile(procPath(pid, "fdinfo/"+strconv.Itoa(fd)))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range bytes.Split(raw, []byte("\n")) {
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		v = bytes.TrimSpace(v)
		switch string(k) {
		case "pos":
			pos, _ = strconv.ParseInt(string(v), 10, 64)
		case "flags":
			f, _ := strconv.ParseInt(string(v), 8, 64)
			flags = int(f)
		}
	}
	return pos, flags, nil
}

func size(f *os.File) int64 {
	st, err := f.Stat()
	if err != nil {
		return 0
	}
	return st.Size()
}

// readAt reads up to n bytes of f at off (fewer past its end).
func readAt(f *os.File, off, n int64) []byte {
	if n <= 0 {
		return nil
	}
	buf := make([]byte, n)
	m, _ := f.ReadAt(buf, off)
	return buf[:m]
}
