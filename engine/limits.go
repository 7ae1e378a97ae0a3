package engine

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/netns"
	"github.com/lockstep-dev/lockstep/spec"
)

// Host shares and floors of the default limits (docs/spec.md, "Resource
// limits"). A campaign's nodes together may use 3/4 of the host's memory
// and half its pids, split evenly between its jobs, so that whatever they
// do the host keeps room for itself and for lockstep; within that, each
// node gets an even share of its job's, or the floor when that is more,
// so that one JVM among many still starts.
const (
	hostMemoryShare   = 0.75
	hostPidsShare     = 0.5
	nodeMemoryFloor   = 1 << 30
	nodePidsFloor     = 1024
	defaultOutputCap  = 64 << 20
	tmpfsMemoryShare  = 4 // a node's tmpfs default: its memory limit over this
	tmpMemoryShare    = 2 // a node's {{tmp}} default: its memory limit over this
	outputCheckPeriod = 50 * time.Millisecond
)

// nodeLimit is one node's limits, resolved.
type nodeLimit struct {
	cg                 netns.Limits
	tmpfs, tmp, output int64
	// memorySet, pidsSet: the spec chose them (a text names the field).
	memorySet, pidsSet bool
}

// campaignLimits are the limits of every node of a campaign and what its
// jobs' clusters may use together.
type campaignLimits struct {
	total netns.Limits // per job's cluster
	nodes map[string]nodeLimit
}

// hostResources is what the defaults are derived from.
type hostResources struct {
	memory int64
	pidMax int
}

func readHost() (hostResources, error) {
	mem, err := netns.HostMemory()
	if err != nil {
		return hostResources{}, err
	}
	pm, err := netns.HostPidMax()
	if err != nil {
		return hostResources{}, err
	}
	return hostResources{memory: mem, pidMax: pm}, nil
}

// resolveLimits fills the spec's limits with defaults derived from host
// for a campaign of jobs jobs.
func resolveLimits(sp *spec.Spec, host hostResources, jobs int) *campaignLimits {
	jobs = max(jobs, 1)
	n := int64(max(len(sp.Nodes), 1))
	memShare := int64(float64(host.memory)*hostMemoryShare) / int64(jobs)
	pidShare := int(float64(host.pidMax)*hostPidsShare) / jobs
	cl := &campaignLimits{
		total: netns.Limits{Memory: memShare, Pids: pidShare},
		nodes: map[string]nodeLimit{},
	}
	defMem := min(memShare, max(memShare/n, nodeMemoryFloor))
	defPids := min(pidShare, max(pidShare/int(n), nodePidsFloor))
	for _, node := range sp.Nodes {
		l := sp.NodeLimits(node.Name)
		nl := nodeLimit{
			cg:        netns.Limits{Memory: l.Memory, Pids: l.Pids, CPUWeight: l.CPUWeight},
			tmpfs:     l.Tmpfs,
			tmp:       l.Tmp,
			output:    l.Output,
			memorySet: l.Memory != 0,
			pidsSet:   l.Pids != 0,
		}
		if nl.cg.Memory == 0 {
			nl.cg.Memory = defMem
		}
		if nl.cg.Pids == 0 {
			nl.cg.Pids = defPids
		}
		if nl.tmpfs == 0 {
			nl.tmpfs = max(nl.cg.Memory/tmpfsMemoryShare, 1<<20)
		}
		if nl.tmp == 0 {
			nl.tmp = max(nl.cg.Memory/tmpMemoryShare, 1<<20)
		}
		if nl.output == 0 {
			nl.output = defaultOutputCap
		}
		cl.nodes[node.Name] = nl
	}
	return cl
}

// tmpfsWatch names the nodes whose tmpfs mounts a trial watches, with
// their cgroup and size.
func (j *job) tmpfsWatch() map[string]tmpfsOf {
	out := map[string]tmpfsOf{}
	for _, n := range j.spec.Nodes {
		if cn := j.cluster.Node(n.Name); cn != nil && cn.CgroupDir != "" {
			out[n.Name] = tmpfsOf{cgroup: cn.CgroupDir, size: j.limits.nodes[n.Name].tmpfs}
		}
	}
	return out
}

// tmpSizes are the nodes' {{tmp}} sizes, by node.
func (j *job) tmpSizes() map[string]int64 {
	out := map[string]int64{}
	for name, l := range j.limits.nodes {
		out[name] = l.tmp
	}
	return out
}

// netnsLimits are the per-node cgroup limits for netns.Config.
func (cl *campaignLimits) netnsLimits() map[string]netns.Limits {
	out := map[string]netns.Limits{}
	for name, l := range cl.nodes {
		out[name] = l.cg
	}
	return out
}

