package launch

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/internal/procfs"
)

// ClockPageFd is the descriptor a sandboxed node's processes hold the
// clock page on (a sandboxed process cannot open it through lockstep's
// /proc, so the node's first process inherits it): high, so that it does
// not take a number a program expects to get.
const ClockPageFd = 1023

// Nodes are started by forking the tracer thread and running a short list
// of raw syscalls in the child before it execs the target: join the node's
// namespaces, disable ASLR, wait until seized, install the seccomp filter.
// Re-executing lockstep as a helper did the same from Go code, but a Go
// binary of lockstep's size takes about 20 ms to start on this kind of
// machine, which was most of a small trial's real time.
//
// The child shares nothing with the parent (a plain fork, not vfork) and
// runs only nosplit code that calls RawSyscall, as the syscall package's
// own fork does; the runtime hooks below block signals around the fork and
// restore a sane signal state in the child.

//go:linkname beforeFork syscall.runtime_BeforeFork
func beforeFork()

//go:linkname afterFork syscall.runtime_AfterFork
func afterFork()

//go:linkname afterForkInChild syscall.runtime_AfterForkInChild
func afterForkInChild()

// addrNoRandomize is personality(2)'s ADDR_NO_RANDOMIZE.
const addrNoRandomize = 0x0040000

// spawnStep names the child's steps, so a failure can say which one.
type spawnStep uintptr

const (
	stepSetpgid spawnStep = iota + 1
	stepStdio
	stepCloseFds
	stepUnshare
	stepMountPrivate
	stepMountHosts
	stepProc
	stepPrivateTmp
	stepPrivateDev
	stepReadOnly
	stepWritable
	stepTrialPath
	stepSetns
	stepChdir
	stepPersonality
	stepWaitSeized
	stepTSC
	stepCaps
	stepNoNewPrivs
	stepSeccomp
	stepExec
	stepImageRoot
	stepPivotRoot
	stepMaskProc
	stepKeep
	stepInit
	stepHostname
	stepPrivateDirs
)

var stepNames = map[spawnStep]string{
	stepSetpgid: "creating a process group", stepStdio: "setting up stdin/stdout/stderr",
	stepCloseFds: "closing inherited descriptors", stepUnshare: "unsharing the mount namespace",
	stepMountPrivate: "making mounts private", stepMountHosts: "bind-mounting the node's hosts file over /etc/hosts",
	stepProc: "mounting the node's /proc", stepPrivateTmp: "giving the node a private /tmp", stepPrivateDev: "giving the node a /dev of its own",
	stepReadOnly: "making the host's filesystem read-only", stepWritable: "keeping a writable directory writable",
	stepTrialPath: "showing the trial's directory at " + TrialPath,
	stepCaps:      "dropping capabilities",
	stepSetns:     "entering the network namespace", stepChdir: "changing directory",
	stepPersonality: "disabling ASLR", stepWaitSeized: "waiting for the tracer",
	stepTSC: "trapping rdtsc", stepNoNewPrivs: "setting no_new_privs",
	stepSeccomp: "installing the seccomp filter", stepExec: "executing the program",
	stepImageRoot: "mounting the image's root", stepPivotRoot: "making the image's root the node's /",
	stepMaskProc:    "masking the host's kernel in /proc and /sys",
	stepKeep:        "keeping its directories below its own /tmp, /var/tmp and /dev/shm",
	stepInit:        "forking the program under lockstep's init",
	stepHostname:    "setting the node's host name",
	stepPrivateDirs: "mounting the node's private directories (private_dirs)",
}

