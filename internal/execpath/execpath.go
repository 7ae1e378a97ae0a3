package execpath

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	securejoin "github.com/cyphar/filepath-securejoin"
)

// defaultPath is execvp's search path when env has no PATH.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// ErrNotFound says no layer holds an executable argv0.
var ErrNotFound = errors.New("not found in the image")

// Find finds argv0 in a root made of layers (the uppermost first, as an
// overlay stacks them; "" layers are skipped) as execve will after the
// process's root changes to it: through PATH from env when argv0 has no
// slash, from dir when it is relative. Symlinks resolve inside the root.
// It returns the path inside the root.
func Find(argv0, dir string, env []string, layers ...string) (string, error) {
	var cands []string
	switch {
	case strings.Contains(argv0, "/"):
		p := argv0
		if !filepath.IsAbs(p) {
			if dir == "" {
				dir = "/"
			}
			p = filepath.Join(dir, p)
		}
		cands = []string{p}
	default:
		path := defaultPath
		for _, e := range env {
			if v, ok := strings.CutPrefix(e, "PATH="); ok {
				path = v
			}
		}
		for _, d := range filepath.SplitList(path) {
			if filepath.IsAbs(d) {
				cands = append(cands, filepath.Join(d, argv0))
			}
		}
	}
	for _, c := range cands {
		for _, layer := range layers {
			if layer == "" {
				continue
			}
			p, err := securejoin.SecureJoin(layer, c)
			if err != nil {
				continue
			}
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
				return c, nil
			}
		}
	}
	return "", ErrNotFound
}