// limitEvents reads every node's limit counters.
func (j *job) limitEvents() map[string]netns.LimitEvents {
	out := map[string]netns.LimitEvents{}
	for _, n := range j.spec.Nodes {
		if cn := j.cluster.Node(n.Name); cn != nil {
			out[n.Name] = cn.LimitEvents()
		}
	}
	return out
}

// limitsSince are the limit events of node since the trial began.
func (j *job) limitsSince(base map[string]netns.LimitEvents, node string) netns.LimitEvents {
	cn := j.cluster.Node(node)
	if cn == nil {
		return netns.LimitEvents{}
	}
	return cn.LimitEvents().Sub(base[node])
}

// oomText says which memory limit the OOM killer enforced on a node: its
// own when its use reached it, else the one its trial's nodes share.
func (j *job) oomText(node string, ev netns.LimitEvents) string {
	l := j.limits.nodes[node]
	if ev.MemoryMax > 0 || j.limits.total.Memory == 0 {
		field := "limits.node.memory, by default an even share of the host's memory"
		if l.memorySet {
			field = "limits.node.memory"
		}
		return fmt.Sprintf("at its %s memory limit (%s)", spec.FormatSize(l.cg.Memory), field)
	}
	split := ""
	if j.jobs > 1 {
		split = fmt.Sprintf(", split between %d jobs", j.jobs)
	}
	return fmt.Sprintf("at the %s memory limit the trial's nodes share (3/4 of the host's memory%s)", spec.FormatSize(j.limits.total.Memory), split)
}

// oomTold is the node whose OOM kill an outcome already names.
func oomTold(o Outcome) map[string]bool {
	return map[string]bool{o.Node: strings.Contains(o.Detail, " was killed by the OOM killer ")}
}

// exitText words a node's first process's end as the failure of a
// client or server: an OOM kill says so, with the limit.
func (j *job) exitText(role spec.Role, e exitDesc, ev netns.LimitEvents) string {
	who := "node"
	if role == spec.RoleClient {
		who = "client"
	}
	if e.signal == syscall.SIGKILL && ev.OOMKills > 0 {
		return fmt.Sprintf("%s %s was killed by the OOM killer %s", who, e.lpid, j.oomText(e.node, ev))
	}
	return fmt.Sprintf("%s %s", who, e.text)
}

// exitDesc is what exitText needs of a tracer.Exit or a native exit.
type exitDesc struct {
	node, lpid, text string
	signal           syscall.Signal
}

// limitNotes are sentences naming the limits each node reached during
// the trial (memory, pids, output, tmpfs), for its outcome.
//
// told are nodes whose OOM kill the outcome already names (exitText).
func (j *job) limitNotes(base map[string]netns.LimitEvents, out *outputCaps, told map[string]bool) []string {
	var notes []string
	for _, n := range j.spec.Nodes {
		ev := j.limitsSince(base, n.Name)
		l := j.limits.nodes[n.Name]
		switch {
		case ev.OOMKills == 1 && told[n.Name]:
		case ev.OOMKills > 0:
			notes = append(notes, fmt.Sprintf("the OOM killer killed %d of node %s's processes %s", ev.OOMKills, n.Name, j.oomText(n.Name, ev)))
		case ev.MemoryMax > 0:
			// The kernel reclaimed enough (page cache) to stay under it.
			notes = append(notes, fmt.Sprintf("node %s's memory use reached its %s limit (limits.node.memory)", n.Name, spec.FormatSize(l.cg.Memory)))
		}
		if ev.PidsMax > 0 {
			times := ""
			if ev.PidsMax > 1 {
				times = fmt.Sprintf(" %d times", ev.PidsMax)
			}
			notes = append(notes, fmt.Sprintf("node %s reached its limit of %d processes and threads (limits.node.pids)%s", n.Name, l.cg.Pids, times))
		}
		for _, f := range out.truncated(n.Name) {
			notes = append(notes, fmt.Sprintf("node %s's %s passed its %s output limit and was cut there (limits.node.output)", n.Name, f, spec.FormatSize(l.output)))
		}
		for _, m := range out.fullTmpfs(n.Name) {
			if m == tmpMount {
				notes = append(notes, fmt.Sprintf("node %s's %s was full at its %s limit (limits.node.tmp)", n.Name, m, spec.FormatSize(l.tmp)))
				continue
			}
			notes = append(notes, fmt.Sprintf("node %s's %s was full at its %s limit (limits.node.tmpfs)", n.Name, m, spec.FormatSize(l.tmpfs)))
		}
	}
	return notes
}

