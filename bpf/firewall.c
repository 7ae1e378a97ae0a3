//go:build ignore

// SPDX-License-Identifier: GPL-2.0
// Partition firewall: drops IPv4 packets whose (source, destination) pair
// is in the blocked map, on both egress and ingress of the cgroup it is
// attached to. Healing is a map delete; nothing is restarted.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

struct pair {
	__u32 src; // network byte order
	__u32 dst;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct pair);
	__type(value, __u8);
} blocked SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} dropped SEC(".maps");

static __always_inline int filter(struct __sk_buff *skb)
{
	struct iphdr iph;
	struct pair p;

	if (skb->protocol != bpf_htons(ETH_P_IP))
		return 1;
	if (bpf_skb_load_bytes(skb, 0, &iph, sizeof(iph)) < 0)
		return 1;
	p.src = iph.saddr;
	p.dst = iph.daddr;
	if (!bpf_map_lookup_elem(&blocked, &p))
		return 1;
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&dropped, &zero);
	if (n)
		__sync_fetch_and_add(n, 1);
	return 0;
}

SEC("cgroup_skb/egress")
int fw_egress(struct __sk_buff *skb) { return filter(skb); }

SEC("cgroup_skb/ingress")
int fw_ingress(struct __sk_buff *skb) { return filter(skb); }

char _license[] SEC("license") = "GPL";