// spawnSpec is everything the child needs, prepared by the parent so that
// the child only reads memory and makes syscalls.
type spawnSpec struct {
	stdio [3]uintptr
	// keep are the descriptors the child uses (sorted); every other one
	// inherited from lockstep is closed, so that a node never holds
	// another job's sockets open.
	keep            [4]uintptr
	nkeep           int
	syncFd, errFd   uintptr
	netns           uintptr // 0: stay in lockstep's
	hosts           *byte   // nil: no private /etc/hosts
	etcHosts, slash *byte
	// sandbox: see Sandbox. The node's mount namespace gets a /proc of its
	// PID namespace, and every filesystem read-only except the writable
	// paths (each bind-mounted onto itself and made writable again) and
	// procRO, which stay read-only; maskFiles are hidden under null,
	// maskDirs under an empty tmpfs (maskOpts) (see maskedPaths); capsDrop
	// leave the bounding set.
	sandbox  bool
	hostname []byte // the node's host name (Sandbox.Hostname), nil: the host's
	// privDirs are overlays mounted last (Sandbox.Private), with their
	// options.
	privDirs, privOpts  []*byte
	proc, proc0         *byte // "proc", "/proc"
	writable            []*byte
	procRO              []*byte
	maskFiles, maskDirs []*byte
	null, maskOpts      *byte
	roAttr              mountAttr // MOUNT_ATTR_RDONLY set
	rwAttr              mountAttr // MOUNT_ATTR_RDONLY cleared
	capsDrop            []uintptr
	// The node's private /tmp, /var/tmp and /dev are built in a tmpfs of
	// its own mounted on scratch (dirs are made there). privTmp lays an
	// overlay over /tmp whose writes go there, so the host's /tmp stays
	// readable and unchanged; /var/tmp and /dev/shm are empty tmpfs. The
	// node's writable directories below the three (kept: its trial's, when
	// the output is there) are set aside through keptAt before they are
	// covered and put back after, and so are the host's mounts below /tmp
	// (hostMounts through hostMountsAt: a volume a program or a spec is
	// on), which overlayfs does not show, first, since a writable directory
	// may be on one; keptDirs are the directories down to each, made on
	// the new mounts first. The new /dev holds the few devices programs use
	// (bound from the host's /dev, set aside at hostDev), a devpts of its
	// own, a private /dev/shm and the usual links: the host's disks are out
	// of reach.
	tmpfs, scratch                  *byte
	tmpfsOpts                       *byte // "size=N" (Sandbox.TmpfsSize), nil: the default
	dirs                            []*byte
	privTmp                         bool
	upper, work, overlay, tmp       *byte
	ovlOpts                         *byte
	kept, keptAt, keptDirs          []*byte
	hostMounts, hostMountsAt        []*byte
	dev, hostDev, devOpts           *byte
	devFiles, devSrc                []*byte
	devPts, devpts, ptsOpts, devShm *byte
	links, linkTargets              []*byte
	varTmp                          *byte // nil when the host has no /var/tmp
	// trial, when set, is bound at trialAt (TrialPath), after the rest.
	trial, trialAt *byte
	// image: the node's / is an image's (see Root and setImageRoot): an
	// overlay mounted on root, with rootDirs made in it (rootModes), its
	// /proc at rootProc and the hosts file bound at rootHosts; dot is ".".
	image                 bool
	root, dot, rootProc   *byte
	rootDirs              []*byte
	rootModes             []uintptr
	rootHosts, imageHosts *byte
	// clock, when set, is the node's clock page, handed to the program as
	// descriptor ClockPageFd (see ClockPageFd).
	clock    uintptr
	hasClock bool
	dir      *byte
	trapTSC  bool
	newPID   bool // the child is pid 1 of a new PID namespace
	init     bool // the child stays pid 1 as an init; its child execs
	// initCaps are what the init's capabilities become: none (capset's
	// header and its two words of sets, all zero).
	initCapsHdr unix.CapUserHeader
	initCaps    [2]unix.CapUserData
	fprog       *unix.SockFprog // nil: no filter
	path        *byte
	argv, envv  []*byte
}

// spawnFailure is what the child writes to the error pipe before exiting.
type spawnFailure struct {
	step  spawnStep
	errno syscall.Errno
}

// fork forks the calling thread; the child runs s and never returns.
func fork(s *spawnSpec) (int, error) {
	syscall.ForkLock.Lock()
	beforeFork()
	flags := uintptr(unix.SIGCHLD)
	if s.newPID {
		flags |= unix.CLONE_NEWPID
	}
	pid, _, errno := syscall.RawSyscall6(unix.SYS_CLONE, flags, 0, 0, 0, 0, 0)
	if errno == 0 && pid == 0 {
		spawnChild(s)
	}
	afterFork()
	syscall.ForkLock.Unlock()
	runtime.KeepAlive(s)
	if errno != 0 {
		return 0, errno
	}
	return int(pid), nil
}

//go:nosplit
//go:norace
func spawnFail(s *spawnSpec, step spawnStep, errno syscall.Errno) {
	f := spawnFailure{step: step, errno: errno}
	syscall.RawSyscall(unix.SYS_WRITE, s.errFd, uintptr(unsafe.Pointer(&f)), unsafe.Sizeof(f))
	for {
		syscall.RawSyscall(unix.SYS_EXIT_GROUP, 127, 0, 0)
	}
}

// spawnChild runs in the forked child: nosplit, no allocation, no Go
// runtime services, only raw syscalls on memory prepared by the parent.
// Its steps, in order: the descriptors, the mounts, the node's network
// namespace and directory; then, once seized, the restrictions and the
// exec.
//
//go:nosplit
//go:norace
func spawnChild(s *spawnSpec) {
	afterForkInChild()
	if _, _, e := syscall.RawSyscall(unix.SYS_SETPGID, 0, 0, 0); e != 0 {
		spawnFail(s, stepSetpgid, e)
	}
	if step, e := childFds(s); e != 0 {
		spawnFail(s, step, e)
	}
	if step, e := childMounts(s); e != 0 {
		spawnFail(s, step, e)
	}
	if step, e := childJoin(s); e != 0 {
		spawnFail(s, step, e)
	}
	if e := waitSeized(s); e != 0 {
		spawnFail(s, stepWaitSeized, e)
	}
	if step, e := childRestrict(s); e != 0 {
		spawnFail(s, step, e)
	}
	if s.init {
		runInit(s) // returns in the child that goes on to exec
	}
	_, _, e := syscall.RawSyscall(unix.SYS_EXECVE, uintptr(unsafe.Pointer(s.path)),
		uintptr(unsafe.Pointer(&s.argv[0])), uintptr(unsafe.Pointer(&s.envv[0])))
	spawnFail(s, stepExec, e)
}

