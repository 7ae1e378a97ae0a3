package tracer

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// RealtimeHint says why a thread could not take a real-time policy, when
// the cause can be read: a cgroup v1 cpu controller that schedules
// real-time groups gives a cgroup no real-time time unless it is given
// some, as a container's is not (podman's --cpu-rt-runtime; docs/ci.md).
// "" when err is not EPERM or the budget is not nothing.
func RealtimeHint(err error) string {
	if !errors.Is(err, unix.EPERM) {
		return ""
	}
	b, rerr := os.ReadFile("/proc/self/cgroup")
	if rerr != nil {
		return ""
	}
	return zeroRTBudget(string(b), "/sys/fs/cgroup")
}

// zeroRTBudget finds this process's cpu.rt_runtime_us from its cgroup
// file (the lines of /proc/self/cgroup) below root, where the cpu
// controller's hierarchy is mounted as cpu or cpu,cpuacct: under its
// cgroup's path, else at the mount's root (a container's own cgroup).
func zeroRTBudget(cgroups, root string) string {
	for line := range strings.Lines(cgroups) {
		f := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(f) != 3 || !isCPUController(f[1]) {
			continue
		}
		for _, dir := range []string{"cpu", "cpu,cpuacct", "cpuacct,cpu"} {
			for _, p := range []string{filepath.Join(root, dir, f[2], "cpu.rt_runtime_us"), filepath.Join(root, dir, "cpu.rt_runtime_us")} {
				v, err := os.ReadFile(p)
				if err != nil {
					continue
				}
				if strings.TrimSpace(string(v)) == "0" {
					return "its cgroup has no real-time time (" + p + " is 0): in a container, give it some (docs/ci.md)"
				}
				return ""
			}
		}
	}
	return ""
}

func isCPUController(list string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == "cpu" {
			return true
		}
	}
	return false
}
