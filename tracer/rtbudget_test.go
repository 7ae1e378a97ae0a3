package tracer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestZeroRTBudget: the hint names a cgroup v1 cpu controller's
// cpu.rt_runtime_us of 0, under the process's cgroup or at the mount's
// root (a container's own cgroup), and nothing else.
func TestZeroRTBudget(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cgroups string
		files   map[string]string // below the root: content
		want    string            // in the hint; "" for none
	}{
		{"a container's cgroup at the mount's root", "4:cpu,cpuacct:/\n0::/\n",
			map[string]string{"cpu,cpuacct/cpu.rt_runtime_us": "0\n"}, "cpu,cpuacct/cpu.rt_runtime_us is 0"},
		{"the host's view of a nested cgroup", "5:cpuacct,cpu:/libpod_parent/x\n",
			map[string]string{"cpu/libpod_parent/x/cpu.rt_runtime_us": "0\n", "cpu/cpu.rt_runtime_us": "950000\n"}, "cpu/libpod_parent/x/cpu.rt_runtime_us is 0"},
		{"a budget", "4:cpu:/\n", map[string]string{"cpu/cpu.rt_runtime_us": "950000\n"}, ""},
		{"cgroup v2 alone", "0::/user.slice\n", nil, ""},
		{"cpuset is not cpu", "3:cpuset:/\n", map[string]string{"cpu/cpu.rt_runtime_us": "0\n"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for p, c := range tc.files {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(root, p), []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got := zeroRTBudget(tc.cgroups, root)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("got %q, want one with %q", got, tc.want)
			}
		})
	}
}
