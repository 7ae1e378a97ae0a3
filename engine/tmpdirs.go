package engine

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/internal/procfs"
	"github.com/lockstep-dev/lockstep/spec"
	"github.com/lockstep-dev/lockstep/tracer"
)

// tmpSource begins the name of the tmpfs of a node's {{tmp}} in the mount
// table, so that one a killed lockstep left can be told from every other
// mount (unmountStale, SweepTmp): lockstep-tmp-PID-START, its lockstep's
// pid and start time (see tmpOwner).
const tmpSource = "lockstep-tmp"

// tmpOwner names this process as its mounts' owner: pid and start time
// (clock ticks since boot), which together name a process for good.
func tmpOwner() string {
	pid := os.Getpid()
	st, err := procfs.ReadStat(pid)
	if err != nil {
		return tmpSource
	}
	start, _ := st.Field(procfs.FieldStartTime)
	return fmt.Sprintf("%s-%d-%d", tmpSource, pid, start)
}

// ownerGone reports whether the lockstep a mount's source names has
// ended; a source naming none counts as gone.
func ownerGone(source string) bool {
	var pid int
	var start int64
	if _, err := fmt.Sscanf(source, tmpSource+"-%d-%d", &pid, &start); err != nil {
		return true
	}
	st, err := procfs.ReadStat(pid)
	if err != nil {
		return true
	}
	now, ok := st.Field(procfs.FieldStartTime)
	return !ok || now != start
}

// tmpMount is how a node's {{tmp}} is named among its tmpfs mounts (see
// outputCaps.fullTmpfs) and in an outcome.
const tmpMount = "{{tmp}}"

// nodeTmps are a trial's {{tmp}} directories: each node's is a tmpfs of
// its limits.node.tmp size, mounted at trialDir/NODE before any node
// starts, so that what a node writes there is bounded (a node wrote 3 GiB
// to the host's disk, kept after a passing trial). Its pages count in the
// node's memory too, as those of its other tmpfs mounts do. At the end of
// the trial the mounts go; what a failing trial's nodes wrote is copied
// to the trial's directory first, where a {{tmp}} always was.
type nodeTmps struct {
	tf     *trialFiles
	mounts []nodeTmp
}

type nodeTmp struct {
	node string
	mnt  *os.File // the mount's root (the descriptor fsmount gave)
}

// mountTmps mounts each node's {{tmp}} (sizes: by node, in order) in the
// trial's directory, which no node has seen yet.
func mountTmps(tf *trialFiles, order []string, sizes map[string]int64) (*nodeTmps, error) {
	nt := &nodeTmps{tf: tf}
	owner := tmpOwner()
	for _, node := range order {
		m, err := mountTmp(tf, node, sizes[node], owner)
		if err != nil {
			nt.release(false)
			return nil, fmt.Errorf("node %s's {{tmp}}: %w", node, err)
		}
		nt.mounts = append(nt.mounts, nodeTmp{node: node, mnt: m})
	}
	return nt, nil
}

// mountTmp makes the directory node in the trial's directory and mounts
// a tmpfs of size bytes on it, named source, through descriptors only
// (the new mount API): no path is resolved that a node could have changed.
func mountTmp(tf *trialFiles, node string, size int64, source string) (*os.File, error) {
	if err := unix.Mkdirat(tf.dir.Fd(), node, 0o755); err != nil {
		return nil, fmt.Errorf("making it: %w", err)
	}
	fsfd, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("fsopen: %w", err)
	}
	defer unix.Close(fsfd)
	for _, kv := range [][2]string{{"source", source}, {"size", strconv.FormatInt(size, 10)}, {"mode", "755"}} {
		if err := unix.FsconfigSetString(fsfd, kv[0], kv[1]); err != nil {
			return nil, fmt.Errorf("tmpfs option %s=%s: %w", kv[0], kv[1], err)
		}
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return nil, fmt.Errorf("creating the tmpfs: %w", err)
	}
	mfd, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	if err != nil {
		return nil, fmt.Errorf("fsmount: %w", err)
	}
	if err := unix.MoveMount(mfd, "", tf.dir.Fd(), node, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		unix.Close(mfd)
		return nil, fmt.Errorf("mounting it: %w", err)
	}
	return os.NewFile(uintptr(mfd), tf.dir.Join(node)), nil
}

