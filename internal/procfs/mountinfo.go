package procfs

import (
	"os"
	"slices"
	"strconv"
	"strings"
)

// Mount is one line of a mountinfo file: where a filesystem is mounted,
// its type and its source.
type Mount struct {
	Point, FSType, Source string
}

// Mounts reads a mountinfo file (/proc/self/mountinfo, or
// /proc/thread-self/mountinfo for the calling thread's mount namespace):
// its mounts in the kernel's order, each after the one it is mounted on.
func Mounts(path string) ([]Mount, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseMountinfo(string(b)), nil
}

// ParseMountinfo parses mountinfo lines, leaving out any it cannot read.
func ParseMountinfo(s string) []Mount {
	var out []Mount
	for line := range strings.Lines(s) {
		// id parent major:minor root mountpoint options... - fstype source superoptions
		f := strings.Fields(line)
		sep := slices.Index(f, "-")
		if sep < 5 || len(f) < sep+3 {
			continue
		}
		out = append(out, Mount{Point: unescape(f[4]), FSType: f[sep+1], Source: unescape(f[sep+2])})
	}
	return out
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
