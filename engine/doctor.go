package engine

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/bpf"
	"github.com/lockstep-dev/lockstep/netns"
	"github.com/lockstep-dev/lockstep/spec"
	"github.com/lockstep-dev/lockstep/tracer"
)

// Standing says whether this machine gives trials something they use.
type Standing int

const (
	// Has: it does.
	Has Standing = iota
	// Degraded: trials run without it, less well (the detail says how).
	Degraded
	// Lacks: no trial can run without it.
	Lacks
)

func (s Standing) String() string {
	switch s {
	case Has:
		return "ok"
	case Degraded:
		return "warn"
	}
	return "MISSING"
}

// Finding is one thing trials need from the machine, and what it has.
type Finding struct {
	What     string
	Standing Standing
	Detail   string
}

// Doctor looks at what trials need from this machine, in docs/ci.md's
// order, and, when nothing is missing, runs one trial of a two-node spec
// of /bin/sh in a directory of its own, which it removes: the proof that
// the parts work together.
func Doctor(ctx context.Context) []Finding {
	fs := []Finding{
		kernelFinding(),
		privilegesFinding(),
		cgroupFinding(),
		netnsFinding(),
		ptraceFinding(),
		overlayFinding(),
		bpfFinding(),
		realtimeFinding(),
		tscFinding(),
	}
	for _, f := range fs {
		if f.Standing == Lacks {
			return append(fs, Finding{"a trial", Lacks, "not run: something it needs is missing"})
		}
	}
	return append(fs, trialFinding(ctx))
}

// minKernel is the oldest kernel lockstep runs on: pidfd_getfd and
// CAP_BPF came in 5.6 and 5.8.
var minKernel = [2]int{5, 8}

func kernelFinding() Finding {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return Finding{"kernel", Lacks, err.Error()}
	}
	release := unix.ByteSliceToString(u.Release[:])
	f := Finding{What: "kernel", Detail: release}
	if !kernelAtLeast(release, minKernel) {
		f.Standing, f.Detail = Lacks, fmt.Sprintf("%s, older than %d.%d", release, minKernel[0], minKernel[1])
	}
	return f
}

// kernelAtLeast says whether a kernel release ("6.18.0-1-amd64") is at
// least major.minor.
func kernelAtLeast(release string, want [2]int) bool {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return false
	}
	major, err1 := strconv.Atoi(parts[0])
	digits := strings.IndexFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' })
	if digits < 0 {
		digits = len(parts[1])
	}
	minor, err2 := strconv.Atoi(parts[1][:digits])
	if err1 != nil || err2 != nil {
		return false
	}
	return major > want[0] || major == want[0] && minor >= want[1]
}

func privilegesFinding() Finding {
	if err := needPrivileges(); err != nil {
		return Finding{"privileges", Lacks, err.Error()}
	}
	var names []string
	for _, c := range needed {
		names = append(names, c.name)
	}
	return Finding{"privileges", Has, strings.Join(names, ", ")}
}

func cgroupFinding() Finding {
	root, err := netns.CgroupRoot("")
	if err != nil {
		return Finding{"cgroup v2", Lacks, err.Error()}
	}
	probe := filepath.Join(root, fmt.Sprintf("lockstep-doctor-%d", os.Getpid()))
	if err := os.Mkdir(probe, 0o755); err != nil {
		return Finding{"cgroup v2", Lacks, fmt.Sprintf("%s is not writable: %v", root, err)}
	}
	os.Remove(probe)
	return Finding{"cgroup v2", Has, root + ", writable"}
}

// onDoomedThread runs f on a thread of its own that ends with it: what f
// changes of the thread (its namespaces, its policy) goes with it.
func onDoomedThread(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		errc <- f()
	}()
	return <-errc
}

func netnsFinding() Finding {
	if err := onDoomedThread(func() error { return unix.Unshare(unix.CLONE_NEWNET | unix.CLONE_NEWNS) }); err != nil {
		return Finding{"namespaces", Lacks, fmt.Sprintf("cannot make network and mount namespaces: %v", err)}
	}
	return Finding{"namespaces", Has, "network and mount"}
}