// runInit makes the child an init (Config.Init): it forks, and the fork
// returns to exec the program; the child stays pid 1 of the namespace,
// reaps its own child and every process orphaned to it, and exits when
// none is left, with the last one's status (a signal's as 128+signal, a
// shell's way). Each process of the namespace is still seized and
// gated: the fork is a traced one. The init itself makes only capset,
// prctl and wait4 calls, none of them gated.
//
//go:nosplit
//go:norace
//go:noinline
func runInit(s *spawnSpec) {
	pid, _, e := syscall.RawSyscall6(unix.SYS_CLONE, uintptr(unix.SIGCHLD), 0, 0, 0, 0, 0)
	if e != 0 {
		spawnFail(s, stepInit, e)
	}
	if pid == 0 {
		return
	}
	// The init never execs, so the capabilities the sandbox dropped from
	// its bounding set are still its own: it needs none to wait. Its
	// memory and environment are a copy of lockstep's (its zygote's):
	// not dumpable, so no process of the node, which now has more
	// capabilities than it, may read them through /proc/1 (environ, mem,
	// maps). The tracer keeps its hold.
	syscall.RawSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&s.initCapsHdr)), uintptr(unsafe.Pointer(&s.initCaps[0])), 0)
	syscall.RawSyscall6(unix.SYS_PRCTL, unix.PR_SET_DUMPABLE, 0, 0, 0, 0, 0)
	// Nothing else: a close would be gated, an op of every trial. The
	// descriptors it keeps (the error pipe's end, the clock page) are
	// the fork's too, and close with the namespace.
	var status uint32
	code := uintptr(0)
	for {
		_, _, e := syscall.RawSyscall6(unix.SYS_WAIT4, ^uintptr(0), uintptr(unsafe.Pointer(&status)), unix.WALL, 0, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			break // ECHILD: no process left
		}
		if sig := status & 0x7f; sig == 0 {
			code = uintptr(status>>8) & 0xff
		} else if sig != 0x7f { // not a stop
			code = 128 + uintptr(sig)
		}
	}
	for {
		syscall.RawSyscall(unix.SYS_EXIT_GROUP, code, 0, 0)
	}
}

// childFds gives the child its standard descriptors, closes all others but
// the kept ones, and puts the clock page at ClockPageFd.
//
//go:nosplit
//go:norace
//go:noinline
func childFds(s *spawnSpec) (spawnStep, syscall.Errno) {
	for i := uintptr(0); i < 3; i++ {
		if _, _, e := syscall.RawSyscall(unix.SYS_DUP3, s.stdio[i], i, 0); e != 0 {
			return stepStdio, e
		}
	}
	lo := uintptr(3)
	for i := 0; i < s.nkeep; i++ {
		if s.keep[i] > lo {
			syscall.RawSyscall(unix.SYS_CLOSE_RANGE, lo, s.keep[i]-1, 0)
		}
		lo = s.keep[i] + 1
	}
	if _, _, e := syscall.RawSyscall(unix.SYS_CLOSE_RANGE, lo, ^uintptr(0)>>32, 0); e != 0 {
		return stepCloseFds, e
	}
	if s.hasClock {
		// Without CLOEXEC: it outlives exec. Past a low descriptor limit
		// the page is opened the slow way instead.
		syscall.RawSyscall(unix.SYS_DUP3, s.clock, ClockPageFd, 0)
	}
	return 0, 0
}

// childMounts gives the child a mount namespace of its own when it needs
// one, with the node's hosts file and its image's or sandbox's mounts.
//
//go:nosplit
//go:norace
//go:noinline
func childMounts(s *spawnSpec) (spawnStep, syscall.Errno) {
	if s.hostname != nil {
		if _, _, e := syscall.RawSyscall(unix.SYS_UNSHARE, unix.CLONE_NEWUTS, 0, 0); e != 0 {
			return stepUnshare, e
		}
		if _, _, e := syscall.RawSyscall(unix.SYS_SETHOSTNAME, uintptr(unsafe.Pointer(&s.hostname[0])), uintptr(len(s.hostname)), 0); e != 0 {
			return stepHostname, e
		}
	}
	if s.hosts != nil || s.sandbox {
		// A private mount namespace lets this node see its own /etc/hosts
		// and a read-only host; a sandbox's IPC namespace keeps System V
		// IPC and POSIX message queues from joining it to other nodes.
		ns := uintptr(unix.CLONE_NEWNS)
		if s.sandbox {
			ns |= unix.CLONE_NEWIPC
		}
		if _, _, e := syscall.RawSyscall(unix.SYS_UNSHARE, ns, 0, 0); e != 0 {
			return stepUnshare, e
		}
		if _, _, e := syscall.RawSyscall6(unix.SYS_MOUNT, 0, uintptr(unsafe.Pointer(s.slash)), 0, unix.MS_REC|unix.MS_PRIVATE, 0, 0); e != 0 {
			return stepMountPrivate, e
		}
	}
	if s.hosts != nil {
		if _, _, e := syscall.RawSyscall6(unix.SYS_MOUNT, uintptr(unsafe.Pointer(s.hosts)), uintptr(unsafe.Pointer(s.etcHosts)), 0, unix.MS_BIND, 0, 0); e != 0 {
			return stepMountHosts, e
		}
	}
	if s.image {
		return imageMounts(s)
	}
	if s.sandbox {
		return sandboxMounts(s)
	}
	return 0, 0
}

// childJoin moves the child into the node's network namespace and working
// directory, and turns address space randomization off.
//
//go:nosplit
//go:norace
//go:noinline
func childJoin(s *spawnSpec) (spawnStep, syscall.Errno) {
	if s.netns != 0 {
		if _, _, e := syscall.RawSyscall(unix.SYS_SETNS, s.netns, unix.CLONE_NEWNET, 0); e != 0 {
			return stepSetns, e
		}
	}
	if s.dir != nil {
		if _, _, e := syscall.RawSyscall(unix.SYS_CHDIR, uintptr(unsafe.Pointer(s.dir)), 0, 0); e != 0 {
			return stepChdir, e
		}
	}
	if _, _, e := syscall.RawSyscall(unix.SYS_PERSONALITY, addrNoRandomize, 0, 0); e != 0 {
		return stepPersonality, e
	}
	return 0, 0
}

