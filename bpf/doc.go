// Package bpf owns lockstep's eBPF programs and their lifetimes: the
// per-cluster firewall that turns partitions into silent packet loss
// (cgroup_skb ingress and egress on the cluster's cgroup v2 directory),
// and, per campaign, the socket hooks that tell which connection and
// byte range each traced send and recv touched.
//
// The C sources live here and are compiled with bpf2go (`make generate`);
// the generated objects are committed so `go build` needs no clang.
package bpf
