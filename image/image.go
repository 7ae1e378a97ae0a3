package image

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go/v1"
)

// Image is an image's metadata and a way to read its layers; its
// filesystem is unpacked by Unpack.
type Image struct {
	// Ref is the reference the image was opened by.
	Ref string
	// ID is the digest of the image's config, which names its layers'
	// contents (rootfs.diff_ids): the key of its unpacked root.
	ID digest.Digest
	// Config is the image's runtime configuration: entrypoint, command,
	// environment, working directory.
	Config specs.ImageConfig
	src    source
	layers []layer
}

// layer is one layer blob; digest is empty when the format records none
// (docker archives name layers by path).
type layer struct {
	name   string
	digest digest.Digest
}

// source reads the files of an image's container format.
type source interface {
	open(name string) (io.ReadCloser, error)
}

// Transports a reference may start with, after skopeo's names; a reference
// without one is a path, read as a layout directory or an archive.
const (
	TransportOCI           = "oci:"
	TransportOCIArchive    = "oci-archive:"
	TransportDockerArchive = "docker-archive:"
	TransportStorage       = "containers-storage:"
)

// ErrNotFound says a reference names no image.
var ErrNotFound = errors.New("no such image")

// Open reads the image ref names: a path is relative to dir; a
// containers-storage: image is exported with podman into cache first.
func Open(ctx context.Context, ref, dir, cache string) (*Image, error) {
	transport, rest := splitTransport(ref)
	if transport == TransportStorage {
		return openStorage(ctx, ref, rest, cache)
	}
	path, tag := splitTag(rest, dir)
	if path == "" {
		return nil, fmt.Errorf("%q: empty path", ref)
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", path, ErrNotFound)
		}
		return nil, err
	}
	var src source
	switch {
	case fi.IsDir():
		if transport != "" && transport != TransportOCI {
			return nil, fmt.Errorf("%s: a directory, not an archive", path)
		}
		src = dirSource(path)
	case fi.Mode().IsRegular():
		if transport == TransportOCI {
			return nil, fmt.Errorf("%s: not an OCI layout directory", path)
		}
		src = tarSource(path)
	default:
		return nil, fmt.Errorf("%s: neither a directory nor an archive", path)
	}
	im := &Image{Ref: ref, src: src}
	oci := transport == TransportOCI || transport == TransportOCIArchive
	if transport == "" {
		// An archive says what it is by its index.json (OCI) or
		// manifest.json (docker).
		if r, err := src.open(specs.ImageIndexFile); err == nil {
			r.Close()
			oci = true
		}
	}
	if oci {
		err = im.readOCI(tag)
	} else {
		err = im.readDocker(tag)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return im, nil
}

// splitTransport cuts a known transport off ref.
func splitTransport(ref string) (string, string) {
	for _, t := range []string{TransportOCIArchive, TransportOCI, TransportDockerArchive, TransportStorage} {
		if rest, ok := strings.CutPrefix(ref, t); ok {
			return t, rest
		}
	}
	return "", ref
}

// splitTag cuts "path:tag" at the first colon after which the path
// exists (a tag, as docker archives name theirs, may hold slashes and
// colons); a path that exists whole has no tag.
func splitTag(s, dir string) (string, string) {
	exists := func(p string) bool {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		_, err := os.Stat(p)
		return err == nil
	}
	if exists(s) {
		return s, ""
	}
	for i := 0; i < len(s); i++ {
		if s[i] == ':' && exists(s[:i]) {
			return s[:i], s[i+1:]
		}
	}
	return s, ""
}

