package disk

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/internal/safefs"
)

// kind is what a change did.
type kind uint8

const (
	chWrite kind = iota + 1
	chTruncate
	chCreate // a name that did not exist: a file, a directory or a link
	chRename
	chUnlink
	chRmdir
)

// data reports whether the change is to a file's bytes (not a name).
func (k kind) data() bool { return k == chWrite || k == chTruncate }

// change is one change not yet durable, with what undoes it.
type change struct {
	kind kind
	// Data changes: the file, where, how long; the file's size before and
	// the bytes the change overwrote (within that size).
	f       *file
	off     int64
	n       int64
	oldSize int64
	old     []byte
	// Name changes: the directory and base name (a rename's source; its
	// target in at2 and base2), the data directories whose fsync makes the
	// change durable (removed as they are), the inode a rename moved, the
	// directory an rmdir removed (when the books hold it), and the inode a
	// rename replaced or an unlink removed, kept open (a symbolic link:
	// its target in link).
	at, at2     *dirRef
	base, base2 string
	dirs        []*dirRef
	self        *dirRef
	moved       fileKey
	kept        *os.File
	link        string
	dir         bool // chRmdir, or a rename that replaced an empty directory
	mode        uint32
}

func (b *Books) record(c *change) {
	b.stats.Changes++
	b.log = append(b.log, c)
}

func (b *Books) write(c Call, f *file) {
	pos, flags, err := fdinfo(c.Pid, c.Fd)
	if err != nil {
		return
	}
	if flags&unix.O_DSYNC != 0 || c.Flags&(unix.RWF_DSYNC|unix.RWF_SYNC) != 0 { // O_SYNC includes O_DSYNC
		return // durable when it returns
	}
	off := c.Off
	sz := size(f.f)
	switch {
	case flags&unix.O_APPEND != 0:
		off = sz
	case off < 0:
		off = pos
	}
	old := readAt(f.f, off, min(c.Len, sz-off))
	b.stats.Kept += uint64(len(old))
	b.record(&change{kind: chWrite, f: f, off: off, n: c.Len, oldSize: sz, old: old})
}

// sync makes what an fsync of p (a data file or directory) covers
// durable.
func (b *Books) sync(c Call, p string) {
	var st unix.Stat_t
	if unix.Stat(procPath(c.Pid, "fd/"+strconv.Itoa(c.Fd)), &st) != nil {
		return
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		b.log = slices.DeleteFunc(b.log, func(ch *change) bool {
			if ch.kind.data() {
				return false
			}
			k := fileKey{st.Dev, st.Ino}
			ch.dirs = slices.DeleteFunc(ch.dirs, func(d *dirRef) bool { return d.key == k || b.journal })
			return b.durable(ch)
		})
		return
	}
	k := fileKey{st.Dev, st.Ino}
	b.log = slices.DeleteFunc(b.log, func(ch *change) bool {
		if !ch.kind.data() {
			if b.journal {
				ch.dirs = nil
				return b.durable(ch)
			}
			return false
		}
		return ch.f.key == k
	})
}

// durable drops a name change whose directories are all synced.
func (b *Books) durable(ch *change) bool {
	if len(ch.dirs) > 0 {
		return false
	}
	if ch.kept != nil {
		ch.kept.Close()
	}
	return true
}

func (b *Books) syncAll() {
	for _, ch := range b.log {
		if ch.kept != nil {
			ch.kept.Close()
		}
	}
	b.log = b.log[:0]
}

func (b *Books) truncate(c Call) {
	var f *file
	var err error
	if c.Fd >= 0 {
		p, ok := b.fdPath(c.Pid, c.Fd)
		if !ok {
			return
		}
		f, err = b.fileOf(c.Pid, c.Fd, p)
	} else {
		p, ok := resolve(c.Pid, c.Dirfd, c.Path)
		if !ok || !b.data(p) {
			return
		}
		f, err = b.fileAt(c.Pid, p)
	}
	if err != nil {
		return
	}
	b.truncateFile(f, c.Len)
}

func (b *Books) truncateFile(f *file, to int64) {
	sz := size(f.f)
	if to == sz {
		return
	}
	old := readAt(f.f, to, sz-to)
	b.stats.Kept += uint64(len(old))
	b.record(&change{kind: chTruncate, f: f, off: to, oldSize: sz, old: old})
}

// dirRef is a data directory, held open (O_PATH): the names in it can be
// changed back after it was renamed, and after the node is gone. Every
// change to a name in it goes through its descriptor (the *at calls) with
// that one name, which the calls do not follow: a directory reached
// through no link (dirOf) keeps lockstep in the node's data paths.
type dirRef struct {
	dir *safefs.Dir
	key fileKey
}

func (d *dirRef) fd() int { return d.dir.Fd() }

// lstat looks at base in the directory, without following it.
func (d *dirRef) lstat(base string, st *unix.Stat_t) error {
	return unix.Fstatat(d.fd(), base, st, unix.AT_SYMLINK_NOFOLLOW)
}

// dirOf is the data directory holding p (as the node sees it), or nil when
// p's directory is not under a data path or is reached through a link.
func (b *Books) dirOf(pid int, p string) *dirRef {
	d := filepath.Dir(p)
	if !b.data(d) {
		return nil
	}
	sub, err := b.dirAt(pid, d)
	if err != nil {
		return nil
	}
	var st unix.Stat_t
	if unix.Fstat(sub.Fd(), &st) != nil {
		sub.Close()
		return nil
	}
	k := fileKey{st.Dev, st.Ino}
	if r := b.dirs[k]; r != nil {
		sub.Close()
		return r
	}
	r := &dirRef{dir: sub, key: k}
	b.dirs[k] = r
	return r
}

