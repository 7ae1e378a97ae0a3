//go:build ignore

// SPDX-License-Identifier: GPL-2.0
// Connection tracking for lockstep: for every send and recv on a socket of
// a watched network namespace, the connection's 4-tuple and the byte range
// of the stream it wrote or consumed (TCP sequence numbers, which both ends
// share); plus connects (cgroup/connect4) and establishment and close
// (sockops) with the initial sequence numbers, so a range becomes a stream
// offset. Events go to one ring buffer; user space matches them.
#include <linux/bpf.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

// Only the fields used, resolved against the running kernel by CO-RE:
// no vmlinux.h, and offsets follow whatever kernel loads this.
struct ns_common {
	unsigned int inum;
} __attribute__((preserve_access_index));

struct net {
	struct ns_common ns;
} __attribute__((preserve_access_index));

typedef struct {
	struct net *net;
} possible_net_t;

struct sock_common {
	__be32 skc_daddr;
	__be32 skc_rcv_saddr;
	__be16 skc_dport;
	__u16 skc_num;
	unsigned short skc_family;
	possible_net_t skc_net;
	unsigned long skc_flags; // the sock's flags in newer kernels (sk_flags in older ones)
} __attribute__((preserve_access_index));

struct sock {
	struct sock_common __sk_common;
	__u16 sk_protocol;
	__u8 sk_shutdown;
	unsigned long sk_flags;
} __attribute__((preserve_access_index));

// The socket's local port as the connection had it: a reset (tcp_done)
// releases the bound port and zeroes skc_num, while the data queued before
// it is still read; inet_sport keeps the port.
struct inet_sock {
	__be16 inet_sport;
} __attribute__((preserve_access_index));

struct tcp_sock {
	__u32 write_seq;
	__u32 copied_seq;
	__u32 rcv_nxt;
} __attribute__((preserve_access_index));

#define AF_INET 2
#define AF_INET6 10
#define MSG_PEEK 2
#define TCP_CLOSE 7
#define SOCK_DONE 1 // enum sock_flags: set by tcp_fin alone, not by a reset

// sock_flags reads the socket's flags where the running kernel keeps them.
static __always_inline unsigned long sock_flags(struct sock *sk)
{
	if (bpf_core_field_exists(sk->__sk_common.skc_flags))
		return BPF_CORE_READ(sk, __sk_common.skc_flags);
	return BPF_CORE_READ(sk, sk_flags);
}

enum kind {
	EV_SEND = 1,
	EV_RECV = 2,
	EV_CONNECT = 3,
	EV_ESTABLISHED = 4, // active open
	EV_ACCEPTED = 5,    // passive open
	EV_CLOSE = 6,
};

struct event {
	__u64 cgroup;
	__u32 pid;
	__u32 tid;
	__u32 netns;
	__u32 saddr; // network byte order
	__u32 daddr;
	__u16 sport; // host byte order
	__u16 dport;
	__u32 seq; // first byte of the range; ISN for EV_ESTABLISHED/EV_ACCEPTED
	__u32 ack; // the peer's ISN for EV_ESTABLISHED/EV_ACCEPTED
	__s32 len;
	__u8 kind;
	__u8 proto;
	__u16 pad;
};

// Keeps struct event in the BTF so bpf2go generates its Go twin.
const struct event *unused_event __attribute__((unused));

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} events SEC(".maps");

// The campaign's network namespaces (inode numbers). Filtering by the
// socket's namespace, not by the current task, also catches the bytes
// lockstep itself writes into a tracee's socket when it delivers.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u8);
} netns SEC(".maps");

// Lost events (ring buffer full): user space must know its view is partial.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

static __always_inline void count_lost(void)
{
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(&lost, &k);
	if (v)
		__sync_fetch_and_add(v, 1);
}

// lockstep's PID namespace, the device and inode of its /proc/self/ns/pid,
// set at load (0: the kernel's own numbering). A send or recv records its
// task's ids as that namespace numbers them: lockstep tells its own writes
// (the deliveries) by its pid, and in a container its pid is not the
// kernel's.
volatile const __u64 pidns_dev = 0;
volatile const __u64 pidns_ino = 0;

// set_ids records the current task's process and thread ids, in lockstep's
// PID namespace when one is set (0 for a task outside it).
static __always_inline void set_ids(struct event *e)
{
	__u64 id = bpf_get_current_pid_tgid();
	e->pid = id >> 32;
	e->tid = (__u32)id;
	if (!pidns_ino)
		return;
	struct bpf_pidns_info ns = {};
	if (bpf_get_ns_current_pid_tgid(pidns_dev, pidns_ino, &ns, sizeof(ns))) {
		e->pid = 0;
		e->tid = 0;
		return;
	}
	e->pid = ns.tgid;
	e->tid = ns.pid;
}