// fds are the mounts' descriptors, by node, for outputCaps to watch.
func (nt *nodeTmps) fds() map[string]int {
	out := map[string]int{}
	if nt == nil {
		return out
	}
	for _, m := range nt.mounts {
		out[m.node] = int(m.mnt.Fd())
	}
	return out
}

// release unmounts every {{tmp}}, once the trial's processes are gone;
// keep copies what each holds into a directory of the same name first.
// It returns the first failure and goes on past it; a second call does
// nothing.
func (nt *nodeTmps) release(keep bool) error {
	if nt == nil {
		return nil
	}
	var first error
	for _, m := range nt.mounts {
		if err := nt.releaseOne(m, keep); err != nil && first == nil {
			first = fmt.Errorf("node %s's {{tmp}}: %w", m.node, err)
		}
		m.mnt.Close()
	}
	nt.mounts = nil
	return first
}

func (nt *nodeTmps) releaseOne(m nodeTmp, keep bool) error {
	dfd := nt.tf.dir.Fd()
	aside := "." + m.node + ".tmp"
	if keep {
		if err := unix.Mkdirat(dfd, aside, 0o755); err != nil {
			return fmt.Errorf("keeping it: %w", err)
		}
		if err := copyTree(procFd(int(m.mnt.Fd())), nt.tf.dir.Join(aside)); err != nil {
			return fmt.Errorf("keeping it: %w", err)
		}
	}
	// The mount's root through lockstep's own descriptor: nothing a node
	// left can redirect it.
	if err := unix.Unmount(procFd(int(m.mnt.Fd())), unix.MNT_DETACH); err != nil {
		return fmt.Errorf("unmounting it: %w", err)
	}
	if err := unix.Unlinkat(dfd, m.node, unix.AT_REMOVEDIR); err != nil {
		return fmt.Errorf("removing it: %w", err)
	}
	if keep {
		return unix.Renameat(dfd, aside, dfd, m.node)
	}
	return nil
}

// keepFree is how much of the output directory's filesystem a copy of a
// trial's {{tmp}} directories must leave free: 15 % of its size, at most
// 4 GiB, as journald keeps free for others. etcd's members leave 367 MB
// there per failing trial; a campaign that copied every one filled the
// host's disk.
func keepFree(st *unix.Statfs_t) uint64 {
	return min(st.Blocks*uint64(st.Bsize)/100*15, 4<<30)
}

// noRoom says why the trial's {{tmp}} directories cannot be copied to its
// directory, "" when they can: the copy would leave less than keepFree.
// With several jobs, trials copying at once each see the room before the
// others' copies, so the disk can go under keepFree by what they copy.
func (nt *nodeTmps) noRoom() (string, error) {
	if nt == nil || len(nt.mounts) == 0 {
		return "", nil
	}
	var need uint64
	for _, m := range nt.mounts {
		n, err := treeSize(procFd(int(m.mnt.Fd())))
		if err != nil {
			return "", fmt.Errorf("node %s's {{tmp}}: %w", m.node, err)
		}
		need += n
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(nt.tf.dir.Fd()), &st); err != nil {
		return "", fmt.Errorf("the trial directory's filesystem: %w", err)
	}
	free, keep := st.Bavail*uint64(st.Bsize), keepFree(&st)
	if free >= need && free-need >= keep {
		return "", nil
	}
	return fmt.Sprintf("copying its %s would leave %s of the output's disk free, under the %s lockstep keeps free",
		spec.FormatSize(int64(need)), spec.FormatSize(int64(free-min(free, need))), spec.FormatSize(int64(keep))), nil
}

// treeSize is the bytes copyTree would write from src: its regular files'
// lengths, a block for each directory and link beside.
func treeSize(src string) (uint64, error) {
	root, err := os.OpenRoot(src)
	if err != nil {
		return 0, err
	}
	defer root.Close()
	var n uint64
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			n += 4096
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		n += uint64(info.Size())
		return nil
	})
	return n, err
}