// withNotes appends limit notes to an outcome's detail, as sentences.
func withNotes(detail string, notes []string) string {
	if len(notes) == 0 {
		return detail
	}
	s := strings.Join(notes, "; ")
	if detail == "" {
		return capitalize(s)
	}
	return detail + "; " + s
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// outputCaps keeps each node's stdout and stderr files in the trial's
// directory at most their cap: the files are opened O_APPEND, so cutting
// one back (every outputCheckPeriod, and once more when the nodes are
// gone) makes the node's next write land at the cap again, and the file
// never grows by more than what a node writes in one period. The node's
// descriptors stay files, so writing to them costs and behaves the same.
// It cuts and appends through lockstep's own descriptors of the files,
// never their names: a node that puts a link in a file's place (the
// trial's directory is its to write) moves no write of lockstep's.
//
// The same watch notes which of the nodes' own tmpfs mounts it finds full
// (pinTmpfs, checkTmpfs): a node writing there gets ENOSPC, and its
// outcome says why.
type outputCaps struct {
	mu    sync.Mutex
	files map[*os.File]capped
	stop  chan struct{}
	done  chan struct{}
	// tmpfs: the nodes whose mounts to watch, by node, with their size
	// (nil: none, as natively, where a node's /tmp is the host's);
	// full: the mounts found full, by node.
	tmpfs map[string]tmpfsOf
	pins  map[tmpfsPin]int // open descriptors of the mounts
	full  map[string][]string
}

// tmpfsOf is how to look at one node's tmpfs mounts.
type tmpfsOf struct {
	cgroup string // the node's cgroup v2 directory (its processes)
	size   int64
}

// nodeTmpfs are the node's own tmpfs mounts that limits.node.tmpfs sizes.
func nodeTmpfs() []string { return []string{"/tmp", "/var/tmp", "/dev/shm"} }

type capped struct {
	node, name string
	cap        int64
	cut        bool
}

// newOutputCaps starts the watch; tmpfs names the nodes whose tmpfs
// mounts it checks (nil: none).
func newOutputCaps(tmpfs map[string]tmpfsOf) *outputCaps {
	oc := &outputCaps{files: map[*os.File]capped{}, stop: make(chan struct{}), done: make(chan struct{}),
		tmpfs: tmpfs, pins: map[tmpfsPin]int{}, full: map[string][]string{}}
	go oc.watch()
	return oc
}

// pinTmpfs opens the node's own tmpfs mounts through /proc/PID/root of
// one of its processes (its mount namespace) and keeps them open: a node
// killed by the OOM killer takes its mounts with it, and the open
// descriptors keep them for checkTmpfs. A mount counts only if it is the
// node's own, a tmpfs of the node's size (/tmp is an overlay on the
// host's whose writes land in the node's scratch tmpfs: its statfs is
// the scratch's); a mount already pinned is kept once.
func (oc *outputCaps) pinTmpfs(node string, pid int) {
	tf, ok := oc.tmpfs[node]
	if !ok || pid <= 0 {
		return
	}
	page := int64(os.Getpagesize())
	for _, m := range nodeTmpfs() {
		fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/root"+m, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		var st unix.Statfs_t
		var sst unix.Stat_t
		if unix.Fstatfs(fd, &st) != nil || st.Type != unix.TMPFS_MAGIC && st.Type != unix.OVERLAYFS_SUPER_MAGIC ||
			int64(st.Blocks)*st.Bsize != (tf.size+page-1)/page*page || unix.Fstat(fd, &sst) != nil {
			unix.Close(fd)
			continue
		}
		key := tmpfsPin{node: node, mount: m, dev: sst.Dev}
		oc.mu.Lock()
		if _, ok := oc.pins[key]; ok {
			unix.Close(fd)
		} else {
			oc.pins[key] = fd
		}
		oc.mu.Unlock()
	}
}

// tmpfsPin is one pinned mount of a node (a restarted node has new ones).
type tmpfsPin struct {
	node, mount string
	dev         uint64
}

// pinRunning pins the mounts of every node that has a process.
func (oc *outputCaps) pinRunning() {
	for node, tf := range oc.tmpfs {
		if pid, err := strconv.Atoi(firstProc(tf.cgroup)); err == nil {
			oc.pinTmpfs(node, pid)
		}
	}
}

// checkTmpfs notes the pinned mounts that are full: no block or no inode
// left.
func (oc *outputCaps) checkTmpfs() {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	for key, fd := range oc.pins {
		var st unix.Statfs_t
		if unix.Fstatfs(fd, &st) == nil && (st.Bavail == 0 || st.Files > 0 && st.Ffree == 0) &&
			!slices.Contains(oc.full[key.node], key.mount) {
			oc.full[key.node] = append(oc.full[key.node], key.mount)
		}
	}
}

// unpinTmpfs lets the nodes' mounts go.
func (oc *outputCaps) unpinTmpfs() {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	for key, fd := range oc.pins {
		unix.Close(fd)
		delete(oc.pins, key)
	}
}

// pinTmp watches node's {{tmp}} (nodeTmps), through a copy of its
// mount's descriptor fd.
func (oc *outputCaps) pinTmp(node string, fd int) {
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return
	}
	oc.mu.Lock()
	defer oc.mu.Unlock()
	oc.pins[tmpfsPin{node: node, mount: tmpMount}] = dup
}

