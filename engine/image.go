package engine

import (
	"path/filepath"
	"strings"

	"github.com/lockstep-dev/lockstep/spec"
	"github.com/lockstep-dev/lockstep/tracer"
)

// imageRoot is an image node's root: the image's unpacked filesystem under
// a writable layer beside the trial's directory (trials/NNNNN.NODE.root/
// upper), so that a restart finds what the node wrote and the next trial
// starts from the image. Not in the trial's directory: the nodes can write
// there, and one that put a link in the layer's place would have had a
// restart mount a host directory, followed, as its writable root.
func imageRoot(trialDir string, n spec.Node) *tracer.Root {
	layer := trialDir + "." + n.Name + ".root"
	return &tracer.Root{Lower: n.Image.Root, Upper: filepath.Join(layer, "upper"), Work: filepath.Join(layer, "work")}
}

// imageNodeEnv is an image node's environment: the image's and the spec's
// (spec.Expand), nothing of the host's, and a PATH when the image sets
// none.
func imageNodeEnv(env []string) []string {
	for _, e := range env {
		if strings.HasPrefix(e, "PATH=") {
			return env
		}
	}
	return append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, env...)
}
