package image

import (
	"context"
	"os"

	"github.com/lockstep-dev/lockstep/spec"
)

// DefaultCache is where images are unpacked unless LOCKSTEP_IMAGE_CACHE
// says otherwise: kept across campaigns, one directory per image config.
const DefaultCache = "/var/tmp/lockstep/images"

// Cache is the image cache: $LOCKSTEP_IMAGE_CACHE, else DefaultCache.
func Cache() string {
	if c := os.Getenv("LOCKSTEP_IMAGE_CACHE"); c != "" {
		return c
	}
	return DefaultCache
}

// Resolve reads and unpacks the images sp's nodes run from into the
// cache and hands them to sp (spec.Spec.ResolveImages), which checks that
// each node can start in its image. spec.Load leaves this to whoever
// runs the nodes (the engine, the CLI): unpacking, and perhaps running
// podman, is not parsing. Its errors are the spec's (*spec.Error), and a
// resolved spec is left as it is.
func Resolve(ctx context.Context, sp *spec.Spec) error {
	cache := Cache()
	return sp.ResolveImages(func(si *spec.Image) error {
		im, err := Open(ctx, si.Ref, sp.Dir, cache)
		if err != nil {
			return err
		}
		root, err := im.Unpack(ctx, cache)
		if err != nil {
			return err
		}
		si.ID, si.Root, si.Config = im.ID.String(), root, im.Config
		return nil
	})
}
