// Package bpf owns lockstep's eBPF programs and their lifetimes: the
// per-cluster firewall that turns partitions into silent packet loss
// (cgroup_skb ingress and egress on the cluster's cgroup v2 directory),
// and, per campaign, connection tracking (Conntrack): the
// sock_send_length/sock_recv_length tracepoints (tp_btf, CO-RE) record
// each send and recv's 4-tuple and TCP sequence range for sockets of the
// campaign's network namespaces, sockops and connect4 record opens,
// closes and connects under a cgroup. Overlap matches a recv to the
// sends whose bytes it consumed. Per job, activity counters (Activity):
// sched_switch and sched_wakeup (tp_btf) count, per watched node cgroup,
// the times its tasks were switched in or woken, and the same per watched
// task, in maps lockstep reads through memory, so quiescence learns that a
// node or a thread has not run without a system call. A Kernel shares what
// the loads decode of the kernel's types.
//
// Every attachment is a BPF link held only by the lockstep process and
// nothing is pinned, so a killed lockstep leaves no program behind for
// `lockstep clean` to find.
//
// The C sources live here and are compiled with bpf2go (`make generate`);
// the generated objects are committed so `go build` needs no clang.
package bpf
