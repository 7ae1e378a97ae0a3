//go:build ignore

// SPDX-License-Identifier: GPL-2.0
// Partition firewall: drops IPv4 packets whose (source, destination) pair
// is in the blocked map, on both egress and ingress of the cgroup it is
// attached to. Healing is a map delete; nothing is restarted.
//
// The map's value says what of a pair's packets to drop: everything (a
// partition), the messages only (a one-way cut: TCP segments carrying
// bytes, a SYN or a FIN, and every non-TCP packet, while TCP's pure
// acknowledgements and resets pass), or the handshakes only (the way back
// of a one-way cut: no new connection opens across it).
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/tcp.h>
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

enum mode {
	DROP_ALL = 1,
	DROP_MESSAGES = 2,
	DROP_HANDSHAKES = 3,
};

// spares says whether a packet of a pair blocked in mode m passes.
static __always_inline int spares(struct __sk_buff *skb, struct iphdr *iph, __u8 m)
{
	struct tcphdr th;
	__u32 ihl = iph->ihl * 4;

	if (m == DROP_ALL)
		return 0;
	if (iph->protocol != IPPROTO_TCP)
		return m == DROP_HANDSHAKES;
	if (bpf_skb_load_bytes(skb, ihl, &th, sizeof(th)) < 0)
		return 0;
	if (m == DROP_HANDSHAKES)
		return !th.syn;
	if (th.syn || th.fin)
		return 0;
	if (th.rst)
		return 1;
	return bpf_ntohs(iph->tot_len) <= ihl + th.doff * 4;
}

static __always_inline int filter(struct __sk_buff *skb)
{
	struct iphdr iph;
	struct pair p;
	__u8 *m;

	if (skb->protocol != bpf_htons(ETH_P_IP))
		return 1;
	if (bpf_skb_load_bytes(skb, 0, &iph, sizeof(iph)) < 0)
		return 1;
	p.src = iph.saddr;
	p.dst = iph.daddr;
	m = bpf_map_lookup_elem(&blocked, &p);
	if (!m || spares(skb, &iph, *m))
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
