package safefs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrNotRegular: what is at a name is not a regular file (a directory, a
// FIFO, a device, a socket).
var ErrNotRegular = errors.New("not a regular file")

// beneath is how every name below a Dir is resolved: within it, through
// no symbolic link (the last component included) and no /proc magic link.
// Mount points are crossed: a node cannot mount, and the mounts below a
// trial's directory are lockstep's (each node's {{tmp}}).
const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// Dir is a directory held open: the names below it are resolved from its
// descriptor, never from a path, so what happens to the path after Open
// (a node renaming it, a link put in its place) does not matter.
type Dir struct {
	f *os.File // O_PATH
}

// OpenDir opens path, a directory of lockstep's own or one it made before
// any node could write there; path itself is resolved as usual.
func OpenDir(path string) (*Dir, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return &Dir{f: os.NewFile(uintptr(fd), path)}, nil
}

// Close lets the directory go.
func (d *Dir) Close() error {
	if d == nil {
		return nil
	}
	return d.f.Close()
}

// Path is the directory's path when it was opened, for messages and for
// programs that take paths (the files it names may have moved since).
func (d *Dir) Path() string { return d.f.Name() }

// Fd is the directory's descriptor (O_PATH), valid until Close.
func (d *Dir) Fd() int { return int(d.f.Fd()) }

// Join is name's path below the directory, for messages.
func (d *Dir) Join(name string) string { return filepath.Join(d.Path(), name) }

// OpenFile opens the regular file name below d with flag and, when it
// creates it, perm, as os.OpenFile does, but resolving name beneath d
// (see beneath): a symbolic link fails with ELOOP, a ".." or an absolute
// name with EXDEV, anything but a regular file with ErrNotRegular.
func (d *Dir) OpenFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	// O_NONBLOCK: a FIFO in the file's place must not make the open
	// wait for a reader; O_NOCTTY: nor may a terminal become lockstep's.
	how := unix.OpenHow{
		Flags:   uint64(flag) | unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_NOCTTY | unix.O_NONBLOCK,
		Resolve: beneath,
	}
	if flag&os.O_CREATE != 0 {
		how.Mode = uint64(perm.Perm())
	}
	fd, err := openat2(d.Fd(), name, &how)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: d.Join(name), Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "stat", Path: d.Join(name), Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: d.Join(name), Err: ErrNotRegular}
	}
	if flag&unix.O_NONBLOCK == 0 {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, flag&(unix.O_APPEND|unix.O_DIRECT|unix.O_NOATIME)); err != nil {
			unix.Close(fd)
			return nil, &os.PathError{Op: "fcntl", Path: d.Join(name), Err: err}
		}
	}
	return os.NewFile(uintptr(fd), d.Join(name)), nil
}

// Create creates or truncates the regular file name below d, for writing.
func (d *Dir) Create(name string) (*os.File, error) {
	return d.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
}

// Open opens the regular file name below d for reading.
func (d *Dir) Open(name string) (*os.File, error) {
	return d.OpenFile(name, os.O_RDONLY, 0)
}

// WriteFile writes data to the regular file name below d, creating or
// truncating it, as os.WriteFile does.
func (d *Dir) WriteFile(name string, data []byte, perm os.FileMode) error {
	f, err := d.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Sub opens the directory name below d, resolved beneath d.
func (d *Dir) Sub(name string) (*Dir, error) {
	fd, err := openat2(d.Fd(), name, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC | unix.O_NOFOLLOW, Resolve: beneath})
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: d.Join(name), Err: err}
	}
	return &Dir{f: os.NewFile(uintptr(fd), d.Join(name))}, nil
}

// MkdirBelow makes the directories of rel below root that do not exist,
// each resolved beneath the one before through no link, and opens the
// last: a link, a file or a way up that a node left on the way fails it,
// and the error says what was there. root itself is resolved as usual.
func MkdirBelow(root, rel string, perm os.FileMode) (*Dir, error) {
	d, err := OpenDir(root)
	if err != nil {
		return nil, err
	}
	for _, name := range strings.Split(filepath.ToSlash(filepath.Clean(rel)), "/") {
		if name == "." {
			continue
		}
		if name == ".." || name == "" {
			d.Close()
			return nil, &os.PathError{Op: "mkdir", Path: filepath.Join(root, rel), Err: unix.EXDEV}
		}
		if err := unix.Mkdirat(d.Fd(), name, uint32(perm.Perm())); err != nil && err != unix.EEXIST {
			d.Close()
			return nil, &os.PathError{Op: "mkdir", Path: d.Join(name), Err: err}
		}
		sub, err := d.Sub(name)
		if err != nil {
			if what := d.Kind(name); what != "" && what != "a directory" {
				err = fmt.Errorf("%w: %s is %s", err, d.Join(name), what)
			}
			d.Close()
			return nil, err
		}
		d.Close()
		d = sub
	}
	return d, nil
}

// openat2 retries the errors the kernel asks to retry: EAGAIN when a
// rename or mount raced with a RESOLVE_BENEATH walk, EINTR.
func openat2(dirfd int, name string, how *unix.OpenHow) (int, error) {
	for tries := 0; ; tries++ {
		fd, err := unix.Openat2(dirfd, name, how)
		if (err == unix.EAGAIN || err == unix.EINTR) && tries < 16 {
			continue
		}
		return fd, err
	}
}

// Kind says what is at name below d, without following it: "a symbolic
// link", "a directory", "a regular file"..., or "" when nothing is (or
// name cannot be looked at beneath d).
func (d *Dir) Kind(name string) string {
	parent, base := d, name
	if dir := filepath.Dir(name); dir != "." {
		p, err := d.Sub(dir)
		if err != nil {
			return ""
		}
		defer p.Close()
		parent, base = p, filepath.Base(name)
	}
	var st unix.Stat_t
	if unix.Fstatat(parent.Fd(), base, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return ""
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "a regular file"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFLNK:
		return "a symbolic link"
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	}
	return "a file of an unknown type"
}

// OpenInRoot opens the directory name as a process whose root directory
// is root (a /proc/PID/root) sees it: every link on the way is resolved
// within that root (RESOLVE_IN_ROOT), so an absolute link a node planted
// names the node's file, never lockstep's, and what is reached is on the
// node's mounts, with their flags (read-only where the host is).
func OpenInRoot(root, name string) (*Dir, error) {
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: root, Err: err}
	}
	defer unix.Close(rfd)
	fd, err := openat2(rfd, name, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: root + "/" + name, Err: err}
	}
	return &Dir{f: os.NewFile(uintptr(fd), filepath.Join(root, name))}, nil
}
