package image

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lockstep-dev/lockstep/internal/ocitest"
)

// An image in podman's local store is read through podman image save:
// the test loads an archive into the store under a name of its own
// (podman load, offline), opens it by that name, unpacks it, and removes
// it from the store.
func TestContainersStorage(t *testing.T) {
	podman, err := exec.LookPath("podman")
	if err != nil || os.Geteuid() != 0 {
		t.Skip("needs podman and root (the system store)")
	}
	dir := t.TempDir()
	archive := filepath.Join(dir, "docker.tar")
	name := fmt.Sprintf("localhost/lockstep-image-test-%d:v1", os.Getpid())
	simple := []ocitest.Layer{
		{Files: []ocitest.File{{Name: "bin/app", Body: []byte("app"), Mode: 0o755}, {Name: "etc/gone", Body: []byte("x")}}},
		{Plain: true, Files: []ocitest.File{{Name: "etc/.wh.gone"}, {Name: "etc/kept", Body: []byte("kept")}}},
	}
	if err := ocitest.WriteDockerArchive(archive, name, cfg, simple...); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(podman, "load", "-q", "-i", archive).CombinedOutput(); err != nil {
		t.Skipf("podman load: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command(podman, "rmi", "-f", name).Run() })
	cache := t.TempDir()
	im, err := Open(context.Background(), TransportStorage+name, "", cache)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(im.Config.Entrypoint, cfg.Entrypoint) {
		t.Errorf("entrypoint %q", im.Config.Entrypoint)
	}
	root, err := im.Unpack(context.Background(), cache)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "etc/kept")); err != nil || string(b) != "kept" {
		t.Errorf("etc/kept: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(root, "etc/gone")); err == nil {
		t.Error("etc/gone: present after its whiteout")
	}
	if _, err := Open(context.Background(), TransportStorage+"localhost/lockstep-no-such-image:v0", "", cache); err == nil {
		t.Error("an image missing from the store opened")
	}
}
