package procfs

import (
	"slices"
	"testing"
)

// TestParseMountinfo: mount points and sources come unescaped, with the
// type after the optional fields' separator; short lines are left out.
func TestParseMountinfo(t *testing.T) {
	in := `22 1 0:21 / /proc rw,nosuid - proc proc rw
72 50 0:40 / /tmp/a\040dir rw,relatime shared:5 master:1 - tmpfs lockstep-tmp-9-8 rw,size=8k
broken line
30 1 8:1 / /data rw - ext4 /dev/my\040disk rw
`
	want := []Mount{
		{Point: "/proc", FSType: "proc", Source: "proc"},
		{Point: "/tmp/a dir", FSType: "tmpfs", Source: "lockstep-tmp-9-8"},
		{Point: "/data", FSType: "ext4", Source: "/dev/my disk"},
	}
	if got := ParseMountinfo(in); !slices.Equal(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
