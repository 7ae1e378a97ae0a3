package tracer

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// helperEnv carries the launch configuration to the re-executed helper.
const helperEnv = "LOCKSTEP_TRACER_HELPER"

// addrNoRandomize is personality(2)'s ADDR_NO_RANDOMIZE.
const addrNoRandomize = 0x0040000

// syncFd is the helper's end of the pipe on which the tracer says "seized".
const syncFd = 3

// helperConfig is what the helper needs to become the node's first process.
type helperConfig struct {
	Path      string   `json:"path"`
	Argv      []string `json:"argv"`
	Env       []string `json:"env"`
	Dir       string   `json:"dir,omitempty"`
	Netns     string   `json:"netns,omitempty"`
	HostsFile string   `json:"hosts,omitempty"`
	Cgroup    string   `json:"cgroup,omitempty"`
	NoFilter  bool     `json:"nofilter,omitempty"`
	// Sentinel makes the helper pause forever: the tracer stops it with
	// SIGSTOP to wake itself from a blocking wait4.
	Sentinel bool `json:"sentinel,omitempty"`
	// CPU pins the node to one CPU when >= 0 (see Options.CPU).
	CPU int `json:"cpu"`
	// TrapTSC makes rdtsc/rdtscp fault so the tracer can answer them from
	// virtual time.
	TrapTSC bool `json:"traptsc,omitempty"`
}

func init() {
	// The helper must do its per-thread setup (personality, setns, seccomp)
	// on the thread that will exec. init runs on the main thread, so locking
	// here keeps main on it.
	if os.Getenv(helperEnv) != "" {
		runtime.LockOSThread()
	}
}

// MaybeRunHelper turns the process into a launch helper when it was started
// as one, and never returns in that case. Every binary that uses Tracer must
// call it first thing in main (and in TestMain for tests).
func MaybeRunHelper() {
	raw := os.Getenv(helperEnv)
	if raw == "" {
		return
	}
	var cfg helperConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		helperFail("decoding config: %v", err)
	}
	if cfg.Sentinel {
		for {
			unix.Pause()
		}
	}
	if err := runHelper(&cfg); err != nil {
		helperFail("%v", err)
	}
	panic("unreachable")
}

func helperFail(format string, args ...any) {
	// Exit code 127 like a shell's "cannot execute"; the message is the only
	// clue the user gets, so make it name the program.
	fmt.Fprintf(os.Stderr, "lockstep: launching node: "+format+"\n", args...)
	os.Exit(127)
}

func runHelper(cfg *helperConfig) error {
	if cfg.CPU >= 0 {
		var set unix.CPUSet
		set.Set(cfg.CPU)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return fmt.Errorf("pinning to CPU %d: %w", cfg.CPU, err)
		}
	}
	if cfg.Cgroup != "" {
		if err := os.WriteFile(cfg.Cgroup+"/cgroup.procs", []byte("0"), 0); err != nil {
			return fmt.Errorf("joining cgroup %s: %w", cfg.Cgroup, err)
		}
	}
	if cfg.HostsFile != "" {
		// A private mount namespace lets this node see its own /etc/hosts.
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			return fmt.Errorf("unsharing mount namespace: %w", err)
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			return fmt.Errorf("making mounts private: %w", err)
		}
		if err := unix.Mount(cfg.HostsFile, "/etc/hosts", "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind-mounting %s over /etc/hosts: %w", cfg.HostsFile, err)
		}
	}
	if cfg.Netns != "" {
		fd, err := unix.Open(cfg.Netns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("opening network namespace: %w", err)
		}
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("entering network namespace %s: %w", cfg.Netns, err)
		}
		unix.Close(fd)
	}
	if cfg.Dir != "" {
		if err := unix.Chdir(cfg.Dir); err != nil {
			return fmt.Errorf("changing to %s: %w", cfg.Dir, err)
		}
	}
	if _, _, errno := unix.RawSyscall(unix.SYS_PERSONALITY, addrNoRandomize, 0, 0); errno != 0 {
		return fmt.Errorf("disabling ASLR: %w", errno)
	}
	argv0, err := syscall.BytePtrFromString(cfg.Path)
	if err != nil {
		return err
	}
	argv, err := syscall.SlicePtrFromStrings(cfg.Argv)
	if err != nil {
		return err
	}
	envv, err := syscall.SlicePtrFromStrings(cfg.Env)
	if err != nil {
		return err
	}
	// Wait until the tracer has seized us: a RET_TRACE filter without a
	// tracer makes syscalls fail with ENOSYS.
	var b [1]byte
	if n, err := unix.Read(syncFd, b[:]); n != 1 {
		return fmt.Errorf("waiting for the tracer: %v", err)
	}
	unix.Close(syncFd)
	if cfg.TrapTSC {
		if err := unix.Prctl(unix.PR_SET_TSC, unix.PR_TSC_SIGSEGV, 0, 0, 0); err != nil {
			return fmt.Errorf("trapping rdtsc: %w", err)
		}
	}
	if !cfg.NoFilter {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("setting no_new_privs: %w", err)
		}
		prog := gatedFilter()
		fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
		if _, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog))); errno != 0 {
			return fmt.Errorf("installing seccomp filter: %w", errno)
		}
	}
	_, _, errno := unix.RawSyscall(unix.SYS_EXECVE, uintptr(unsafe.Pointer(argv0)), uintptr(unsafe.Pointer(&argv[0])), uintptr(unsafe.Pointer(&envv[0])))
	return fmt.Errorf("executing %s: %w", cfg.Path, syscall.Errno(errno))
}
