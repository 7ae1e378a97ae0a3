package launch

import (
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// A node's /proc is its PID namespace's, but most of what it shows beside
// the processes is the host's kernel: its settings, its devices, its
// interrupts, the keys of the host's users. It is masked as Docker's
// default profile masks it (runc's maskedPaths and readonlyPaths), so that
// a node sees and changes there what a container would.

// maskedPaths are hidden: a file under /dev/null, a directory under an
// empty read-only tmpfs. They hold the host's memory (kcore), its users'
// key names (keys), timers, interrupts and scheduler state that show
// other processes', and firmware and devices a node has no business with.
// /proc/interrupts is in recent Docker releases' list.
var maskedPaths = []string{
	"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
	"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
	"/sys/firmware", "/sys/devices/virtual/powercap",
}

// readOnlyPaths stay readable but not writable under the node's writable
// /proc: writes there change the host's kernel (its settings, interrupts'
// CPUs, PCI devices' configuration, the magic SysRq key).
var readOnlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}

// setMasks prepares maskedPaths and readOnlyPaths for the child, each
// that the host's kernel has, at proc in place of /proc (an image's
// /proc before the pivot). /sys is masked only where the node sees the
// host's (no image).
func (s *spawnSpec) setMasks(proc string) {
	s.null, s.maskOpts = cstr("/dev/null"), cstr("size=0,mode=555")
	at := func(path string) (string, bool) {
		if rest, ok := strings.CutPrefix(path, "/proc/"); ok {
			return proc + "/" + rest, true
		}
		return path, proc == "/proc"
	}
	for _, p := range maskedPaths {
		fi, err := os.Stat(p)
		target, ok := at(p)
		switch {
		case err != nil || !ok:
		case fi.IsDir():
			s.maskDirs = append(s.maskDirs, cstr(target))
		default:
			s.maskFiles = append(s.maskFiles, cstr(target))
		}
	}
	for _, p := range readOnlyPaths {
		if target, ok := at(p); ok && exists(p) {
			s.procRO = append(s.procRO, cstr(target))
		}
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// bindReadOnlyPaths binds each of readOnlyPaths onto itself, so that
// readOnly can make it read-only alone.
//
//go:nosplit
//go:norace
//go:noinline
func bindReadOnlyPaths(s *spawnSpec) syscall.Errno {
	for _, p := range s.procRO {
		if e := mnt(p, p, nil, unix.MS_BIND|unix.MS_REC, nil); e != 0 {
			return e
		}
	}
	return 0
}

// maskProc makes readOnlyPaths read-only (bound already) and hides
// maskedPaths, in the child: after the writable paths were made writable
// again, which would undo either under /proc.
//
//go:nosplit
//go:norace
//go:noinline
func maskProc(s *spawnSpec) syscall.Errno {
	for _, p := range s.procRO {
		if e := setattr(p, unix.AT_RECURSIVE, &s.roAttr); e != 0 {
			return e
		}
	}
	for _, f := range s.maskFiles {
		if e := mnt(s.null, f, nil, unix.MS_BIND, nil); e != 0 {
			return e
		}
	}
	for _, d := range s.maskDirs {
		if e := mnt(s.tmpfs, d, s.tmpfs, unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, s.maskOpts); e != 0 {
			return e
		}
	}
	return 0
}