func readJSON(src source, name string, v any) error {
	r, err := src.open(name)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := json.NewDecoder(io.LimitReader(r, 16<<20)).Decode(v); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

func blobName(d digest.Digest) string {
	return "blobs/" + d.Algorithm().String() + "/" + d.Encoded()
}

// readOCI reads an OCI layout: its index, the manifest tag names (or the
// only one), through a nested index to this machine's platform.
func (im *Image) readOCI(tag string) error {
	var idx specs.Index
	if err := readJSON(im.src, specs.ImageIndexFile, &idx); err != nil {
		return err
	}
	desc, err := pickManifest(idx.Manifests, tag, true)
	if err != nil {
		return err
	}
	for range 4 {
		if desc.MediaType != specs.MediaTypeImageIndex && desc.MediaType != "application/vnd.docker.distribution.manifest.list.v2+json" {
			break
		}
		var sub specs.Index
		if err := im.readBlob(desc.Digest, &sub); err != nil {
			return err
		}
		if desc, err = pickManifest(sub.Manifests, "", false); err != nil {
			return err
		}
	}
	var m specs.Manifest
	if err := im.readBlob(desc.Digest, &m); err != nil {
		return err
	}
	if m.Config.Digest == "" {
		return fmt.Errorf("manifest %s has no config", desc.Digest)
	}
	var cfg specs.Image
	if err := im.readBlob(m.Config.Digest, &cfg); err != nil {
		return err
	}
	if len(m.Layers) != len(cfg.RootFS.DiffIDs) {
		return fmt.Errorf("manifest %s: %d layers, its config lists %d", desc.Digest, len(m.Layers), len(cfg.RootFS.DiffIDs))
	}
	im.ID, im.Config = m.Config.Digest, cfg.Config
	for _, l := range m.Layers {
		if err := l.Digest.Validate(); err != nil {
			return fmt.Errorf("layer %q: %w", l.Digest, err)
		}
		im.layers = append(im.layers, layer{name: blobName(l.Digest), digest: l.Digest})
	}
	return nil
}

func (im *Image) readBlob(d digest.Digest, v any) error {
	if err := d.Validate(); err != nil {
		return fmt.Errorf("blob %q: %w", d, err)
	}
	return readJSON(im.src, blobName(d), v)
}

// pickManifest chooses the manifest tagged tag (annotation
// org.opencontainers.image.ref.name), else the only one, else the one for
// this machine's platform.
func pickManifest(ds []specs.Descriptor, tag string, top bool) (specs.Descriptor, error) {
	if tag != "" {
		var names []string
		for _, d := range ds {
			n := d.Annotations[specs.AnnotationRefName]
			if n == tag {
				return d, nil
			}
			if n != "" {
				names = append(names, n)
			}
		}
		return specs.Descriptor{}, fmt.Errorf("no image tagged %q (tags: %s): %w", tag, strings.Join(names, ", "), ErrNotFound)
	}
	if len(ds) == 1 {
		return ds[0], nil
	}
	if len(ds) == 0 {
		return specs.Descriptor{}, fmt.Errorf("the index lists no image: %w", ErrNotFound)
	}
	if !top {
		for _, d := range ds {
			if d.Platform != nil && d.Platform.OS == "linux" && d.Platform.Architecture == runtime.GOARCH {
				return d, nil
			}
		}
		return specs.Descriptor{}, fmt.Errorf("no image for linux/%s: %w", runtime.GOARCH, ErrNotFound)
	}
	return specs.Descriptor{}, fmt.Errorf("the index lists %d images: name one with :TAG", len(ds))
}

// dockerManifest is an entry of a docker archive's manifest.json.
type dockerManifest struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// readDocker reads a docker archive (docker save, podman save).
func (im *Image) readDocker(tag string) error {
	var ms []dockerManifest
	if err := readJSON(im.src, "manifest.json", &ms); err != nil {
		return err
	}
	var m *dockerManifest
	for i := range ms {
		if tag == "" && len(ms) == 1 {
			m = &ms[i]
		}
		for _, t := range ms[i].RepoTags {
			if tag != "" && (t == tag || strings.HasSuffix(t, "/"+tag) || strings.TrimSuffix(t, ":latest") == tag) {
				m = &ms[i]
			}
		}
	}
	if m == nil {
		if tag == "" {
			return fmt.Errorf("the archive holds %d images: name one with :TAG", len(ms))
		}
		return fmt.Errorf("no image tagged %q: %w", tag, ErrNotFound)
	}
	r, err := im.src.open(m.Config)
	if err != nil {
		return err
	}
	defer r.Close()
	raw, err := io.ReadAll(io.LimitReader(r, 16<<20))
	if err != nil {
		return err
	}
	var cfg specs.Image
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return fmt.Errorf("%s: %w", m.Config, err)
	}
	im.ID, im.Config = digest.FromBytes(raw), cfg.Config
	for _, l := range m.Layers {
		im.layers = append(im.layers, layer{name: l})
	}
	return nil
}

// openStorage exports an image of the local podman store to an OCI
// archive in cache, once per image ID, and opens that.
func openStorage(ctx context.Context, ref, name, cache string) (*Image, error) {
	podman, err := exec.LookPath("podman")
	if err != nil {
		return nil, fmt.Errorf("%s: reading the local container store needs podman: %w", ref, err)
	}
	out, err := exec.CommandContext(ctx, podman, "image", "inspect", "--format", "{{.Id}}", name).Output()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref, ErrNotFound)
	}
	id := strings.TrimSpace(string(out))
	if digest.Digest("sha256:"+id).Validate() != nil {
		return nil, fmt.Errorf("%s: podman gave the image id %q", ref, id)
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return nil, err
	}
	archive := filepath.Join(cache, "podman-"+id+".tar")
	if _, err := os.Stat(archive); err != nil {
		tmp := fmt.Sprintf("%s.%d.tmp", archive, os.Getpid())
		os.Remove(tmp)
		cmd := exec.CommandContext(ctx, podman, "image", "save", "--format", "oci-archive", "-o", tmp, name)
		if msg, err := cmd.CombinedOutput(); err != nil {
			os.Remove(tmp)
			return nil, fmt.Errorf("%s: podman image save: %v: %s", ref, err, strings.TrimSpace(string(msg)))
		}
		if err := os.Rename(tmp, archive); err != nil {
			return nil, err
		}
	}
	im, err := Open(ctx, TransportOCIArchive+archive, "", cache)
	if err != nil {
		return nil, err
	}
	im.Ref = ref
	return im, nil
}
