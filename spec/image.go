package spec

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	v1 "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/lockstep-dev/lockstep/compose"
	"github.com/lockstep-dev/lockstep/internal/execpath"
)

// Image is an image node's image (spec: image:). Parsing a spec records
// the reference alone: reading and unpacking an image (which may run
// podman) is not data, and is left to whoever runs the nodes, through
// ResolveImages.
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

// image is the Image of ref: one per spec however many nodes name it, so
// that ResolveImages opens it once.
func (d *decoder) image(ref string) *Image {
	if im, ok := d.images[ref]; ok {
		return im
	}
	if d.images == nil {
		d.images = map[string]*Image{}
	}
	im := &Image{Ref: ref}
	d.images[ref] = im
	return im
}

// ResolveImages gives the image nodes their images and checks that each
// can start in its own, as Load checks that a host program exists. open
// reads and unpacks an image, its Ref relative to the spec's directory,
// and fills in its ID, Root and Config: package image's Resolve is how
// lockstep does it. The images' IDs go into the spec's digest, so that a
// replay refuses an image that changed since its trace. Errors are the
// spec's (*Error), at the node's image: field. Once it has succeeded,
// ResolveImages does nothing.
func (s *Spec) ResolveImages(open func(*Image) error) error {
	if s.imagesResolved {
		return nil
	}
	err := s.resolveImages(open)
	var se *Error
	if s.composed && errors.As(err, &se) {
		se.Msg += composeNote(s.Path)
	}
	if err == nil {
		s.imagesResolved = true
	}
	return err
}

func (s *Spec) resolveImages(open func(*Image) error) error {
	opened := map[*Image]bool{}
	for i, n := range s.Nodes {
		if n.Image == nil || opened[n.Image] {
			continue
		}
		if err := open(n.Image); err != nil {
			return &Error{File: s.Path, Line: n.imageLine, Field: fmt.Sprintf("nodes[%d].image", i), Msg: err.Error()}
		}
		opened[n.Image] = true
	}
	sum := s.Digest
	v := s.placeholderVars("/lockstep-trial")
	for i, n := range s.Nodes {
		if n.Image == nil {
			continue
		}
		// The image's paths: nothing to find on the host.
		if err := s.checkImageNode(n, v); err != nil {
			return &Error{File: s.Path, Line: n.imageLine, Field: fmt.Sprintf("nodes[%d].image", i), Msg: "node " + n.Name + ": " + err.Error()}
		}
		sum = digest([]byte(sum + "\n" + fmt.Sprintf("nodes[%d]", i) + ".image " + n.Image.ID))
	}
	s.Digest = sum
	return nil
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
		se.Msg += composeNote(path)
	}
	if s != nil {
		s.composed = true
	}
	return s, err
}

// composeNote ends an error in the spec imported from the compose file
// at path, whose lines are not the file's.
func composeNote(path string) string {
	return " (in the spec imported from it: see lockstep import " + filepath.Base(path) + ")"
}