func procFd(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// copyTree copies the directories, regular files and symbolic links (as
// links, not followed) below src into dst, an empty directory; other
// files (FIFOs, sockets) are left. Both are opened as os.Roots: nothing
// is reached outside them.
func copyTree(src, dst string) error {
	from, err := os.OpenRoot(src)
	if err != nil {
		return err
	}
	defer from.Close()
	to, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer to.Close()
	return fs.WalkDir(from.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return to.Mkdir(p, info.Mode().Perm())
		case d.Type()&fs.ModeSymlink != 0:
			target, err := from.Readlink(p)
			if err != nil {
				return err
			}
			return to.Symlink(target, p)
		case d.Type().IsRegular():
			return copyFile(from, to, p, info.Mode().Perm())
		}
		return nil
	})
}

func copyFile(from, to *os.Root, p string, perm fs.FileMode) error {
	in, err := from.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := to.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// unmountStale unmounts the {{tmp}} mounts a killed lockstep left below
// dir (an output directory's trials, a trial's directory, which the
// caller holds), which would keep their memory and make dir impossible to
// remove.
func unmountStale(dir string) error {
	_, err := unmountTmps(func(at, _ string) bool { return strings.HasPrefix(at, filepath.Clean(dir)+"/") })
	return err
}

// SweepTmp unmounts the nodes' {{tmp}} mounts whose lockstep has ended
// (all: every lockstep's) and returns where they were: what a killed
// lockstep leaves, which keeps its memory until then. lockstep clean calls
// it.
func SweepTmp(all bool) ([]string, error) {
	return unmountTmps(func(_, source string) bool { return all || ownerGone(source) })
}

// unmountTmps unmounts the {{tmp}} mounts for which stale(mount point,
// source) holds, the last mounted first, and returns their mount points.
func unmountTmps(stale func(at, source string) bool) ([]string, error) {
	mounts, err := procfs.Mounts("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var ats []string
	for _, m := range mounts {
		if m.FSType == "tmpfs" && strings.HasPrefix(m.Source, tmpSource) && stale(m.Point, m.Source) {
			ats = append(ats, m.Point)
		}
	}
	slices.Reverse(ats)
	var done []string
	var errs []error
	for _, at := range ats {
		if err := unix.Unmount(at, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", at, err))
			continue
		}
		done = append(done, at)
	}
	return done, errors.Join(errs...)
}

// privateDir is where a node's private directory i keeps its overlay's
// layers: in the node's {{tmp}} (nodeDir), so that its writes are bounded
// as the rest of {{tmp}} is, last across the node's restarts in a trial and
// are kept with a failing trial's files.
func privateDir(nodeDir string, i int) (upper, work string) {
	base := filepath.Join(nodeDir, ".private", strconv.Itoa(i))
	return filepath.Join(base, "upper"), filepath.Join(base, "work")
}

// privateDirs makes the layers of a node's private directories (a
// restart finds them made) and says where they are. nodeDir is the node's
// to write: they are made through an os.Root of it, so that a link the
// node left there never makes lockstep make a directory of the host's.
func privateDirs(nodeDir string, dirs []string) ([]tracer.PrivateDir, error) {
	if len(dirs) == 0 {
		return nil, nil
	}
	root, err := os.OpenRoot(nodeDir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	var out []tracer.PrivateDir
	for i, d := range dirs {
		upper, work := privateDir(nodeDir, i)
		if strings.ContainsAny(upper, ",:\\") {
			return nil, fmt.Errorf("private directory %s: the output directory's path %s cannot hold an overlay's layer (a ',', ':' or '\\' in it)", d, nodeDir)
		}
		for _, p := range []string{upper, work} {
			rel, _ := filepath.Rel(nodeDir, p)
			if err := root.MkdirAll(rel, 0o755); err != nil {
				return nil, fmt.Errorf("private directory %s: %w", d, err)
			}
		}
		out = append(out, tracer.PrivateDir{Dir: d, Upper: upper, Work: work})
	}
	return out, nil
}
