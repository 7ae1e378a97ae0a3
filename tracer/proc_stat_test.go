package tracer

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestProcStatRSS: a node's process reads the same fixed resident set size
// from /proc/self/stat before and after touching 80 MiB, and in every run,
// and CPU times of 0 after using 30 ms of CPU, while stat's other fields
// (its pid and command name) and the kernel's own accounting (getrusage)
// stay real. As a node runs in a trial (a PID
// namespace and a /proc of its own) the process's files are named by the
// pids it sees, 1 for the node's first process: the RSS read there was the
// real one, and Redis's INFO, which prints it, changed length between a run
// and its replay. The stat read is the process's own, not the file of that
// name in lockstep's /proc (the host's init, or a kernel thread).
func TestProcStatRSS(t *testing.T) {
	prog := bin(t, "c", "proc_stat")
	tests := []struct {
		name string
		argv []string
		// ns runs the node as pid 1 of its own PID namespace, with its
		// own /proc (a sandbox), as the engine runs every node.
		ns bool
		// pid is the pid the reader sees itself by; 0: the launched one.
		pid int
	}{
		{"host pids", []string{prog}, false, 0},
		{"own PID namespace", []string{prog}, true, 1},
		// The shell is pid 1 and forks the program.
		{"a child in the namespace", []string{"/bin/sh", "-c", `"$1"; exit $?`, "sh", prog}, true, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen []string
			for i := 0; i < 2; i++ {
				out, launched := runProcStat(t, tt.argv, tt.ns)
				want := tt.pid
				if want == 0 {
					want = launched
				}
				var sp, gp, rss1, rss2, res, shared, maxrss, ticks, cpuMS int
				var comm string
				if _, err := fmt.Sscanf(out, "pid=%d getpid=%d rss1=%d rss2=%d statm_resident=%d statm_shared=%d maxrss_pages=%d comm=%s stat_cpu_ticks=%d rusage_cpu_ms=%d",
					&sp, &gp, &rss1, &rss2, &res, &shared, &maxrss, &comm, &ticks, &cpuMS); err != nil {
					t.Fatalf("run %d: output %q: %v", i, out, err)
				}
				if sp != want || gp != want || comm != "proc_stat" {
					t.Errorf("run %d: stat's pid %d and command %q, getpid %d; want pid %d, command proc_stat: the other fields are not the reader's own",
						i, sp, comm, gp, want)
				}
				if rss1 != statRSSPages || rss2 != statRSSPages || res != statRSSPages || shared > res {
					t.Errorf("run %d: read rss %d then %d, statm resident %d shared %d; want %d each (shared at most resident)",
						i, rss1, rss2, res, shared, statRSSPages)
				}
				// 80 MiB touched is 20480 pages: the kernel's count is
				// real, so the fixed one read is not it.
				if maxrss < 80<<20/os.Getpagesize() {
					t.Errorf("run %d: maxrss %d pages: the program did not touch its memory", i, maxrss)
				}
				// getrusage's count is the kernel's and real; stat's CPU
				// times are not it.
				if ticks != 0 || cpuMS < 30 {
					t.Errorf("run %d: stat's CPU times %d ticks after %d ms of CPU by getrusage; want 0 after at least 30", i, ticks, cpuMS)
				}
				seen = append(seen, strconv.Itoa(rss1)+" "+strconv.Itoa(rss2))
			}
			if seen[0] != seen[1] {
				t.Errorf("the runs read other sizes: %v", seen)
			}
		})
	}
}

// runProcStat runs argv (the proc_stat program, or a shell that forks it)
// as one node to its end, in a PID namespace and sandbox of its own when ns
// is set, and returns its output and the pid it was launched as.
func runProcStat(t *testing.T, argv []string, ns bool) (string, int) {
	t.Helper()
	h := newHarness(t, Options{Clock: &testClock{}})
	f, err := os.Create(filepath.Join(h.dir, "n.out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg := LaunchConfig{Node: "n", Argv: argv, Stdout: f, Stderr: f}
	if ns {
		cfg.PIDNamespace, cfg.Sandbox = true, &Sandbox{Writable: []string{h.dir}}
	}
	pid, err := h.tr.Launch(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res := h.run(nil, nil)
	if c := exitCode(t, res.exits, "n"); c != 0 {
		t.Fatalf("exit %d:\n%s", c, h.output("n"))
	}
	return h.output("n"), pid
}

func TestRewriteStat(t *testing.T) {
	rss := strconv.Itoa(statRSSPages)
	tests := []struct {
		name, in, want string
		statm          bool
	}{
		{"stat", "7 (redis-server) S 1 7 7 0 -1 4194560 1 0 0 0 312 45 6 7 20 0 4 0 100 1000000 2311 18446744073709551615 1 1 0 0 0\n",
			"7 (redis-server) S 1 7 7 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 4 0 100 1000000 " + rss + " 18446744073709551615 1 1 0 0 0\n", false},
		{"comm with parentheses and spaces", "9 (a) b (c) R 1 9 9 0 -1 0 0 0 0 0 1 2 3 4 20 0 1 0 5 4096 12 0\n",
			"9 (a) b (c) R 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 4096 " + rss + " 0\n", false},
		{"short stat left alone", "9 (x) R 1\n", "9 (x) R 1\n", false},
		{"statm", "2590 311 273 1 0 100 0\n", "2590 " + rss + " " + strconv.Itoa(statRSSPages/4) + " 1 0 100 0\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(rewriteStat([]byte(tt.in), tt.statm)); got != tt.want {
				t.Errorf("rewriteStat(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