func (b *Books) open(c Call) {
	if c.Flags&(unix.O_CREAT|unix.O_TRUNC) == 0 {
		return
	}
	p, ok := resolve(c.Pid, c.Dirfd, c.Path)
	if !ok || !b.data(p) {
		return
	}
	d := b.dirOf(c.Pid, p)
	if d == nil {
		return
	}
	var st unix.Stat_t
	if err := d.lstat(filepath.Base(p), &st); err != nil {
		if c.Flags&unix.O_CREAT != 0 && err == unix.ENOENT {
			b.record(&change{kind: chCreate, at: d, base: filepath.Base(p), dirs: []*dirRef{d}})
		}
		return
	}
	if c.Flags&unix.O_TRUNC != 0 && c.Flags&unix.O_ACCMODE != unix.O_RDONLY && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Size > 0 {
		if f, err := b.fileAt(c.Pid, p); err == nil {
			b.truncateFile(f, 0)
		}
	}
}

// dataName resolves a name that a call creates or removes: its path p, its
// base name and the books of its directory d; ok is false when the name is
// not under the data paths or cannot be resolved.
func (b *Books) dataName(pid, dirfd int, path string) (p, base string, d *dirRef, ok bool) {
	p, ok = resolve(pid, dirfd, path)
	if !ok || !b.data(p) {
		return "", "", nil, false
	}
	if d = b.dirOf(pid, p); d == nil {
		return "", "", nil, false
	}
	return p, filepath.Base(p), d, true
}

// create records a new name (mkdir, link, symlink): Path for mkdir, Path2
// for links.
func (b *Books) create(c Call) {
	dirfd, path := c.Dirfd, c.Path
	if c.Op == OpLink {
		dirfd, path = c.Dirfd2, c.Path2
	}
	_, base, d, ok := b.dataName(c.Pid, dirfd, path)
	if !ok {
		return
	}
	var st unix.Stat_t
	if d.lstat(base, &st) == nil {
		return // it will fail with EEXIST
	}
	b.record(&change{kind: chCreate, at: d, base: base, dirs: []*dirRef{d}, dir: c.Op == OpMkdir})
}

func (b *Books) rename(c Call) {
	from, ok1 := resolve(c.Pid, c.Dirfd, c.Path)
	to, ok2 := resolve(c.Pid, c.Dirfd2, c.Path2)
	if !ok1 || !ok2 || (!b.data(from) && !b.data(to)) {
		return
	}
	d1, d2 := b.dirOf(c.Pid, from), b.dirOf(c.Pid, to)
	if d1 == nil || d2 == nil || c.Flags&unix.RENAME_EXCHANGE != 0 {
		// Into or out of the data paths, or an exchange: not in the books
		// (docs/spec.md, Storage faults).
		return
	}
	var st unix.Stat_t
	if d1.lstat(filepath.Base(from), &st) != nil {
		return // it will fail
	}
	ch := &change{kind: chRename, at: d1, base: filepath.Base(from), at2: d2, base2: filepath.Base(to), moved: fileKey{st.Dev, st.Ino}, dirs: []*dirRef{d1}}
	if d2 != d1 {
		ch.dirs = append(ch.dirs, d2)
	}
	var old unix.Stat_t
	if d2.lstat(ch.base2, &old) == nil {
		if old.Dev == st.Dev && old.Ino == st.Ino {
			return // the same file: nothing changes
		}
		b.keep(ch, d2, ch.base2, &old)
	}
	b.record(ch)
}

// keep holds what base in d, a name about to go, names, so that it can
// come back: a file open, a symbolic link's target, a directory's mode
// (only an empty one can go).
func (b *Books) keep(ch *change, d *dirRef, base string, st *unix.Stat_t) {
	ch.mode = st.Mode & 0o7777
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		// The node runs: what is there may have changed since st, and
		// must not be followed or waited on.
		fd, err := unix.Openat(d.fd(), base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err != nil {
			return
		}
		var now unix.Stat_t
		if unix.Fstat(fd, &now) != nil || now.Mode&unix.S_IFMT != unix.S_IFREG {
			unix.Close(fd)
			return
		}
		ch.kept = os.NewFile(uintptr(fd), base)
	case unix.S_IFLNK:
		buf := make([]byte, unix.PathMax)
		if n, err := unix.Readlinkat(d.fd(), base, buf); err == nil {
			ch.link = string(buf[:n])
		}
	case unix.S_IFDIR:
		ch.dir = true
	}
}

func (b *Books) unlink(c Call) {
	_, base, d, ok := b.dataName(c.Pid, c.Dirfd, c.Path)
	if !ok {
		return
	}
	var st unix.Stat_t
	if d.lstat(base, &st) != nil {
		return
	}
	isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	if isDir != (c.Flags&unix.AT_REMOVEDIR != 0) {
		return // it will fail
	}
	ch := &change{kind: chUnlink, at: d, base: base, dirs: []*dirRef{d}}
	if isDir {
		ch.kind = chRmdir
		ch.self = b.dirs[fileKey{st.Dev, st.Ino}]
	}
	b.keep(ch, d, base, &st)
	b.record(ch)
}