// waitSeized waits until the tracer has seized the child and lets it go:
// a RET_TRACE filter without a tracer makes syscalls fail with ENOSYS.
//
//go:nosplit
//go:norace
//go:noinline
func waitSeized(s *spawnSpec) syscall.Errno {
	var b [1]byte
	if n, _, e := syscall.RawSyscall(unix.SYS_READ, s.syncFd, uintptr(unsafe.Pointer(&b[0])), 1); n != 1 {
		if e == 0 {
			e = unix.EPIPE
		}
		return e
	}
	return 0
}

// childRestrict makes reading the TSC trap when asked, drops the
// capabilities the node does not keep, and installs the seccomp filter.
//
//go:nosplit
//go:norace
//go:noinline
func childRestrict(s *spawnSpec) (spawnStep, syscall.Errno) {
	if s.trapTSC {
		if _, _, e := syscall.RawSyscall6(unix.SYS_PRCTL, unix.PR_SET_TSC, unix.PR_TSC_SIGSEGV, 0, 0, 0, 0); e != 0 {
			return stepTSC, e
		}
	}
	for _, c := range s.capsDrop {
		if _, _, e := syscall.RawSyscall6(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, c, 0, 0, 0, 0); e != 0 {
			return stepCaps, e
		}
	}
	if s.fprog != nil {
		if _, _, e := syscall.RawSyscall6(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0); e != 0 {
			return stepNoNewPrivs, e
		}
		if _, _, e := syscall.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(s.fprog))); e != 0 {
			return stepSeccomp, e
		}
	}
	return 0, 0
}

// atFDCWD is AT_FDCWD (-100) as a raw syscall argument.
const atFDCWD = ^uintptr(99)

// mountAttr is struct mount_attr (mount_setattr(2)).
type mountAttr struct {
	set, clr, propagation, userns uint64
}

// alwaysWritable are the paths a read-only node keeps writable besides its
// own: scratch space programs expect (a JVM's /tmp/hsperfdata, POSIX
// shared memory), devices and its processes' /proc files, each the node's
// own (privTmp, privDev, its /proc).
var alwaysWritable = []string{"/tmp", "/var/tmp", "/dev", "/dev/shm", "/proc"}

// sandboxScratch is where a node's private /tmp keeps its writes and its
// /dev is assembled: a directory of the host's, over which each node mounts
// a tmpfs of its own in its mount namespace.
const sandboxScratch = "/run/lockstep/sandbox"

// cstr is a C string for the child; strings here hold no NUL.
func cstr(str string) *byte {
	p, _ := syscall.BytePtrFromString(str)
	return p
}

