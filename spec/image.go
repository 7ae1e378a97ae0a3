package spec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	v1 "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/lockstep-dev/lockstep/compose"
	"github.com/lockstep-dev/lockstep/image"
	"github.com/lockstep-dev/lockstep/internal/execpath"
)

// Image is an image node's image (spec: image:), read and unpacked when
// the spec loads.
type Image struct {
	Ref string // as the spec names it
	// ID is the digest of the image's config: a trace records it through
	// the spec's digest, so a replay refuses an image that changed.
	ID string
	// Root is the image's unpacked root filesystem (read-only: each trial
	// lays a node's writable layer over it).
	Root   string
	Config v1.ImageConfig
}

// ImageCache is where images are unpacked unless LOCKSTEP_IMAGE_CACHE says
// otherwise: kept across campaigns, one directory per image config.
const ImageCache = "/var/tmp/lockstep/images"

func imageCache() string {
	if c := os.Getenv("LOCKSTEP_IMAGE_CACHE"); c != "" {
		return c
	}
	return ImageCache
}

// openImage reads and unpacks the image ref names (a path relative to
// dir, or a transport: see package image).
func openImage(ref, dir string) (*Image, error) {
	ctx := context.Background()
	im, err := image.Open(ctx, ref, dir, imageCache())
	if err != nil {
		return nil, err
	}
	root, err := im.Unpack(ctx, imageCache())
	if err != nil {
		return nil, err
	}
	return &Image{Ref: ref, ID: im.ID.String(), Root: root, Config: im.Config}, nil
}

// image opens ref once per spec.
func (d *decoder) image(ref, dir string) (*Image, error) {
	if im, ok := d.images[ref]; ok {
		return im, nil
	}
	im, err := openImage(ref, dir)
	if err != nil {
		return nil, err
	}
	if d.images == nil {
		d.images = map[string]*Image{}
	}
	d.images[ref] = im
	return im, nil
}

// command is a node's argv unexpanded but for the spec's own parts: for
// an image node, as Docker builds it, entrypoint: replaces the image's
// ENTRYPOINT and drops its CMD, command: replaces CMD. The image's values
// are taken literally, never as templates.
func (s *Spec) command(n *Node, v TemplateVars, bud *budget) ([]string, error) {
	if n.Image == nil {
		return s.expandAll(n.Name, v, n.Command, bud)
	}
	entry, cmd := n.Image.Config.Entrypoint, n.Image.Config.Cmd
	if n.Entrypoint != nil {
		e, err := s.expandAll(n.Name, v, n.Entrypoint, bud)
		if err != nil {
			return nil, err
		}
		entry, cmd = e, nil
	}
	if n.Command != nil {
		c, err := s.expandAll(n.Name, v, n.Command, bud)
		if err != nil {
			return nil, err
		}
		cmd = c
	}
	return append(append([]string(nil), entry...), cmd...), nil
}

// imageEnv puts the image's environment under the spec's (env from
// Expand, which wins).
func (im *Image) imageEnv(env []string) []string {
	out := make([]string, 0, len(im.Config.Env)+len(env))
	set := map[string]bool{}
	for _, e := range env {
		k, _, _ := strings.Cut(e, "=")
		set[k] = true
	}
	for _, e := range im.Config.Env {
		if k, _, _ := strings.Cut(e, "="); !set[k] {
			out = append(out, e)
		}
	}
	return append(out, env...)
}

// workdir is the image's working directory, / when it names none.
func (im *Image) workdir() string {
	if im.Config.WorkingDir == "" {
		return "/"
	}
	return path.Clean("/" + im.Config.WorkingDir)
}

// checkProgram says why argv[0] cannot start in the image.
func (im *Image) checkProgram(argv, env []string, wd string) error {
	if len(argv) == 0 {
		return fmt.Errorf("image %s has neither an entrypoint nor a command: set command", im.Ref)
	}
	if _, err := execpath.Find(argv[0], wd, env, im.Root); err != nil {
		return fmt.Errorf("program %q: %v", argv[0], err)
	}
	return nil
}

// checkImageNode checks that an image node can start: its program is in
// the image, and its arguments fit.
func (s *Spec) checkImageNode(n Node, v TemplateVars) error {
	argv, env, wd, err := s.Expand(n.Name, v)
	if err != nil {
		return err
	}
	if err := checkArgs(argv, env); err != nil {
		return err
	}
	return n.Image.checkProgram(argv, env, wd)
}

// loadCompose loads a compose file as the spec `lockstep import` writes
// from it. Errors in that spec point at its lines, which `lockstep import`
// prints.
func loadCompose(path string, data []byte) (*Spec, error) {
	imported, err := compose.Import(path, data)
	if err != nil {
		var ce *compose.Error
		if errors.As(err, &ce) {
			return nil, &Error{File: ce.File, Field: ce.Field, Msg: ce.Msg}
		}
		return nil, err
	}
	s, err := Parse(path, imported)
	var se *Error
	if errors.As(err, &se) {
		se.Msg += " (in the spec imported from it: see lockstep import " + filepath.Base(path) + ")"
	}
	return s, err
}
