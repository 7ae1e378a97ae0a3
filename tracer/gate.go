package tracer

import "slices"

// A gate is what the tracer does at the seccomp stop of one syscall.
type gate struct {
	// clock says the gate needs virtual time: without a clock the syscall
	// runs natively.
	clock bool
	// argRule: the filter stops it only for some arguments, by a rule of
	// its own (launch.Filter), not with the unconditional ones.
	argRule bool
	// handle answers the stop, releases it or makes it a pending op, and
	// reports true; false lets the syscall run natively. The call comes
	// decoded by its syscallTable row.
	handle func(th *thread, c call) bool
}

// filteredSyscalls lists the gates the seccomp filter stops unconditionally,
// in ascending order.
func filteredSyscalls(gates map[int]gate) []uint32 {
	var nrs []uint32
	for nr, g := range gates {
		if !g.argRule {
			nrs = append(nrs, uint32(nr))
		}
	}
	slices.Sort(nrs)
	return nrs
}
