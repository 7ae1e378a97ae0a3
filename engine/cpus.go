package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/internal/procfs"
)

// cpuPick is the CPU a job pins its nodes and tracer to, and its claim on
// it (nil when every CPU was claimed and the job shares one).
type cpuPick struct {
	cpu   int
	claim *cpuClaim
}

// pickCPUs chooses CPUs for n jobs, quietest first: it claims up to n
// CPUs no other job holds, fewest real-time threads first, and lists the
// claimed ones first, then the rest (held by other jobs, busiest last)
// for jobs beyond them to share. Counting real-time threads alone, two
// campaigns started at the same moment (shards side by side, test
// packages run in parallel) both saw none and both took the first CPU.
func pickCPUs(n int) []cpuPick {
	var claimed, shared []cpuPick
	for _, c := range quietestFirst(allowedCPUs(), rtThreadsByCPU()) {
		if len(claimed) < n {
			if cl := claimCPU(c); cl != nil {
				claimed = append(claimed, cpuPick{cpu: c, claim: cl})
				continue
			}
		}
		shared = append(shared, cpuPick{cpu: c})
	}
	return append(claimed, shared...)
}

// cpuClaim is a job's hold on its CPU: an abstract Unix socket bound to
// the CPU's name. The kernel lets one socket hold a name and frees it
// when the socket is closed or its process ends, however it ends, so a
// claim leaves nothing behind a SIGKILL and needs no cleaning. Abstract
// names belong to a network namespace: campaigns run from one (the
// host's) see each other's claims.
type cpuClaim struct{ fd int }

// claimCPU claims cpu, or returns nil when another job holds it (or no
// socket could be made: the CPU is then picked by its count alone).
func claimCPU(cpu int) *cpuClaim {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: cpuClaimName(cpu)}); err != nil {
		unix.Close(fd)
		return nil
	}
	return &cpuClaim{fd: fd}
}

// cpuClaimName is the abstract socket name ('@' is its leading zero byte)
// that claims cpu.
func cpuClaimName(cpu int) string { return fmt.Sprintf("@lockstep-cpu-%d", cpu) }

// release gives the CPU up; nil-safe.
func (c *cpuClaim) release() {
	if c != nil && c.fd >= 0 {
		unix.Close(c.fd)
		c.fd = -1
	}
}

// allowedCPUs lists the CPUs this process may run on, so that jobs pin
// themselves inside a taskset or cpuset (two campaigns side by side:
// `taskset -c 1 lockstep run ...`) rather than always from CPU 0.
func allowedCPUs() []int {
	var set unix.CPUSet
	var cpus []int
	if err := unix.SchedGetaffinity(0, &set); err == nil {
		for c := 0; c < len(set)*64; c++ {
			if set.IsSet(c) {
				cpus = append(cpus, c)
			}
		}
	}
	if len(cpus) == 0 {
		return []int{0}
	}
	return cpus
}

// rtThreadsByCPU counts the user-space threads under a real-time policy
// (SCHED_FIFO or SCHED_RR) on each CPU: those of other lockstep campaigns,
// whose tracees run SCHED_RR on their job's CPU. Kernel threads, which
// every CPU has alike, are left out.
func rtThreadsByCPU() map[int]int {
	count := map[int]int{}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		if c := p.Name()[0]; c >= '0' && c <= '9' {
			countRTThreads(p.Name(), count)
		}
	}
	return count
}

// countRTThreads adds process pid's real-time threads to count, by CPU.
func countRTThreads(pid string, count map[int]int) {
	tasks, _ := os.ReadDir(filepath.Join("/proc", pid, "task"))
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc", pid, "task", t.Name(), "stat"))
		if err != nil {
			continue
		}
		s, err := procfs.ParseStat(b)
		if err != nil {
			continue
		}
		flags, _ := s.Field(procfs.FieldFlags)
		cpu, _ := s.Field(procfs.FieldProcessor)
		policy, ok := s.Field(procfs.FieldPolicy)
		if !ok {
			continue
		}
		const pfKthread = 0x00200000
		if flags&pfKthread == 0 && (policy == unix.SCHED_FIFO || policy == unix.SCHED_RR) {
			count[int(cpu)]++
		}
	}
}

// quietestFirst orders cpus by how many real-time threads already run on
// each, fewest first (ties keep their order): a campaign beside another
// then takes the other CPU rather than sharing one round-robin queue with
// its tracees, which slows both and makes their schedules depend on it.
func quietestFirst(cpus []int, rt map[int]int) []int {
	out := slices.Clone(cpus)
	slices.SortStableFunc(out, func(a, b int) int { return rt[a] - rt[b] })
	return out
}
