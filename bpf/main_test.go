package bpf

import (
	"os"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/internal/testutil"
)

// TestMain fails the package when its tests leave a BPF link open (a
// program still attached: this process's descriptors are the only ones its
// tests create, so other packages running beside it do not count), or a
// namespace, a network link, a cgroup or a child process behind.
func TestMain(m *testing.M) {
	testutil.LeakCheckMain(m, func() func() []string {
		before := openLinks()
		return func() []string {
			var leaks []string
			for fd, what := range openLinks() {
				if _, had := before[fd]; !had {
					leaks = append(leaks, "open "+what+" (fd "+fd+")")
				}
			}
			return leaks
		}
	})
}

// openLinks lists this process's descriptors of BPF links, by number.
func openLinks() map[string]string {
	out := map[string]string{}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return out
	}
	for _, e := range ents {
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err == nil && strings.HasPrefix(target, "anon_inode:bpf_link") {
			out[e.Name()] = "BPF link"
		}
	}
	return out
}
