package engine

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// needed are the capabilities no trial can do without: namespaces and
// mounts, the network, tracing. (eBPF, real-time priority and the rest
// degrade with a warning when missing.)
var needed = []struct {
	cap  int
	name string
}{
	{unix.CAP_SYS_ADMIN, "CAP_SYS_ADMIN"},
	{unix.CAP_NET_ADMIN, "CAP_NET_ADMIN"},
	{unix.CAP_SYS_PTRACE, "CAP_SYS_PTRACE"},
}

// needPrivileges refuses to run trials without the capabilities they
// need, naming those missing, before anything is made: without root the
// first failure was a directory lockstep could not make, which says
// nothing of why.
func needPrivileges() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return nil // cannot tell: what fails will say
	}
	var missing []string
	for _, c := range needed {
		if data[c.cap/32].Effective&(1<<(c.cap%32)) == 0 {
			missing = append(missing, c.name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("running trials needs root: this process lacks %s (run lockstep as root; docs/ci.md lists what it needs)", strings.Join(missing, ", "))
}
