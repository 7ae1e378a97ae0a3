package launch

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"unsafe"

	securejoin "github.com/cyphar/filepath-securejoin"
	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/internal/execpath"
)

// Root is an image's filesystem that a sandboxed node sees as its / in
// place of the host's (Sandbox.Root): an overlay of the node's writable
// layer over the image's unpacked root, which stays unchanged. The
// writable layer outlives the node's processes, so a restarted node finds
// what it wrote; a new one starts from the image.
//
// The rest of the sandbox is as on the host: a /proc of the node's PID
// namespace (its sys read-only), a /dev of lockstep's making, the hosts
// file, the trial's directory at TrialPath. /tmp and /var/tmp are the
// image's, in the writable layer. Sandbox.Writable, host paths, do not
// apply: nothing of the host's filesystem is in sight.
type Root struct {
	// Lower is the image's unpacked root filesystem.
	Lower string
	// Upper and Work are overlayfs's upper and work directories, on one
	// filesystem: the node's writable layer.
	Upper, Work string
}

// rootMount is where a node's image root is assembled, in its mount
// namespace, before it becomes the node's / (pivot_root).
const rootMount = "/run/lockstep/root"

type rootDir struct {
	path string
	mode uint32
}

// rootDirs are directories the sandbox mounts over in an image root,
// made in the writable layer when the image lacks them, with their modes.
var rootDirs = []rootDir{
	{"/proc", 0o555}, {"/dev", 0o755}, {"/tmp", 0o1777}, {"/var/tmp", 0o1777}, {"/etc", 0o755}, {TrialPath, 0o755},
}

// inRoot resolves path in the image as its processes will (symlinks stay
// inside the image) and returns it under rootMount.
func (r *Root) inRoot(path string) (string, error) {
	p, err := securejoin.SecureJoin(r.Lower, path)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(r.Lower, p)
	if err != nil || strings.HasPrefix(rel, "..") {
		return "", fmt.Errorf("%s leaves the image", path)
	}
	return filepath.Join(rootMount, rel), nil
}

// LookPath finds argv0 in the image as execve will after the node's root
// changes: through PATH from env when it has no slash, from dir when it
// is relative. It returns the path inside the image.
func (r *Root) LookPath(argv0, dir string, env []string) (string, error) {
	return execpath.Find(argv0, dir, env, r.Upper, r.Lower)
}

// setImageRoot prepares a sandbox on an image root (see Root); it
// replaces setSandbox's host-root set-up.
func (s *spawnSpec) setImageRoot(sb *Sandbox, clockFd int) error {
	r := sb.Root
	for _, d := range []string{sandboxScratch, rootMount, r.Upper, r.Work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
	}
	s.sandbox, s.image = true, true
	s.roAttr = mountAttr{set: unix.MOUNT_ATTR_RDONLY}
	s.slash, s.proc, s.proc0 = cstr("/"), cstr("proc"), cstr("/proc")
	s.tmpfs, s.scratch = cstr("tmpfs"), cstr(sandboxScratch)
	s.overlay, s.root, s.dot = cstr("overlay"), cstr(rootMount), cstr(".")
	s.ovlOpts = cstr("lowerdir=" + r.Lower + ",upperdir=" + r.Upper + ",workdir=" + r.Work)
	if clockFd >= 0 {
		s.clock, s.hasClock = uintptr(clockFd), true
	}
	var err error
	if s.capsDrop, err = capsToDrop(sb.Caps); err != nil {
		return err
	}
	at := map[string]string{}
	dirs := slices.Clone(rootDirs)
	if s.dir != nil {
		// The working directory too, made when missing as docker run -w
		// makes it.
		if wd := unix.BytePtrToString(s.dir); filepath.IsAbs(wd) {
			dirs = append(dirs, rootDir{wd, 0o755})
		}
	}
	for _, d := range dirs {
		p, err := r.inRoot(d.path)
		if err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
		at[d.path] = p
		// Each missing parent too, as mkdir -p.
		var chain []string
		for q := p; q != rootMount && strings.HasPrefix(q, rootMount+"/"); q = filepath.Dir(q) {
			chain = append(chain, q)
		}
		for i := len(chain) - 1; i >= 0; i-- {
			mode := uint32(0o755)
			if i == 0 {
				mode = d.mode
			}
			s.rootDirs = append(s.rootDirs, cstr(chain[i]))
			s.rootModes = append(s.rootModes, uintptr(mode))
		}
	}
	s.rootProc = cstr(at["/proc"])
	s.setMasks(at["/proc"])
	if s.hosts != nil {
		// Bound inside the image instead of over the host's /etc/hosts.
		hosts, err := r.inRoot("/etc/hosts")
		if err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
		s.rootHosts, s.imageHosts, s.hosts = cstr(hosts), s.hosts, nil
	}
	if sb.Trial != "" {
		s.trial, s.trialAt = cstr(sb.Trial), cstr(at[TrialPath])
	}
	s.setPrivateDev()
	s.sizeTmpfs(sb.TmpfsSize)
	s.moveDevInto(at["/dev"])
	return nil
}

