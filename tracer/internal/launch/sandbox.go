package launch

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Sandbox isolates a node the way a container would, beside the PID
// namespace (Config.NewPID): in an IPC namespace of its own (System V
// IPC, POSIX message queues) and a mount namespace of its own
// the host's filesystems are read-only except Writable; /tmp is an
// overlay on the host's with writes of its own, /var/tmp and /dev/shm are
// its own tmpfs, /dev holds a few devices only (no disk of the host's);
// /proc is a new one, showing only the node's processes, with the host's
// kernel masked and read-only in it as Docker's default (maskedPaths,
// readOnlyPaths); and its processes keep only DefaultCaps and
// Caps of root's capabilities. The seccomp filter denies the ways out
// that remain (deniedSyscalls). Its processes cannot open the clock page
// through lockstep's /proc (out of sight, and out of reach without
// CAP_SYS_PTRACE): the node's first process inherits it as descriptor
// ClockPageFd instead.
type Sandbox struct {
	// Writable are directories the node may write (its own).
	Writable []string
	// Caps are capabilities kept beside DefaultCaps (unix.CAP_*).
	Caps []int
	// Trial, when set, is a directory the node also sees at TrialPath,
	// the same path in every run and replay: a program's heap holds the
	// paths it is given, and a Go runtime collects garbage (and polls the
	// network while it does) at points that depend on its heap's size, so
	// a replay in a directory whose name was one byte longer took another
	// path.
	Trial string
	// Root, when set, is an image's filesystem the node sees as / in
	// place of the host's (see Root).
	Root *Root
	// TmpfsSize bounds each of the node's own tmpfs mounts (the scratch
	// that holds its /tmp's writes, /var/tmp, /dev/shm) in bytes; 0 leaves
	// the kernel's default, half the host's memory each. A full one fails
	// the node's writes with ENOSPC; its pages count against the node's
	// memory limit too.
	TmpfsSize int64
	// HiddenMounts are sources (prefixes) of the host's mounts below /tmp
	// that the node must not see: other trials' {{tmp}}. The node sees the
	// others there as on the host, read-only but for Writable.
	HiddenMounts []string
	// Private are host directories the node sees as its own: each an
	// overlay whose lower layer is the host's directory, mounted over it
	// in the node's namespace last.
	Private []PrivateDir
	// Hostname, when set, is the node's own host name, in a UTS namespace
	// of its own: what gethostname and uname tell it, as a container's
	// or a machine's name would, rather than the host's, which differs
	// from one machine to the next and would be every node's at once.
	Hostname string
}

// TrialPath is where a sandboxed node sees Sandbox.Trial.
const TrialPath = "/run/lockstep/trial"

// DefaultCaps are the capabilities a sandboxed node keeps: what a service
// started as root needs to bind a low port and to hand itself or its
// children to another user (chown its files, setuid, setgid, signal
// them). Everything else goes, the administrative ones (CAP_SYS_ADMIN,
// CAP_NET_ADMIN, CAP_SYS_PTRACE, CAP_SYS_MODULE, CAP_SYS_TIME, ...) and
// those that bypass file permissions (CAP_DAC_OVERRIDE, CAP_FOWNER) or
// make devices (CAP_MKNOD); a spec grants more with capabilities:.
func DefaultCaps() []int {
	return []int{unix.CAP_CHOWN, unix.CAP_KILL, unix.CAP_SETGID, unix.CAP_SETUID, unix.CAP_NET_BIND_SERVICE}
}

// capsToDrop lists the capabilities up to the kernel's last that a node
// with these extra ones does not keep.
func capsToDrop(extra []int) ([]uintptr, error) {
	last, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return nil, err
	}
	var n int
	if _, err := fmt.Sscanf(strings.TrimSpace(string(last)), "%d", &n); err != nil {
		return nil, fmt.Errorf("cap_last_cap: %w", err)
	}
	keep := map[int]bool{}
	for _, c := range append(DefaultCaps(), extra...) {
		keep[c] = true
	}
	var drop []uintptr
	for c := 0; c <= n; c++ {
		if !keep[c] {
			drop = append(drop, uintptr(c))
		}
	}
	return drop, nil
}

// PrivateDir is a host directory a node sees as its own (Sandbox.Private):
// Upper holds what the node writes there and Work is the overlay's work
// directory, both on one filesystem the node may write, and existing.
type PrivateDir struct {
	Dir, Upper, Work string
}