// setSandbox prepares a sandbox (see Sandbox); clockFd is the node's clock
// page in the forking process, -1 for none.
func (s *spawnSpec) setSandbox(sb *Sandbox, clockFd int) error {
	if sb.Hostname != "" {
		s.hostname = []byte(sb.Hostname)
	}
	if sb.Root != nil {
		return s.setImageRoot(sb, clockFd)
	}
	if err := os.MkdirAll(sandboxScratch, 0o700); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	s.sandbox = true
	s.roAttr = mountAttr{set: unix.MOUNT_ATTR_RDONLY}
	s.rwAttr = mountAttr{clr: unix.MOUNT_ATTR_RDONLY}
	s.slash, s.proc, s.proc0 = cstr("/"), cstr("proc"), cstr("/proc")
	s.setMasks("/proc")
	s.tmpfs, s.scratch = cstr("tmpfs"), cstr(sandboxScratch)
	if clockFd >= 0 {
		s.clock, s.hasClock = uintptr(clockFd), true
	}
	for _, w := range append(slices.Clone(alwaysWritable), sb.Writable...) {
		if isDir(w) {
			s.writable = append(s.writable, cstr(w))
		}
	}
	var err error
	if s.capsDrop, err = capsToDrop(sb.Caps); err != nil {
		return err
	}
	if isDir("/tmp") {
		s.setPrivateTmp()
	}
	if isDir("/var/tmp") {
		s.varTmp = cstr("/var/tmp")
	}
	s.setKeeps(sb.Writable, sb.HiddenMounts)
	if sb.Trial != "" {
		if err := os.MkdirAll(TrialPath, 0o755); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
		s.trial, s.trialAt = cstr(sb.Trial), cstr(TrialPath)
	}
	s.setPrivateDev()
	s.sizeTmpfs(sb.TmpfsSize)
	for _, p := range sb.Private {
		s.overlay = cstr("overlay")
		s.privDirs = append(s.privDirs, cstr(p.Dir))
		s.privOpts = append(s.privOpts, cstr("lowerdir="+p.Dir+",upperdir="+p.Upper+",workdir="+p.Work))
	}
	return nil
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// setPrivateTmp prepares the overlay over /tmp (see privTmp).
func (s *spawnSpec) setPrivateTmp() {
	s.privTmp = true
	s.overlay, s.tmp = cstr("overlay"), cstr("/tmp")
	s.upper, s.work = cstr(sandboxScratch+"/upper"), cstr(sandboxScratch+"/work")
	s.ovlOpts = cstr("lowerdir=/tmp,upperdir=" + sandboxScratch + "/upper,workdir=" + sandboxScratch + "/work")
	s.dirs = append(s.dirs, s.upper, s.work)
}

// privateRoots are the directories a node gets its own of: what the
// host has below them is covered.
var privateRoots = []string{"/tmp", "/var/tmp", "/dev/shm"}

// setKeeps prepares what a node keeps of the host below its own /tmp,
// /var/tmp and /dev/shm (see kept): the writable directories there, and
// the host's mounts below /tmp but those whose source begins with one of
// hidden. Call it after setPrivateTmp.
func (s *spawnSpec) setKeeps(writable, hidden []string) {
	var keep []string
	for _, w := range writable {
		w = filepath.Clean(w)
		if slices.ContainsFunc(privateRoots, func(r string) bool { return below(r, w) }) {
			keep = append(keep, w)
		}
	}
	if s.privTmp {
		mounts, _ := procfs.Mounts("/proc/thread-self/mountinfo")
		for i, m := range mountsBelowTmp(mounts, keep, hidden) {
			at := cstr(sandboxScratch + "/mount" + strconv.Itoa(i))
			s.hostMounts, s.hostMountsAt = append(s.hostMounts, cstr(m)), append(s.hostMountsAt, at)
			s.dirs = append(s.dirs, at)
			s.keptDirs = append(s.keptDirs, dirsDown(m)...)
		}
	}
	for i, w := range keep {
		at := cstr(sandboxScratch + "/keep" + strconv.Itoa(i))
		s.kept, s.keptAt = append(s.kept, cstr(w)), append(s.keptAt, at)
		s.dirs = append(s.dirs, at)
		s.keptDirs = append(s.keptDirs, dirsDown(w)...)
	}
}

// below says whether path is below dir (both clean), not dir itself.
func below(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != "." && !strings.HasPrefix(rel, "..")
}

// dirsDown are the directories from below the private root path is
// below down to path, in order.
func dirsDown(path string) []*byte {
	var out []*byte
	for _, r := range privateRoots {
		if !below(r, path) {
			continue
		}
		rel, _ := filepath.Rel(r, path)
		for _, part := range strings.Split(rel, "/") {
			r += "/" + part
			out = append(out, cstr(r))
		}
		break
	}
	return out
}

// mountsBelowTmp are the mount points below /tmp that a node's private
// /tmp keeps, each after the one it lies on: none at or below a kept
// writable directory (its bind carries them), none whose source begins
// with one of hidden, nor below one. Each is bound alone, not with what is
// mounted below it: a volume that holds the output directory holds the
// other trials' {{tmp}} mounts too, which the node must not see.
func mountsBelowTmp(mounts []procfs.Mount, keep, hidden []string) []string {
	var points []string
	skip := slices.Clone(keep)
	for _, m := range mounts {
		p := filepath.Clean(m.Point)
		if !below("/tmp", p) {
			continue
		}
		if slices.ContainsFunc(hidden, func(h string) bool { return strings.HasPrefix(m.Source, h) }) {
			skip = append(skip, p)
			continue
		}
		points = append(points, p)
	}
	slices.Sort(points)
	var out []string
	for _, p := range slices.Compact(points) {
		if slices.ContainsFunc(skip, func(k string) bool { return k == p || below(k, p) }) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// sizeTmpfs bounds the node's own tmpfs mounts (Sandbox.TmpfsSize): the
// scratch, /var/tmp, /dev and /dev/shm. Call it after setPrivateDev.
func (s *spawnSpec) sizeTmpfs(size int64) {
	if size <= 0 {
		return
	}
	n := strconv.FormatInt(size, 10)
	s.tmpfsOpts, s.devOpts = cstr("size="+n), cstr("mode=755,size="+n)
}

// setPrivateDev prepares the node's /dev: the host's is set aside in the
// scratch tmpfs, a few of its devices are bound from there.
func (s *spawnSpec) setPrivateDev() {
	s.dev, s.hostDev, s.devOpts = cstr("/dev"), cstr(sandboxScratch+"/hostdev"), cstr("mode=755")
	s.dirs = append(s.dirs, s.hostDev)
	for _, name := range []string{"null", "zero", "full", "random", "urandom", "tty"} {
		if _, err := os.Stat("/dev/" + name); err == nil {
			s.devFiles = append(s.devFiles, cstr("/dev/"+name))
			s.devSrc = append(s.devSrc, cstr(sandboxScratch+"/hostdev/"+name))
		}
	}
	s.devPts, s.devpts, s.ptsOpts, s.devShm = cstr("/dev/pts"), cstr("devpts"), cstr("newinstance,ptmxmode=0666,mode=0620"), cstr("/dev/shm")
	for _, l := range [][2]string{{"/dev/ptmx", "pts/ptmx"}, {"/dev/fd", "/proc/self/fd"}, {"/dev/stdin", "/proc/self/fd/0"}, {"/dev/stdout", "/proc/self/fd/1"}, {"/dev/stderr", "/proc/self/fd/2"}} {
		s.links = append(s.links, cstr(l[0]))
		s.linkTargets = append(s.linkTargets, cstr(l[1]))
	}
}

// setAside binds what the node keeps below its own /tmp, /var/tmp and
// /dev/shm into the scratch, before they are covered: the host's mounts
// each alone (see mountsBelowTmp) and as it can (one that cannot be bound
// stays covered, as before there was a way to keep it), its writable
// directories each for certain.
//
//go:nosplit
//go:norace
//go:noinline
func setAside(s *spawnSpec) syscall.Errno {
	for i, m := range s.hostMounts {
		mnt(m, s.hostMountsAt[i], nil, unix.MS_BIND, nil)
	}
	for i, k := range s.kept {
		if e := mnt(k, s.keptAt[i], nil, unix.MS_BIND|unix.MS_REC, nil); e != 0 {
			return e
		}
	}
	return 0
}

// putBack moves what setAside set aside to where it was, on the node's
// own mounts now there: the host's mounts first, since a writable
// directory may lie on one.
//
//go:nosplit
//go:norace
//go:noinline
func putBack(s *spawnSpec) syscall.Errno {
	// A directory that cannot be made fails the move below, if it matters.
	for _, d := range s.keptDirs {
		syscall.RawSyscall(unix.SYS_MKDIR, uintptr(unsafe.Pointer(d)), 0o755, 0)
	}
	for i, m := range s.hostMounts {
		mnt(s.hostMountsAt[i], m, nil, unix.MS_MOVE, nil)
	}
	for i, k := range s.kept {
		if e := mnt(s.keptAt[i], k, nil, unix.MS_MOVE, nil); e != 0 {
			return e
		}
	}
	return 0
}

// hostMountsReadOnly makes the host's mounts kept below /tmp read-only
// again, which the writable /tmp above them made writable, and the node's
// own directories kept there writable again after that. A mount that
// could not be kept is no mount (EINVAL), the overlay's directory.
//
//go:nosplit
//go:norace
//go:noinline
func hostMountsReadOnly(s *spawnSpec) syscall.Errno {
	if len(s.hostMounts) == 0 {
		return 0
	}
	for _, m := range s.hostMounts {
		if e := setattr(m, unix.AT_RECURSIVE, &s.roAttr); e != 0 && e != unix.EINVAL {
			return e
		}
	}
	for _, k := range s.kept {
		if e := setattr(k, unix.AT_RECURSIVE, &s.rwAttr); e != 0 {
			return e
		}
	}
	return 0
}

// sandboxMounts builds a sandboxed node's mount namespace, in the child
// (see spawnSpec): its /proc, the scratch tmpfs, a private /dev, /var/tmp
// and /tmp, then the read-only host with its writable exceptions.
//
//go:nosplit
//go:norace
//go:noinline
func sandboxMounts(s *spawnSpec) (spawnStep, syscall.Errno) {
	// The child is pid 1 of its PID namespace: this /proc shows the node's
	// processes only.
	if s.newPID {
		if e := mnt(s.proc, s.proc0, s.proc, unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, nil); e != 0 {
			return stepProc, e
		}
	}
	if e := mnt(s.tmpfs, s.scratch, s.tmpfs, unix.MS_NOSUID|unix.MS_NODEV, s.tmpfsOpts); e != 0 {
		return stepPrivateTmp, e
	}
	for _, d := range s.dirs {
		if _, _, e := syscall.RawSyscall(unix.SYS_MKDIR, uintptr(unsafe.Pointer(d)), 0o755, 0); e != 0 {
			return stepPrivateTmp, e
		}
	}
	if e := setAside(s); e != 0 {
		return stepKeep, e
	}
	if e := privateDev(s); e != 0 {
		return stepPrivateDev, e
	}
	if s.varTmp != nil {
		if e := mnt(s.tmpfs, s.varTmp, s.tmpfs, unix.MS_NOSUID|unix.MS_NODEV, s.tmpfsOpts); e != 0 {
			return stepPrivateTmp, e
		}
	}
	if s.privTmp {
		if e := mnt(s.overlay, s.tmp, s.overlay, 0, s.ovlOpts); e != 0 {
			return stepPrivateTmp, e
		}
	}
	if e := putBack(s); e != 0 {
		return stepKeep, e
	}
	// Writable paths first, as bind mounts of themselves, so that the
	// recursive read-only pass reaches them too and each can then be made
	// writable alone.
	for _, w := range s.writable {
		if e := mnt(w, w, nil, unix.MS_BIND|unix.MS_REC, nil); e != 0 {
			return stepWritable, e
		}
	}
	if e := bindReadOnlyPaths(s); e != 0 {
		return stepReadOnly, e
	}
	if e := setattr(s.slash, unix.AT_RECURSIVE, &s.roAttr); e != 0 {
		return stepReadOnly, e
	}
	for _, w := range s.writable {
		if e := setattr(w, unix.AT_RECURSIVE, &s.rwAttr); e != 0 {
			return stepWritable, e
		}
	}
	if e := hostMountsReadOnly(s); e != 0 {
		return stepWritable, e
	}
	// The host's kernel stays out of reach under a writable /proc.
	if e := maskProc(s); e != 0 {
		return stepMaskProc, e
	}
	// Bound last, from the trial's directory made writable above, whose
	// flags a bind mount takes.
	if s.trial != nil {
		if e := mnt(s.trial, s.trialAt, nil, unix.MS_BIND|unix.MS_REC, nil); e != 0 {
			return stepTrialPath, e
		}
	}
	// Over the read-only host: writable mounts of their own, their upper
	// layers in the node's {{tmp}}, made writable above.
	for i, d := range s.privDirs {
		if e := mnt(s.overlay, d, s.overlay, unix.MS_NOSUID|unix.MS_NODEV, s.privOpts[i]); e != 0 {
			return stepPrivateDirs, e
		}
	}
	return 0, 0
}

// privateDev builds the node's /dev, in the child.
//
//go:nosplit
//go:norace
//go:noinline
func privateDev(s *spawnSpec) syscall.Errno {
	if e := mnt(s.dev, s.hostDev, nil, unix.MS_BIND|unix.MS_REC, nil); e != 0 {
		return e
	}
	if e := mnt(s.tmpfs, s.dev, s.tmpfs, unix.MS_NOSUID, s.devOpts); e != 0 {
		return e
	}
	for i := range s.devFiles {
		fd, _, e := syscall.RawSyscall(unix.SYS_OPEN, uintptr(unsafe.Pointer(s.devFiles[i])), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o666)
		if e != 0 {
			return e
		}
		syscall.RawSyscall(unix.SYS_CLOSE, fd, 0, 0)
		if e := mnt(s.devSrc[i], s.devFiles[i], nil, unix.MS_BIND, nil); e != 0 {
			return e
		}
	}
	if _, _, e := syscall.RawSyscall(unix.SYS_MKDIR, uintptr(unsafe.Pointer(s.devPts)), 0o755, 0); e != 0 {
		return e
	}
	if e := mnt(s.devpts, s.devPts, s.devpts, unix.MS_NOSUID|unix.MS_NOEXEC, s.ptsOpts); e != 0 {
		return e
	}
	if _, _, e := syscall.RawSyscall(unix.SYS_MKDIR, uintptr(unsafe.Pointer(s.devShm)), 0o1777, 0); e != 0 {
		return e
	}
	if e := mnt(s.tmpfs, s.devShm, s.tmpfs, unix.MS_NOSUID|unix.MS_NODEV, s.tmpfsOpts); e != 0 {
		return e
	}
	for i := range s.links {
		if _, _, e := syscall.RawSyscall(unix.SYS_SYMLINK, uintptr(unsafe.Pointer(s.linkTargets[i])), uintptr(unsafe.Pointer(s.links[i])), 0); e != 0 {
			return e
		}
	}
	_, _, e := syscall.RawSyscall(unix.SYS_UMOUNT2, uintptr(unsafe.Pointer(s.hostDev)), unix.MNT_DETACH, 0)
	return e
}

// mnt is mount(2) on prepared strings.
//
//go:nosplit
//go:norace
//go:noinline
func mnt(src, dst, typ *byte, flags uintptr, data *byte) syscall.Errno {
	_, _, e := syscall.RawSyscall6(unix.SYS_MOUNT, uintptr(unsafe.Pointer(src)), uintptr(unsafe.Pointer(dst)), uintptr(unsafe.Pointer(typ)), flags, uintptr(unsafe.Pointer(data)), 0)
	return e
}

// setattr is mount_setattr(2) on a prepared path.
//
//go:nosplit
//go:norace
//go:noinline
func setattr(path *byte, flags uintptr, attr *mountAttr) syscall.Errno {
	_, _, e := syscall.RawSyscall6(unix.SYS_MOUNT_SETATTR, atFDCWD, uintptr(unsafe.Pointer(path)), flags, uintptr(unsafe.Pointer(attr)), unsafe.Sizeof(*attr), 0)
	return e
}

// setProgram prepares the C strings and the filter the child needs.
func (s *spawnSpec) setProgram(path string, argv, env []string, dir, hosts string, filter []unix.SockFilter) error {
	var err error
	if s.path, err = syscall.BytePtrFromString(path); err != nil {
		return err
	}
	if s.argv, err = syscall.SlicePtrFromStrings(argv); err != nil {
		return err
	}
	if s.envv, err = syscall.SlicePtrFromStrings(env); err != nil {
		return err
	}
	if dir != "" {
		if s.dir, err = syscall.BytePtrFromString(dir); err != nil {
			return err
		}
	}
	if hosts != "" {
		if s.hosts, err = syscall.BytePtrFromString(hosts); err != nil {
			return err
		}
		s.etcHosts, _ = syscall.BytePtrFromString("/etc/hosts")
		s.slash, _ = syscall.BytePtrFromString("/")
	}
	if len(filter) > 0 {
		prog := slices.Clone(filter)
		s.fprog = &unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	}
	return nil
}

// Config is what a node's first process is started with.
type Config struct {
	Path      string // the program, resolved
	Argv      []string
	Env       []string
	Dir       string
	Netns     string // path of a network namespace to enter, "" = stay
	HostsFile string // bind-mounted over /etc/hosts when set
	Sandbox   *Sandbox
	Stdout    *os.File // nil: lockstep's
	Stderr    *os.File
	// Filter is the seccomp program installed before exec (see Filter);
	// nil runs the program without one.
	Filter []unix.SockFilter
	// TrapTSC makes rdtsc fault (PR_TSC_SIGSEGV), to be answered by the
	// tracer.
	TrapTSC bool
	// NewPID starts the program as pid 1 of a PID namespace of its own.
	NewPID bool
	// Init, with NewPID, keeps pid 1 as an init that reaps what is
	// orphaned to it, and execs the program in its child: a command that
	// starts its server in the background and returns leaves it running.
	Init bool
	// ClockFd is the node's clock page, handed to a sandboxed node as
	// ClockPageFd; -1 for none.
	ClockFd int
}

// Child is a forked child on its way to exec'ing its target: it waits
// until Release, which the caller sends once it has seized it.
type Child struct {
	Pid        int
	sync, errs *os.File // parent ends: write one byte to let it go; read its failure
	// covered is the node's own directory its program lies below, where
	// the host's files do not show ("" when none): what an exec that finds
	// no program must say.
	covered string
}

func newChild(pid int, sync, errs *os.File, cfg Config) *Child {
	c := &Child{Pid: pid, sync: sync, errs: errs}
	if cfg.Sandbox != nil && cfg.Sandbox.Root == nil {
		for _, r := range privateRoots[1:] { // the host's /tmp shows through
			if below(r, filepath.Clean(cfg.Path)) {
				c.covered = r
				break
			}
		}
	}
	return c
}

// Release lets the child go on to exec.
func (c *Child) Release() error {
	_, err := c.sync.Write([]byte{1})
	return err
}

// Spawn forks a child prepared to exec cfg's program; it waits until
// Release.
func Spawn(cfg Config) (*Child, error) {
	s := &spawnSpec{trapTSC: cfg.TrapTSC, newPID: cfg.NewPID, init: cfg.NewPID && cfg.Init}
	s.initCapsHdr.Version = unix.LINUX_CAPABILITY_VERSION_3
	if err := s.setProgram(cfg.Path, cfg.Argv, cfg.Env, cfg.Dir, cfg.HostsFile, cfg.Filter); err != nil {
		return nil, err
	}
	if cfg.Sandbox != nil {
		if err := s.setSandbox(cfg.Sandbox, cfg.ClockFd); err != nil {
			return nil, err
		}
	}
	var closers []*os.File
	defer func() {
		for _, f := range closers {
			f.Close()
		}
	}()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	closers = append(closers, devnull)
	stdout, stderr := cfg.Stdout, cfg.Stderr
	if stdout == nil {
		stdout = os.Stdout
	}
	if stderr == nil {
		stderr = os.Stderr
	}
	// Above 2, so that the child's dup3 onto 0-2 cannot overwrite a source.
	for i, f := range []*os.File{devnull, stdout, stderr} {
		fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 3)
		if err != nil {
			return nil, err
		}
		closers = append(closers, os.NewFile(uintptr(fd), "stdio"))
		s.stdio[i] = uintptr(fd)
	}
	syncR, syncW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	closers = append(closers, syncR)
	errR, errW, err := os.Pipe()
	if err != nil {
		syncW.Close()
		return nil, err
	}
	closers = append(closers, errW)
	s.syncFd, s.errFd = syncR.Fd(), errW.Fd()
	keep := []uintptr{s.syncFd, s.errFd}
	if cfg.Netns != "" {
		ns, err := os.Open(cfg.Netns)
		if err != nil {
			syncW.Close()
			errR.Close()
			return nil, fmt.Errorf("opening network namespace: %w", err)
		}
		closers = append(closers, ns)
		s.netns = ns.Fd()
		keep = append(keep, s.netns)
	}
	if s.hasClock {
		keep = append(keep, s.clock)
	}
	// The stdio sources are closed by close_range after their dup3.
	sortUintptrs(keep)
	s.nkeep = copy(s.keep[:], keep)
	pid, err := fork(s)
	if err != nil {
		syncW.Close()
		errR.Close()
		return nil, fmt.Errorf("fork: %w", err)
	}
	return newChild(pid, syncW, errR, cfg), nil
}

func sortUintptrs(a []uintptr) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// Failure reads why the child exited before exec (nil if it wrote nothing).
func (sp *Child) Failure() error {
	var f spawnFailure
	b := (*[unsafe.Sizeof(f)]byte)(unsafe.Pointer(&f))[:]
	if n, _ := sp.errs.Read(b); n != len(b) {
		return nil
	}
	name := stepNames[f.step]
	if name == "" {
		name = fmt.Sprintf("step %d", f.step)
	}
	if f.step == stepExec && f.errno == unix.ENOENT && sp.covered != "" {
		return fmt.Errorf("%s: %w (a node's %s is its own and empty: the host's files there do not show in it)", name, f.errno, sp.covered)
	}
	return fmt.Errorf("%s: %w", name, f.errno)
}

// Close closes the parent's ends of the child's pipes.
func (sp *Child) Close() {
	sp.sync.Close()
	sp.errs.Close()
}

// sentinelProgram is what the sentinel runs: cat blocked on a pipe that
// never gets data. Started with the syscall package's vfork, so lockstep's
// pages are never shared with it (see Zygote for why that matters).
var sentinelProgram = []string{"/bin/cat"}

// ForkSentinel starts a child that blocks forever reading stdin, a pipe
// whose write end the caller keeps: stopping it makes a
// blocking wait for tracees return. It dies with
// the tracer thread (Pdeathsig) or when the pipe closes.
func ForkSentinel() (pid int, keep *os.File, err error) {
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return 0, nil, err
	}
	defer devnull.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return 0, nil, err
	}
	defer r.Close()
	pid, err = syscall.ForkExec(sentinelProgram[0], sentinelProgram, &syscall.ProcAttr{
		Files: []uintptr{r.Fd(), devnull.Fd(), devnull.Fd()},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true},
	})
	if err != nil {
		w.Close()
		return 0, nil, err
	}
	return pid, w, nil
}
