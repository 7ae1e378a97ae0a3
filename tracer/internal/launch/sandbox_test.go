package launch

import (
	"slices"
	"testing"

	"github.com/lockstep-dev/lockstep/internal/procfs"
)

// TestMountsBelowTmp: a node's private /tmp keeps each mount below /tmp,
// each after the one it lies on, but none at or below a kept writable
// directory and none whose source is hidden, nor what is mounted below
// those.
func TestMountsBelowTmp(t *testing.T) {
	m := func(point, source string) procfs.Mount {
		return procfs.Mount{Point: point, FSType: "tmpfs", Source: source}
	}
	for _, tc := range []struct {
		name         string
		mounts       []procfs.Mount
		keep, hidden []string
		want         []string
	}{
		{"none", []procfs.Mount{m("/", "/dev/vda"), m("/tmp", "tmpfs"), m("/tmpx", "x"), m("/run/a", "a")}, nil, nil, nil},
		{"a volume", []procfs.Mount{m("/", "/dev/vda"), m("/tmp/work", "vol")}, nil, nil, []string{"/tmp/work"}},
		{"each after the one it lies on", []procfs.Mount{m("/tmp/b/c", "c"), m("/tmp/a", "a"), m("/tmp/b", "b"), m("/tmp/a/x", "x"), m("/tmp/a", "again"), m("/tmp/a-b", "ab")},
			nil, nil, []string{"/tmp/a", "/tmp/a-b", "/tmp/a/x", "/tmp/b", "/tmp/b/c"}},
		{"carried by a writable directory", []procfs.Mount{m("/tmp/out/trials/00000/n1", "lockstep-tmp-1-2"), m("/tmp/out/trials/00000", "o")},
			[]string{"/tmp/out/trials/00000"}, nil, nil},
		{"on a volume with the writable directory", []procfs.Mount{m("/tmp/vol", "v"), m("/tmp/vol/out/trials/00000/n1", "lockstep-tmp-1-2"),
			m("/tmp/vol/out/trials/00001/n1", "lockstep-tmp-1-2"), m("/tmp/vol/out/trials/00001/n1/x", "user")},
			[]string{"/tmp/vol/out/trials/00000"}, []string{"lockstep-tmp"}, []string{"/tmp/vol"}},
		{"other trials' {{tmp}} hidden", []procfs.Mount{m("/tmp/out/trials/00001/n1", "lockstep-tmp-1-2"), m("/tmp/out/trials/00001/n1/sub", "user")},
			[]string{"/tmp/out/trials/00000"}, []string{"lockstep-tmp"}, nil},
		{"a name that only begins like a kept one", []procfs.Mount{m("/tmp/out2", "o")}, []string{"/tmp/out"}, nil, []string{"/tmp/out2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mountsBelowTmp(tc.mounts, tc.keep, tc.hidden); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
