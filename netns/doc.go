// Package netns builds a trial's private network: one network namespace per
// node, a bridge and one veth pair per node, addresses from the spec's
// subnet, static neighbour entries so the first packet is not lost to ARP,
// links waited for until the kernel has them up (nor is it lost to a
// device without its queue), a hosts file per node, and a cgroup v2 directory per node for the eBPF
// hooks. It holds package bpf's firewall, which the cuts of the network
// write through (Cluster.Firewall, netcut.Set), and sweeps what a killed
// run left behind.
//
// Every object it creates is named with a per-run prefix recorded with the
// creating process's pid, so Sweep can tell leftovers from a live run.
//
// It must not know about scheduling or tracing.
package netns
