package image

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/lockstep-dev/lockstep/internal/ocitest"
)

// layers exercise what unpacking must get right: a later layer deletes a
// file (whiteout), empties a directory (opaque) but for what it adds
// itself, replaces a directory with a file, links within the image, and
// tries to write through a symlink to the host.
var layers = []ocitest.Layer{
	{Files: []ocitest.File{
		{Name: "bin/", Type: tar.TypeDir},
		{Name: "bin/app", Body: []byte("app"), Mode: 0o755},
		{Name: "etc/", Type: tar.TypeDir},
		{Name: "etc/gone", Body: []byte("x")},
		{Name: "etc/conf.d/a", Body: []byte("a")},
		{Name: "etc/conf.d/b", Body: []byte("b")},
		{Name: "var/lib/x/y", Body: []byte("y")},
		{Name: "escape", Type: tar.TypeSymlink, Link: "/"},
		{Name: "dev/null", Type: tar.TypeChar},
	}},
	{Plain: true, Files: []ocitest.File{
		{Name: "etc/.wh.gone"},
		{Name: "etc/conf.d/", Type: tar.TypeDir},
		{Name: "etc/conf.d/.wh..wh..opq"},
		{Name: "etc/conf.d/c", Body: []byte("c")},
		{Name: "var/lib/x", Body: []byte("now a file")},
		{Name: "bin/app2", Type: tar.TypeLink, Link: "bin/app"},
		{Name: "bin/sh", Type: tar.TypeSymlink, Link: "app"},
		{Name: "escape/lockstep-image-test-escaped", Body: []byte("must stay in the image")},
	}},
}

var cfg = v1.ImageConfig{Entrypoint: []string{"/bin/app"}, Cmd: []string{"serve"}, Env: []string{"PATH=/bin"}, WorkingDir: "/var"}

func TestOpenAndUnpack(t *testing.T) {
	dir := t.TempDir()
	if _, err := ocitest.WriteLayout(filepath.Join(dir, "layout"), "v1", cfg, layers...); err != nil {
		t.Fatal(err)
	}
	if err := ocitest.WriteOCIArchive(filepath.Join(dir, "oci.tar"), "", cfg, layers...); err != nil {
		t.Fatal(err)
	}
	if err := ocitest.WriteDockerArchive(filepath.Join(dir, "docker.tar"), "example/app:v1", cfg, layers...); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"layout", "layout:v1", "oci:layout:v1", dir + "/layout", "oci.tar", "oci-archive:oci.tar", "docker.tar", "docker-archive:docker.tar:example/app:v1"} {
		t.Run(ref, func(t *testing.T) {
			cache := t.TempDir()
			im, err := Open(context.Background(), ref, dir, cache)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(im.Config.Entrypoint, cfg.Entrypoint) || !slices.Equal(im.Config.Cmd, cfg.Cmd) || im.Config.WorkingDir != "/var" {
				t.Errorf("config = %+v", im.Config)
			}
			root, err := im.Unpack(context.Background(), cache)
			if err != nil {
				t.Fatal(err)
			}
			checkRoot(t, root)
			// A second unpack finds the first.
			again, err := im.Unpack(context.Background(), cache)
			if err != nil || again != root {
				t.Fatalf("second unpack: %q, %v", again, err)
			}
		})
	}
	if _, err := os.Lstat("/lockstep-image-test-escaped"); err == nil {
		os.Remove("/lockstep-image-test-escaped")
		t.Fatal("a layer wrote through a symlink to the host's /")
	}
}

func checkRoot(t *testing.T, root string) {
	t.Helper()
	want := map[string]string{
		"bin/app": "app", "bin/app2": "app", "etc/conf.d/c": "c", "var/lib/x": "now a file",
		"escape": "symlink:/", "bin/sh": "symlink:app", "lockstep-image-test-escaped": "must stay in the image",
	}
	for name, body := range want {
		p := filepath.Join(root, name)
		if target, ok := strings.CutPrefix(body, "symlink:"); ok {
			if got, err := os.Readlink(p); err != nil || got != target {
				t.Errorf("%s: link %q, %v; want %q", name, got, err, target)
			}
			continue
		}
		if got, err := os.ReadFile(p); err != nil || string(got) != body {
			t.Errorf("%s: %q, %v; want %q", name, got, err, body)
		}
	}
	for _, name := range []string{"etc/gone", "etc/conf.d/a", "etc/conf.d/b", "dev/null"} {
		if _, err := os.Lstat(filepath.Join(root, name)); err == nil {
			t.Errorf("%s: present, want it gone", name)
		}
	}
	a, _ := os.Stat(filepath.Join(root, "bin/app"))
	b, _ := os.Stat(filepath.Join(root, "bin/app2"))
	if a == nil || b == nil || !os.SameFile(a, b) {
		t.Error("bin/app2 is not a hard link of bin/app")
	}
	if a != nil && a.Mode().Perm() != 0o755 {
		t.Errorf("bin/app mode %v, want 0755", a.Mode())
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := ocitest.WriteLayout(filepath.Join(dir, "layout"), "v1", cfg, layers...); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "junk.tar"), []byte("not a tar"), 0o644)
	for _, c := range []struct{ ref, want string }{
		{"missing", "no such image"},
		{"layout:v2", `no image tagged "v2" (tags: v1)`},
		{"docker-archive:layout", "a directory, not an archive"},
		{"junk.tar", "reading the archive"},
	} {
		_, err := Open(context.Background(), c.ref, dir, t.TempDir())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.ref, err, c.want)
		}
	}
	if _, err := Open(context.Background(), "missing", dir, t.TempDir()); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing: %v is not ErrNotFound", err)
	}
}

func TestCorruptLayer(t *testing.T) {
	dir := t.TempDir()
	if _, err := ocitest.WriteLayout(dir, "", cfg, layers...); err != nil {
		t.Fatal(err)
	}
	im, err := Open(context.Background(), dir, "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	blob := filepath.Join(dir, im.layers[1].name)
	b, _ := os.ReadFile(blob)
	// A file's contents: the tar still reads, only the digest tells.
	b = bytes.Replace(b, []byte("must stay in the image"), []byte("must stay in the imagE"), 1)
	os.WriteFile(blob, b, 0o644)
	if _, err := im.Unpack(context.Background(), t.TempDir()); err == nil || !strings.Contains(err.Error(), "does not match its digest") {
		t.Fatalf("unpack of a corrupt layer: %v", err)
	}
}
