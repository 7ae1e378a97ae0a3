package engine

import (
	"log/slog"

	"github.com/lockstep-dev/lockstep/bpf"
	"github.com/lockstep-dev/lockstep/tracer"
)

// newActivity loads the job's activity counters (bpf.Activity), which
// quiescence reads instead of each node's cpu.stat; nil (with a debug
// line) where the kernel or the privileges do not allow it.
func newActivity(log *slog.Logger, kernel *bpf.Kernel) *bpf.Activity {
	a, err := bpf.NewActivity(kernel)
	if err != nil {
		log.Debug("cgroup activity counters unavailable; reading cpu.stat", "err", err)
		return nil
	}
	return a
}

// watchCgroup is the tracer's view of the job's counters; nil without them.
func (j *job) watchCgroup() tracer.WatchCgroup {
	if j.activity == nil {
		return nil
	}
	return func(dir string) (func() uint64, func(), error) {
		c, err := j.activity.Watch(dir)
		if err != nil {
			return nil, nil, err
		}
		return c.Count, func() { c.Close() }, nil
	}
}

// watchThread is the tracer's view of the job's thread counters; nil
// without them.
func (j *job) watchThread() tracer.WatchThread {
	if j.activity == nil {
		return nil
	}
	return func(tid int) (func() uint64, func(), error) {
		c, err := j.activity.WatchTask(tid)
		if err != nil {
			return nil, nil, err
		}
		return c.Count, func() { c.Close() }, nil
	}
}

// nodeCounts watches the nodes' cgroups for the trial's properties
// (properties.ranSince); the function returned stops it. Nothing without
// the counters, or for a node whose cgroup cannot be watched.
func (j *job) nodeCounts() (map[string]func() uint64, func()) {
	if j.activity == nil {
		return nil, func() {}
	}
	counts := map[string]func() uint64{}
	var watched []*bpf.ActivityCounter
	for _, n := range j.spec.Nodes {
		c, err := j.activity.Watch(j.cluster.Node(n.Name).CgroupDir)
		if err != nil {
			j.log.Debug("node's output read at every decision", "node", n.Name, "err", err)
			continue
		}
		counts[n.Name] = c.Count
		watched = append(watched, c)
	}
	return counts, func() {
		for _, c := range watched {
			c.Close()
		}
	}
}

// countOutputs gives the trial's properties the nodes' counts (nodeCounts);
// the function returned stops them.
func (t *Trial) countOutputs() func() {
	if t.props == nil {
		return func() {}
	}
	counts, stop := t.j.nodeCounts()
	t.props.counts = counts
	return stop
}