// moveDevInto retargets setPrivateDev's /dev at the image's: its devices
// are bound from the host's /dev, still in sight when they are.
func (s *spawnSpec) moveDevInto(dev string) {
	re := func(p *byte) *byte {
		return cstr(dev + strings.TrimPrefix(unix.BytePtrToString(p), "/dev"))
	}
	s.dev, s.devPts, s.devShm = cstr(dev), re(s.devPts), re(s.devShm)
	for i := range s.devFiles {
		s.devSrc[i] = s.devFiles[i]
		s.devFiles[i] = re(s.devFiles[i])
	}
	for i := range s.links {
		s.links[i] = re(s.links[i])
	}
}

// imageMounts builds a node's mount namespace on its image root, in the
// child (see Root): the overlay, the directories the sandbox needs in it,
// /proc, /dev, the hosts file and the trial's directory; then the overlay
// becomes the node's /, the host's filesystem detached.
//
//go:nosplit
//go:norace
//go:noinline
func imageMounts(s *spawnSpec) (spawnStep, syscall.Errno) {
	if e := mnt(s.overlay, s.root, s.overlay, 0, s.ovlOpts); e != 0 {
		return stepImageRoot, e
	}
	for i, d := range s.rootDirs {
		_, _, e := syscall.RawSyscall(unix.SYS_MKDIR, uintptr(unsafe.Pointer(d)), s.rootModes[i], 0)
		if e == 0 {
			// Past the umask.
			syscall.RawSyscall6(unix.SYS_FCHMODAT, atFDCWD, uintptr(unsafe.Pointer(d)), s.rootModes[i], 0, 0, 0)
		} else if e != unix.EEXIST {
			return stepImageRoot, e
		}
	}
	if s.newPID {
		if e := mnt(s.proc, s.rootProc, s.proc, unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, nil); e != 0 {
			return stepProc, e
		}
	} else if e := mnt(s.proc0, s.rootProc, nil, unix.MS_BIND|unix.MS_REC, nil); e != 0 {
		return stepProc, e
	}
	if e := bindReadOnlyPaths(s); e != 0 {
		return stepReadOnly, e
	}
	if e := mnt(s.tmpfs, s.scratch, s.tmpfs, unix.MS_NOSUID|unix.MS_NODEV, s.tmpfsOpts); e != 0 {
		return stepPrivateDev, e
	}
	for _, d := range s.dirs {
		if _, _, e := syscall.RawSyscall(unix.SYS_MKDIR, uintptr(unsafe.Pointer(d)), 0o755, 0); e != 0 {
			return stepPrivateDev, e
		}
	}
	if e := privateDev(s); e != 0 {
		return stepPrivateDev, e
	}
	// After /dev: the host's /dev/null, still in sight, masks files.
	if e := maskProc(s); e != 0 {
		return stepMaskProc, e
	}
	if s.imageHosts != nil {
		fd, _, e := syscall.RawSyscall(unix.SYS_OPEN, uintptr(unsafe.Pointer(s.rootHosts)), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
		if e != 0 {
			return stepMountHosts, e
		}
		syscall.RawSyscall(unix.SYS_CLOSE, fd, 0, 0)
		if e := mnt(s.imageHosts, s.rootHosts, nil, unix.MS_BIND, nil); e != 0 {
			return stepMountHosts, e
		}
	}
	if s.trial != nil {
		if e := mnt(s.trial, s.trialAt, nil, unix.MS_BIND|unix.MS_REC, nil); e != 0 {
			return stepTrialPath, e
		}
	}
	if _, _, e := syscall.RawSyscall(unix.SYS_CHDIR, uintptr(unsafe.Pointer(s.root)), 0, 0); e != 0 {
		return stepPivotRoot, e
	}
	// pivot_root(".", ".") stacks the old root under the new one, to be
	// detached at once; a lockstep that itself runs in a chroot cannot
	// pivot, and moves the overlay over its / instead.
	if _, _, e := syscall.RawSyscall(unix.SYS_PIVOT_ROOT, uintptr(unsafe.Pointer(s.dot)), uintptr(unsafe.Pointer(s.dot)), 0); e == 0 {
		if _, _, e := syscall.RawSyscall(unix.SYS_UMOUNT2, uintptr(unsafe.Pointer(s.dot)), unix.MNT_DETACH, 0); e != 0 {
			return stepPivotRoot, e
		}
	} else {
		if e := mnt(s.dot, s.slash, nil, unix.MS_MOVE, nil); e != 0 {
			return stepPivotRoot, e
		}
		if _, _, e := syscall.RawSyscall(unix.SYS_CHROOT, uintptr(unsafe.Pointer(s.dot)), 0, 0); e != 0 {
			return stepPivotRoot, e
		}
	}
	if _, _, e := syscall.RawSyscall(unix.SYS_CHDIR, uintptr(unsafe.Pointer(s.slash)), 0, 0); e != 0 {
		return stepPivotRoot, e
	}
	return 0, 0
}
