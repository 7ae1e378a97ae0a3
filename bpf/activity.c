//go:build ignore

// SPDX-License-Identifier: GPL-2.0
// Activity counts, per watched cgroup v2 directory, each time one of its
// tasks is woken or switched onto a CPU, and the same per watched task of
// such a cgroup. A count that did not move says that none of those tasks
// ran or was woken in between, which is what the tracer's quiescence asks
// of a node and of a thread: reading it costs a load from a mapped page,
// where the cgroup's cpu.stat made the kernel flush every CPU's statistics
// and a thread's /proc stat file is a system call.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

// Only the fields used, resolved against the running kernel by CO-RE.
struct kernfs_node {
	__u64 id;
} __attribute__((preserve_access_index));

struct cgroup {
	struct kernfs_node *kn;
	int level;
	struct cgroup *ancestors[];
} __attribute__((preserve_access_index));

struct css_set {
	struct cgroup *dfl_cgrp;
} __attribute__((preserve_access_index));

struct task_struct {
	int pid;
	struct css_set *cgroups;
} __attribute__((preserve_access_index));

#define SLOTS 4096
// How many levels above a task's own cgroup are looked at: a node's
// processes may sit in cgroups below the node's.
#define DEPTH 8

// Watched cgroup id (kernfs id, the directory's inode) → counter slot.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SLOTS);
	__type(key, __u64);
	__type(value, __u32);
} watched SEC(".maps");

// The counters, mapped into lockstep's memory.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");

#define TASK_SLOTS 65536

// Watched task (the kernel's thread id) → counter slot: a task of a
// watched cgroup is counted on its own too, when it is watched.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TASK_SLOTS);
	__type(key, __u32);
	__type(value, __u32);
} tasks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, TASK_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} task_counts SEC(".maps");

// The lowest level of a watched cgroup (set by user space as it watches;
// -1: none): a task whose cgroup is above it is nobody's, and costs a few
// loads.
volatile __s32 min_level = -1;

static __always_inline void count_task(struct task_struct *t)
{
	int lowest = min_level;
	if (lowest < 0)
		return;
	// tp_btf hands over trusted pointers: plain loads (the verifier
	// guards them), no helper calls, on every switch of every CPU.
	struct cgroup *cg = t->cgroups->dfl_cgrp;
	if (!cg)
		return;
	int level = cg->level;
	if (level < lowest)
		return;
	// Mostly a node's task sits in the node's own cgroup.
	__u64 id = cg->kn->id;
	__u32 *slot = bpf_map_lookup_elem(&watched, &id);
	// Else ancestors[i] is its cgroup's ancestor at level i: look up to
	// the lowest level watched. (The cgroup's address is read again as a
	// plain number: the verifier allows no indexing from an RCU pointer.)
	unsigned long base = 0;
	if (!slot && level > lowest && !bpf_probe_read_kernel(&base, sizeof(base), &t->cgroups->dfl_cgrp))
		base += bpf_core_field_offset(struct cgroup, ancestors);
	for (int d = 1; !slot && base && d < DEPTH; d++) {
		int i = level - d;
		if (i < lowest)
			return;
		struct cgroup *a = 0;
		if (bpf_probe_read_kernel(&a, sizeof(a), (void *)(base + (unsigned long)i * sizeof(a))) || !a)
			return;
		id = BPF_CORE_READ(a, kn, id);
		slot = bpf_map_lookup_elem(&watched, &id);
	}
	if (!slot)
		return;
	__u64 *c = bpf_map_lookup_elem(&counts, slot);
	if (c)
		__sync_fetch_and_add(c, 1);
	__u32 tid = t->pid;
	__u32 *ts = bpf_map_lookup_elem(&tasks, &tid);
	if (!ts)
		return;
	c = bpf_map_lookup_elem(&task_counts, ts);
	if (c)
		__sync_fetch_and_add(c, 1);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, _Bool preempt, struct task_struct *prev, struct task_struct *next)
{
	count_task(next);
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(on_wakeup, struct task_struct *p)
{
	count_task(p);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(on_wakeup_new, struct task_struct *p)
{
	count_task(p);
	return 0;
}

char __license[] SEC("license") = "GPL";