static __always_inline int on_msg(struct sock *sk, int ret, int flags, __u8 kind)
{
	if (ret <= 0 || !sk)
		return 0;
	if (kind == EV_RECV && (flags & MSG_PEEK))
		return 0; // a peek consumes nothing
	// IPv4, and dual-stack IPv6 sockets carrying IPv4 (Go and Java listen
	// that way): the kernel keeps the IPv4 ends in the same fields.
	unsigned short family = BPF_CORE_READ(sk, __sk_common.skc_family);
	if (family != AF_INET && family != AF_INET6)
		return 0;
	__u32 ns = BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum);
	if (!bpf_map_lookup_elem(&netns, &ns))
		return 0;
	__u8 proto = BPF_CORE_READ(sk, sk_protocol);
	if (proto != IPPROTO_TCP && proto != IPPROTO_UDP)
		return 0;
	struct event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_lost();
		return 0;
	}
	e->cgroup = bpf_get_current_cgroup_id();
	set_ids(e);
	e->netns = ns;
	e->saddr = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
	e->daddr = BPF_CORE_READ(sk, __sk_common.skc_daddr);
	e->sport = __builtin_bswap16(BPF_CORE_READ((struct inet_sock *)sk, inet_sport));
	e->dport = __builtin_bswap16(BPF_CORE_READ(sk, __sk_common.skc_dport));
	e->seq = 0;
	e->ack = 0;
	if (proto == IPPROTO_TCP) {
		struct tcp_sock *tp = (struct tcp_sock *)sk;
		// The tracepoint fires after the call: the pointers already moved.
		if (kind == EV_SEND) {
			e->seq = BPF_CORE_READ(tp, write_seq) - ret;
		} else {
			__u32 copied = BPF_CORE_READ(tp, copied_seq);
			e->seq = copied - ret;
			// A read that reaches a received FIN consumes its sequence
			// number too: the data ended one earlier. A reset also shuts
			// reading down but puts nothing in sequence space, so the
			// FIN is told by the flag only tcp_fin sets.
			if ((sock_flags(sk) & (1UL << SOCK_DONE)) && copied == BPF_CORE_READ(tp, rcv_nxt))
				e->seq--;
		}
	}
	e->len = ret;
	e->kind = kind;
	e->proto = proto;
	e->pad = 0;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(on_send, struct sock *sk, int ret, int flags)
{
	return on_msg(sk, ret, flags, EV_SEND);
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(on_recv, struct sock *sk, int ret, int flags)
{
	return on_msg(sk, ret, flags, EV_RECV);
}

static __always_inline struct event *begin(__u8 kind)
{
	struct event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_lost();
		return 0;
	}
	__u64 id = bpf_get_current_pid_tgid();
	e->cgroup = bpf_get_current_cgroup_id();
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->netns = 0;
	e->seq = 0;
	e->ack = 0;
	e->len = 0;
	e->kind = kind;
	e->proto = IPPROTO_TCP;
	e->pad = 0;
	return e;
}

// connect4 runs in the connecting task, in whatever namespace: the hook
// sits on the cluster's cgroup, so only the campaign's processes reach it.
SEC("cgroup/connect4")
int on_connect4(struct bpf_sock_addr *ctx)
{
	struct event *e = begin(EV_CONNECT);
	if (!e)
		return 1;
	e->saddr = 0;
	e->sport = 0;
	e->daddr = ctx->user_ip4;
	e->dport = __builtin_bswap16((__u16)ctx->user_port);
	e->proto = ctx->protocol;
	bpf_ringbuf_submit(e, 0);
	return 1;
}

SEC("sockops")
int on_sockops(struct bpf_sock_ops *ops)
{
	__u8 kind;
	switch (ops->op) {
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
		kind = EV_ESTABLISHED;
		break;
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		kind = EV_ACCEPTED;
		break;
	case BPF_SOCK_OPS_STATE_CB:
		if (ops->args[1] != TCP_CLOSE)
			return 1;
		kind = EV_CLOSE;
		break;
	default:
		return 1;
	}
	if (kind != EV_CLOSE)
		bpf_sock_ops_cb_flags_set(ops, BPF_SOCK_OPS_STATE_CB_FLAG);
	struct event *e = begin(kind);
	if (!e)
		return 1;
	e->saddr = ops->local_ip4;
	e->daddr = ops->remote_ip4;
	e->sport = ops->local_port;
	e->dport = __builtin_bswap16((__u16)(ops->remote_port >> 16));
	if (kind != EV_CLOSE) {
		// The next byte to send/receive is one past the ISN.
		e->seq = ops->snd_nxt - 1;
		e->ack = ops->rcv_nxt - 1;
	}
	bpf_ringbuf_submit(e, 0);
	return 1;
}

char __license[] SEC("license") = "GPL";
