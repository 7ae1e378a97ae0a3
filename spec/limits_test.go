package spec

import (
	"net/netip"
	"testing"
)

// TestParseSize: sizes in binary units or bytes; anything else is refused.
func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"2GiB", 2 << 30, true}, {"256MiB", 256 << 20, true}, {"1.5 GiB", 3 << 29, true},
		{"64KiB", 64 << 10, true}, {"1TiB", 1 << 40, true}, {"4096", 4096, true}, {"100B", 100, true},
		{"2GB", 0, false}, {"2G", 0, false}, {"", 0, false}, {"MiB", 0, false}, {"-1MiB", 0, false},
		{"1e9", 0, false}, {"0x10", 0, false}, {"NaNMiB", 0, false}, {"1e30GiB", 0, false},
	} {
		got, err := ParseSize(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d (ok %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for in, want := range map[int64]string{2 << 30: "2 GiB", 1536 << 10: "1.5 MiB", 300: "300 B", 64 << 10: "64 KiB", 1 << 50: "1024 TiB"} {
		if got := FormatSize(in); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", in, got, want)
		}
	}
}

// TestNodeLimitsMerge: a node's limits override limits.node field by
// field.
func TestNodeLimitsMerge(t *testing.T) {
	src := `name: t
nodes:
  - name: s1
    command: ["/bin/true"]
    limits: {memory: 4GiB, output: 1MiB, tmp: 8MiB}
  - name: c1
    role: client
    command: ["/bin/true"]
limits:
  node: {memory: 2GiB, pids: 4096, tmpfs: 256MiB, cpu_weight: 200}
`
	sp, err := parse("t.yaml", []byte(src), func() ([]netip.Prefix, error) { return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sp.NodeLimits("s1"), (NodeLimits{Memory: 4 << 30, Pids: 4096, Tmpfs: 256 << 20, Tmp: 8 << 20, Output: 1 << 20, CPUWeight: 200}); got != want {
		t.Errorf("s1: %+v, want %+v", got, want)
	}
	if got, want := sp.NodeLimits("c1"), (NodeLimits{Memory: 2 << 30, Pids: 4096, Tmpfs: 256 << 20, CPUWeight: 200}); got != want {
		t.Errorf("c1: %+v, want %+v", got, want)
	}
}