func ptraceFinding() Finding {
	b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope")
	if err == nil && strings.TrimSpace(string(b)) == "3" {
		return Finding{"ptrace", Lacks, "kernel.yama.ptrace_scope is 3: no process may trace another until a reboot"}
	}
	return Finding{"ptrace", Has, "allowed"}
}

func overlayFinding() Finding {
	b, err := os.ReadFile("/proc/filesystems")
	if err != nil {
		return Finding{"overlayfs", Lacks, err.Error()}
	}
	if !bytes.Contains(b, []byte("\toverlay\n")) {
		return Finding{"overlayfs", Lacks, "not in /proc/filesystems: a node's private /tmp is an overlay (modprobe overlay)"}
	}
	return Finding{"overlayfs", Has, "for the nodes' private /tmp"}
}

func bpfFinding() Finding {
	ct, err := bpf.NewConntrack("", nil)
	if err != nil {
		return Finding{"eBPF", Degraded, fmt.Sprintf("the connection records cannot load (%v): lockstep's own accounting of the bytes stands alone", err)}
	}
	ct.Close()
	a, err := bpf.NewActivity(nil)
	if err != nil {
		return Finding{"eBPF", Degraded, fmt.Sprintf("connection records load; the activity counters do not (%v): quiescence reads each node's cgroup cpu.stat instead, more slowly", err)}
	}
	a.Close()
	return Finding{"eBPF", Has, "connection records and activity counters load"}
}

func realtimeFinding() Finding {
	err := onDoomedThread(func() error {
		return unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_RR, Priority: 1}, 0)
	})
	if err == nil {
		return Finding{"real-time priority", Has, "SCHED_RR"}
	}
	detail := fmt.Sprintf("SCHED_RR refused (%v): the threads of a node are not serialized, and replays of multi-threaded runtimes may diverge", err)
	if why := tracer.RealtimeHint(err); why != "" {
		detail += "; " + why
	}
	return Finding{"real-time priority", Degraded, detail}
}

func tscFinding() Finding {
	traps, err := tracer.TSCTraps()
	switch {
	case err != nil:
		return Finding{"time-stamp counter", Degraded, err.Error()}
	case traps:
		return Finding{"time-stamp counter", Has, "rdtsc faults when a node asks: every read is virtual"}
	}
	return Finding{"time-stamp counter", Degraded, "this machine ignores PR_TSC_SIGSEGV (a hypervisor that does not pass CR4.TSD on): the reads in a program's own image are rewritten to trap, those in its shared libraries read the real counter"}
}

// doctorSpec is the trial Doctor runs: a server and a client of /bin/sh.
const doctorSpec = `name: doctor
nodes:
  - name: server
    role: server
    command: ["/bin/sh", "-c", "sleep 1"]
  - name: client
    role: client
    command: ["/bin/sh", "-c", "echo ok > {{tmp}}/ok"]
limits: {virtual_time: 10s, real_time: 60s}
`

func trialFinding(ctx context.Context) Finding {
	dir, err := os.MkdirTemp("", "lockstep-doctor-")
	if err != nil {
		return Finding{"a trial", Lacks, err.Error()}
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "doctor.yaml")
	if err := os.WriteFile(path, []byte(doctorSpec), 0o644); err != nil {
		return Finding{"a trial", Lacks, err.Error()}
	}
	sp, err := spec.Load(path)
	if err != nil {
		return Finding{"a trial", Lacks, err.Error()}
	}
	start := time.Now()
	// Its warnings are the findings above.
	quiet := slog.New(slog.DiscardHandler)
	sum, err := Run(ctx, sp, RunOptions{Trials: 1, Strategy: "pos", OutDir: filepath.Join(dir, "out"), DropTmp: true, Logger: quiet})
	if err != nil {
		return Finding{"a trial", Lacks, err.Error()}
	}
	if o := sum.Results[0].Outcome; o.Kind != Pass {
		return Finding{"a trial", Lacks, fmt.Sprintf("a spec of two /bin/sh nodes did not pass: %v", o)}
	}
	return Finding{"a trial", Has, fmt.Sprintf("two nodes of /bin/sh ran and passed in %v", time.Since(start).Round(time.Millisecond))}
}
