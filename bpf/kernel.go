package bpf

import (
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
)

// Kernel keeps what loading lockstep's programs decodes of the running
// kernel's types (its BTF, for CO-RE and the tracepoints' arguments): a
// campaign that loads connection tracking and its jobs' activity counters
// decodes them once (each load decoded them anew, 4 MB each). Safe for
// concurrent use; nil gives each load a cache of its own.
type Kernel struct{ cache *btf.Cache }

// NewKernel returns an empty Kernel.
func NewKernel() *Kernel { return &Kernel{cache: btf.NewCache()} }

func (k *Kernel) options() *ebpf.CollectionOptions {
	if k == nil {
		return nil
	}
	return &ebpf.CollectionOptions{Cache: k.cache}
}