// fullTmpfs names node's tmpfs mounts that were seen full, in
// nodeTmpfs's order, then its {{tmp}}.
func (oc *outputCaps) fullTmpfs(node string) []string {
	if oc == nil {
		return nil
	}
	oc.mu.Lock()
	defer oc.mu.Unlock()
	var out []string
	for _, m := range append(nodeTmpfs(), tmpMount) {
		if slices.Contains(oc.full[node], m) {
			out = append(out, m)
		}
	}
	return out
}

// firstProc is the first process listed in a cgroup ("" when none).
func firstProc(cgroup string) string {
	f, err := os.Open(cgroup + "/cgroup.procs")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if sc.Scan() {
		return strings.TrimSpace(sc.Text())
	}
	return ""
}

// add caps a node's output file f (name: "stdout" or "stderr"), which
// the caller keeps open until close.
func (oc *outputCaps) add(f *os.File, node, name string, cap int64) {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	if _, ok := oc.files[f]; !ok {
		oc.files[f] = capped{node: node, name: name, cap: cap}
	}
}

func (oc *outputCaps) watch() {
	defer close(oc.done)
	tick := time.NewTicker(outputCheckPeriod)
	defer tick.Stop()
	for {
		select {
		case <-oc.stop:
			return
		case <-tick.C:
			oc.trim(false)
			oc.pinRunning()
			oc.checkTmpfs()
		}
	}
}

// trim cuts every file past its cap back to it; at the end it also
// notes the cut at the end of the file.
func (oc *outputCaps) trim(final bool) {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	for f, c := range oc.files {
		fi, err := f.Stat()
		if err != nil || fi.Size() <= c.cap {
			continue
		}
		if f.Truncate(c.cap) == nil {
			c.cut = true
			oc.files[f] = c
		}
	}
	if !final {
		return
	}
	for f, c := range oc.files {
		if c.cut {
			// f is O_APPEND: the line goes at the end.
			fmt.Fprintf(f, "\n[lockstep: node %s's %s was cut here at its %s output limit (limits.node.output)]\n", c.node, c.name, spec.FormatSize(c.cap))
		}
	}
}

// close stops the watch and trims once more: call it once the nodes'
// processes are gone.
func (oc *outputCaps) close() {
	if oc == nil {
		return
	}
	select {
	case <-oc.stop:
		return
	default:
	}
	close(oc.stop)
	<-oc.done
	oc.trim(true)
	oc.checkTmpfs()
	oc.unpinTmpfs()
}

// truncated names node's files that were cut ("stdout", "stderr").
func (oc *outputCaps) truncated(node string) []string {
	if oc == nil {
		return nil
	}
	oc.mu.Lock()
	defer oc.mu.Unlock()
	var out []string
	for _, c := range oc.files {
		if c.node == node && c.cut {
			out = append(out, c.name)
		}
	}
	slices.Sort(out)
	return out
}

// erofs is how C libraries word EROFS, the error a node's write outside
// its trial's directory gets.
const erofs = "Read-only file system"

// readOnlyNote says, for a node's or a client's exit, that its last
// output names a write the sandbox refused: a program that writes where a
// package puts its data (/var/lib, /etc) fails so in every trial, which is
// the spec's to change, not a bug of the system.
func readOnlyNote(res *TrialResult) string {
	o := res.Outcome
	if (o.Kind != NodeCrashed && o.Kind != ClientFailed) || o.Node == "" {
		return ""
	}
	for _, ext := range []string{".err", ".out"} {
		if bytes.Contains(OutputTail(filepath.Join(res.Dir, o.Node+ext), 4096), []byte(erofs)) {
			return fmt.Sprintf("its output says %q: a node sees the host's files read-only, and writes below {{tmp}} or {{trialdir}} (docs/spec.md, the sandbox)", erofs)
		}
	}
	return ""
}

// OutputTail is the last n bytes of a node's output file (or any file),
// nil when it cannot be read: what a failure's last lines are read from.
func OutputTail(path string, n int64) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		f.Seek(st.Size()-n, io.SeekStart)
	}
	b, _ := io.ReadAll(io.LimitReader(f, n))
	return b
}
