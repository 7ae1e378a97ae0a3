package engine

import (
	"os"
	"runtime"
	"slices"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCPUClaims: a CPU one job claims is not claimed again until it is
// released, and jobs that start while it is held pick unclaimed CPUs
// first. Claims are the host's (abstract sockets): other lockstep runs,
// test packages among them, may hold CPUs meanwhile, so the test claims
// a name no CPU has for the first part and asserts the order only.
func TestCPUClaims(t *testing.T) {
	fake := 1<<20 + os.Getpid()
	a := claimCPU(fake)
	if a == nil {
		t.Fatalf("claiming %s: refused", cpuClaimName(fake))
	}
	if b := claimCPU(fake); b != nil {
		b.release()
		t.Fatal("a claimed CPU was claimed again")
	}
	a.release()
	a.release() // twice is harmless
	b := claimCPU(fake)
	if b == nil {
		t.Fatal("a released CPU could not be claimed again")
	}
	b.release()

	first := pickCPUs(1)
	defer func() {
		for _, p := range first {
			p.claim.release()
		}
	}()
	second := pickCPUs(len(allowedCPUs()))
	defer func() {
		for _, p := range second {
			p.claim.release()
		}
	}()
	for _, picks := range [][]cpuPick{first, second} {
		var cpus []int
		shared := false
		for _, p := range picks {
			cpus = append(cpus, p.cpu)
			if p.claim == nil {
				shared = true
			} else if shared {
				t.Fatalf("picks %v: a claimed CPU after a shared one", cpus)
			}
		}
		want := allowedCPUs()
		slices.Sort(cpus)
		if !slices.Equal(cpus, want) {
			t.Fatalf("picked %v, want each of %v once", cpus, want)
		}
	}
	if len(first) > 1 && first[1].claim != nil {
		t.Fatal("pickCPUs(1) claimed two CPUs")
	}
	if first[0].claim == nil {
		return // every CPU was held by other runs
	}
	for _, p := range second {
		if p.claim != nil && p.cpu == first[0].cpu {
			t.Fatalf("CPU %d claimed by two jobs", p.cpu)
		}
	}
}

func TestQuietestCPUFirst(t *testing.T) {
	for _, tc := range []struct {
		cpus []int
		rt   map[int]int
		want []int
	}{
		{[]int{0, 1}, nil, []int{0, 1}},
		{[]int{0, 1}, map[int]int{0: 12}, []int{1, 0}},
		{[]int{0, 1, 2, 3}, map[int]int{0: 5, 1: 5, 3: 1}, []int{2, 3, 0, 1}},
	} {
		if got := quietestFirst(tc.cpus, tc.rt); !slices.Equal(got, tc.want) {
			t.Errorf("quietestFirst(%v, %v) = %v, want %v", tc.cpus, tc.rt, got, tc.want)
		}
	}
	if os.Geteuid() != 0 || len(allowedCPUs()) < 2 {
		t.Skip("skipping the live count: needs root and two CPUs")
	}
	// A real-time thread of this process pinned to the last CPU counts
	// there (this process's threads only: other campaigns come and go).
	cpu := allowedCPUs()[len(allowedCPUs())-1]
	mine := func() map[int]int {
		c := map[int]int{}
		countRTThreads(strconv.Itoa(os.Getpid()), c)
		return c
	}
	before := mine()[cpu]
	ready, done := make(chan error), make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with its policy
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			ready <- err
			return
		}
		ready <- unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_RR, Priority: 1}, 0)
		<-done
	}()
	if err := <-ready; err != nil {
		t.Skipf("skipping the live count: %v", err)
	}
	defer close(done)
	if got := mine()[cpu]; got != before+1 {
		t.Fatalf("real-time threads of this process on CPU %d: %d, want %d", cpu, got, before+1)
	}
}
