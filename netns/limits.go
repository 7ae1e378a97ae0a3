package netns

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Limits bound what a node's processes may take of the host, in its
// cgroup; a zero field sets no bound.
type Limits struct {
	Memory    int64 // bytes of memory (swap none): memory.max
	Pids      int   // processes and threads: pids.max
	CPUWeight int   // cpu.weight, 1 to 10000 (cgroup v2 only; see setupLimits)
}

// LimitEvents counts what a node's cgroup saw of its limits since it was
// made; callers compare two readings.
type LimitEvents struct {
	MemoryMax int // times its memory use reached its own limit (v1: 1 when it did since Reset)
	OOMKills  int // its processes killed by the OOM killer (any limit's)
	PidsMax   int // forks and clones refused at a pids limit (its own or its cluster's)
}

// Sub is e minus an earlier reading.
func (e LimitEvents) Sub(before LimitEvents) LimitEvents {
	return LimitEvents{e.MemoryMax - before.MemoryMax, e.OOMKills - before.OOMKills, e.PidsMax - before.PidsMax}
}

// v1Roots are where a host that still mounts cgroup v1 hierarchies (a
// "hybrid" host, as this project's machines are: v2 there has no memory
// or pids controller) keeps the memory and pids controllers.
var v1Roots = map[string]string{"memory": "/sys/fs/cgroup/memory", "pids": "/sys/fs/cgroup/pids"}

// cgroupRoots are every hierarchy a cluster may have made cgroups in, for
// sweeps.
var cgroupRoots = []string{DefaultCgroupRoot, "/sys/fs/cgroup", v1Roots["memory"], v1Roots["pids"]}

// limitCgroups are a cluster's cgroups for its limits: per controller,
// the directory its nodes' cgroups are made in. A controller available in
// cgroup v2 is used there (in the cluster's own cgroup tree); memory and
// pids bound to a v1 hierarchy are used there. cpu is v2 only: in a v1
// hierarchy it would also ration real-time runtime (cpu.rt_runtime_us,
// 0 in a new group), and a traced node's threads run SCHED_RR.
type limitCgroups struct {
	v2     map[string]bool   // controllers enabled for the nodes' v2 cgroups
	v1     map[string]string // controller -> the cluster's v1 directory
	parent string            // the cluster's v2 cgroup
}

// setupLimits enables or makes what the limits need under the cluster's
// cgroup parent, and sets the cluster's totals. The cpu controller is
// enabled only when a node has a weight (wantCPU): with real-time group
// scheduling, the kernel refuses it while real-time tasks (another
// campaign's nodes) sit in other cgroups, and refuses real-time tasks
// in its groups.
func (c *Cluster) setupLimits(cgRoot string, total Limits, want, wantCPU bool) error {
	lc := &limitCgroups{v2: map[string]bool{}, v1: map[string]string{}, parent: c.cgParent}
	c.limits = lc
	if !want {
		return nil
	}
	avail := map[string]bool{}
	if b, err := os.ReadFile(filepath.Join(cgRoot, "cgroup.controllers")); err == nil {
		for _, f := range strings.Fields(string(b)) {
			avail[f] = true
		}
	}
	var enable []string
	for _, ctl := range []string{"memory", "pids", "cpu"} {
		if avail[ctl] && (ctl != "cpu" || wantCPU) {
			enable = append(enable, "+"+ctl)
		}
	}
	if len(enable) > 0 {
		// Enabled from the root down to the cluster's cgroup, whose
		// children are the nodes; the root's is usually on already.
		for _, dir := range []string{cgRoot, c.cgParent} {
			if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(strings.Join(enable, " ")), 0); err != nil {
				return fmt.Errorf("enabling %s in %s: %w", strings.Join(enable, " "), dir, err)
			}
		}
		for _, e := range enable {
			lc.v2[e[1:]] = true
		}
	}
	for _, ctl := range []string{"memory", "pids"} {
		if lc.v2[ctl] {
			continue
		}
		root := v1Roots[ctl]
		var st unix.Statfs_t
		if unix.Statfs(root, &st) != nil || st.Type != unix.CGROUP_SUPER_MAGIC {
			continue
		}
		dir := filepath.Join(root, "lockstep-"+c.prefix)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return fmt.Errorf("creating cgroup %s: %w", dir, err)
		}
		lc.v1[ctl] = dir
	}
	if missing := lc.missing(total); len(missing) > 0 {
		return fmt.Errorf("this host has no cgroup controller for the limits on %s", strings.Join(missing, ", "))
	}
	return lc.set(c.cgParent, lc.v1, total)
}

// missing names the limits l sets that no controller can enforce.
func (lc *limitCgroups) missing(l Limits) []string {
	var out []string
	if l.Memory > 0 && !lc.v2["memory"] && lc.v1["memory"] == "" {
		out = append(out, "memory")
	}
	if l.Pids > 0 && !lc.v2["pids"] && lc.v1["pids"] == "" {
		out = append(out, "pids")
	}
	if l.CPUWeight > 0 && !lc.v2["cpu"] {
		out = append(out, "cpu weight (cgroup v2's cpu controller)")
	}
	return out
}

