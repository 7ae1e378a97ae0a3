// Package ocitest writes small OCI layouts and docker archives for tests:
// real images in the formats lockstep reads, built offline from files the
// test names.
package ocitest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	v1 "github.com/opencontainers/image-spec/specs-go/v1"
)

// File is one entry of a layer; Type is a tar type flag (tar.TypeReg when
// zero), Link a symlink's or hard link's target.
type File struct {
	Name string
	Mode int64
	Body []byte
	Type byte
	Link string
}

// Layer is a layer's files in order, and whether its blob is gzipped.
type Layer struct {
	Files []File
	Plain bool // an uncompressed tar
}

var epoch = time.Unix(1_700_000_000, 0)

// tarOf writes files as a tar stream.
func tarOf(files []File) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.Name, Mode: f.Mode, Typeflag: f.Type, Linkname: f.Link, ModTime: epoch, Format: tar.FormatPAX}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(f.Body))
		}
		if h.Mode == 0 {
			h.Mode = 0o644
			if h.Typeflag == tar.TypeDir {
				h.Mode = 0o755
			}
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(f.Body); err != nil {
				return nil, err
			}
		}
	}
	err := tw.Close()
	return buf.Bytes(), err
}

func blob(l Layer) (raw, diff []byte, err error) {
	diff, err = tarOf(l.Files)
	if err != nil || l.Plain {
		return diff, diff, err
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(diff)
	err = zw.Close()
	return buf.Bytes(), diff, err
}

func config(cfg v1.ImageConfig, diffs []digest.Digest) ([]byte, error) {
	return json.Marshal(v1.Image{
		Platform: v1.Platform{OS: "linux", Architecture: runtime.GOARCH},
		Config:   cfg,
		RootFS:   v1.RootFS{Type: "layers", DiffIDs: diffs},
	})
}

// WriteLayout writes an OCI image layout in dir holding one image tagged
// tag (untagged when empty) and returns its manifest's digest.
func WriteLayout(dir, tag string, cfg v1.ImageConfig, layers ...Layer) (digest.Digest, error) {
	put := func(b []byte) (digest.Digest, error) {
		d := digest.FromBytes(b)
		p := filepath.Join(dir, "blobs", d.Algorithm().String(), d.Encoded())
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		return d, os.WriteFile(p, b, 0o644)
	}
	m := v1.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: v1.MediaTypeImageManifest}
	var diffs []digest.Digest
	for _, l := range layers {
		raw, diff, err := blob(l)
		if err != nil {
			return "", err
		}
		d, err := put(raw)
		if err != nil {
			return "", err
		}
		mt := v1.MediaTypeImageLayerGzip
		if l.Plain {
			mt = v1.MediaTypeImageLayer
		}
		m.Layers = append(m.Layers, v1.Descriptor{MediaType: mt, Digest: d, Size: int64(len(raw))})
		diffs = append(diffs, digest.FromBytes(diff))
	}
	c, err := config(cfg, diffs)
	if err != nil {
		return "", err
	}
	cd, err := put(c)
	if err != nil {
		return "", err
	}
	m.Config = v1.Descriptor{MediaType: v1.MediaTypeImageConfig, Digest: cd, Size: int64(len(c))}
	mb, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	md, err := put(mb)
	if err != nil {
		return "", err
	}
	desc := v1.Descriptor{MediaType: v1.MediaTypeImageManifest, Digest: md, Size: int64(len(mb))}
	if tag != "" {
		desc.Annotations = map[string]string{v1.AnnotationRefName: tag}
	}
	idx, err := json.Marshal(v1.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: v1.MediaTypeImageIndex, Manifests: []v1.Descriptor{desc}})
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, v1.ImageIndexFile), idx, 0o644); err != nil {
		return "", err
	}
	return md, os.WriteFile(filepath.Join(dir, v1.ImageLayoutFile), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644)
}

// WriteDockerArchive writes a docker archive (docker save's format) at
// path holding one image tagged tag.
func WriteDockerArchive(path, tag string, cfg v1.ImageConfig, layers ...Layer) error {
	var files []File
	var names []string
	var diffs []digest.Digest
	for _, l := range layers {
		raw, diff, err := blob(l)
		if err != nil {
			return err
		}
		name := digest.FromBytes(diff).Encoded() + "/layer.tar"
		names = append(names, name)
		diffs = append(diffs, digest.FromBytes(diff))
		files = append(files, File{Name: filepath.Dir(name), Type: tar.TypeDir}, File{Name: name, Body: raw})
	}
	c, err := config(cfg, diffs)
	if err != nil {
		return err
	}
	cname := digest.FromBytes(c).Encoded() + ".json"
	m, err := json.Marshal([]map[string]any{{"Config": cname, "RepoTags": []string{tag}, "Layers": names}})
	if err != nil {
		return err
	}
	files = append(files, File{Name: cname, Body: c}, File{Name: "manifest.json", Body: m})
	b, err := tarOf(files)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// WriteOCIArchive writes an OCI layout as a tar archive at path.
func WriteOCIArchive(path, tag string, cfg v1.ImageConfig, layers ...Layer) error {
	dir, err := os.MkdirTemp("", "ocitest-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if _, err := WriteLayout(dir, tag, cfg, layers...); err != nil {
		return err
	}
	var files []File
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			files = append(files, File{Name: rel, Type: tar.TypeDir})
			return nil
		}
		b, err := os.ReadFile(p)
		files = append(files, File{Name: rel, Body: b})
		return err
	})
	if err != nil {
		return err
	}
	b, err := tarOf(files)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