// addNode makes n's cgroups in the v1 hierarchies and sets its limits.
func (lc *limitCgroups) addNode(n *Node, l Limits) error {
	if missing := lc.missing(l); len(missing) > 0 {
		return fmt.Errorf("this host has no cgroup controller for the limits on %s", strings.Join(missing, ", "))
	}
	v1 := map[string]string{}
	for ctl, parent := range lc.v1 {
		dir := filepath.Join(parent, n.Name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return fmt.Errorf("creating cgroup %s: %w", dir, err)
		}
		v1[ctl] = dir
		n.LimitCgroups = append(n.LimitCgroups, dir)
	}
	slices.Sort(n.LimitCgroups)
	n.limitV1 = v1
	n.limitV2 = lc.v2
	return lc.set(n.CgroupDir, v1, l)
}

// set writes l into a v2 cgroup and its v1 counterparts.
func (lc *limitCgroups) set(v2dir string, v1 map[string]string, l Limits) error {
	type w struct{ dir, file, val string }
	var ws []w
	if l.Memory > 0 {
		m := strconv.FormatInt(l.Memory, 10)
		if lc.v2["memory"] {
			ws = append(ws, w{v2dir, "memory.max", m})
			if exists(filepath.Join(v2dir, "memory.swap.max")) {
				ws = append(ws, w{v2dir, "memory.swap.max", "0"})
			}
		} else {
			ws = append(ws, w{v1["memory"], "memory.limit_in_bytes", m})
			if exists(filepath.Join(v1["memory"], "memory.memsw.limit_in_bytes")) {
				// Memory and swap together: no swap beyond the limit.
				ws = append(ws, w{v1["memory"], "memory.memsw.limit_in_bytes", m})
			}
		}
	}
	if l.Pids > 0 {
		dir := v2dir
		if !lc.v2["pids"] {
			dir = v1["pids"]
		}
		ws = append(ws, w{dir, "pids.max", strconv.Itoa(l.Pids)})
	}
	if l.CPUWeight > 0 && lc.v2["cpu"] {
		ws = append(ws, w{v2dir, "cpu.weight", strconv.Itoa(l.CPUWeight)})
	}
	for _, x := range ws {
		if err := os.WriteFile(filepath.Join(x.dir, x.file), []byte(x.val), 0); err != nil {
			return fmt.Errorf("setting %s in %s: %w", x.file, x.dir, err)
		}
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// LimitEvents reads the node's limit counters (zero for a controller the
// host lacks).
func (n *Node) LimitEvents() LimitEvents {
	var e LimitEvents
	if n.limitV2["memory"] {
		kv := readKV(filepath.Join(n.CgroupDir, "memory.events"))
		e.MemoryMax, e.OOMKills = kv["max"], kv["oom_kill"]
	} else if d := n.limitV1["memory"]; d != "" {
		// v1 kernels of this day leave failcnt at 0 when the OOM killer
		// resolves the charge: the peak since Reset (resetPeaks) at the
		// limit tells instead.
		e.MemoryMax = readInt(filepath.Join(d, "memory.failcnt"))
		lim, peak := readInt(filepath.Join(d, "memory.limit_in_bytes")), readInt(filepath.Join(d, "memory.max_usage_in_bytes"))
		if e.MemoryMax == 0 && lim > 0 && peak+peakSlack >= lim {
			e.MemoryMax = 1
		}
		e.OOMKills = readKV(filepath.Join(d, "memory.oom_control"))["oom_kill"]
	}
	dir := n.CgroupDir
	if !n.limitV2["pids"] {
		dir = n.limitV1["pids"]
	}
	if dir != "" {
		e.PidsMax = readKV(filepath.Join(dir, "pids.events"))["max"]
	}
	return e
}

// peakSlack: a v1 peak within this of the limit reached it (charges come
// in batches of pages).
const peakSlack = 1 << 20

// resetPeaks starts the nodes' v1 memory peaks again (see LimitEvents),
// between trials.
func (c *Cluster) resetPeaks() {
	for _, n := range c.nodes {
		if d := n.limitV1["memory"]; d != "" {
			os.WriteFile(filepath.Join(d, "memory.max_usage_in_bytes"), []byte("0"), 0)
		}
	}
}

// readKV reads a cgroup file of "key value" lines.
func readKV(path string) map[string]int {
	out := map[string]int{}
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
			out[k] = n
		}
	}
	return out
}

func readInt(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// HostMemory is the host's memory in bytes (MemTotal).
func HostMemory() (int64, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				break
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("/proc/meminfo: no MemTotal")
}

// HostPidMax is the largest pid the host hands out (kernel.pid_max), or
// threads-max when that is lower: every process and thread of the host
// takes one.
func HostPidMax() (int, error) {
	pm := readInt("/proc/sys/kernel/pid_max")
	if pm <= 0 {
		return 0, errors.New("reading /proc/sys/kernel/pid_max")
	}
	if tm := readInt("/proc/sys/kernel/threads-max"); tm > 0 && tm < pm {
		pm = tm
	}
	return pm, nil
}

// dumpRetries bounds the retries of a netlink dump the kernel interrupted
// because the table changed meanwhile (another campaign adding or
// removing its links): the next dump usually completes.
const dumpRetries = 20

// linkList lists the host's links, again when a concurrent change
// interrupted the dump (netlink.ErrDumpInterrupted: "results may be
// incomplete or inconsistent").
func linkList() ([]netlink.Link, error) {
	return retryDump(netlink.LinkList)
}

// retryDump calls dump until it returns a dump the kernel did not
// interrupt, at most dumpRetries times.
func retryDump[T any](dump func() (T, error)) (T, error) {
	var v T
	var err error
	for range dumpRetries {
		v, err = dump()
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			return v, err
		}
		unix.Nanosleep(&unix.Timespec{Nsec: 1e6}, nil)
	}
	return v, fmt.Errorf("%w (%d attempts)", err, dumpRetries)
}
