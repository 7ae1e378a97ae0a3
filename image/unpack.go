package image

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	securejoin "github.com/cyphar/filepath-securejoin"
	"github.com/opencontainers/go-digest"
	"golang.org/x/sys/unix"
)

// Whiteout names of the OCI layer format: .wh.NAME deletes NAME of the
// layers below; .wh..wh..opq in a directory hides everything the layers
// below put there.
const (
	whiteoutPrefix = ".wh."
	whiteoutOpaque = ".wh..wh..opq"
)

// RootDir is where Unpack puts an image's root filesystem in cache.
func (im *Image) RootDir(cache string) string {
	return filepath.Join(cache, im.ID.Algorithm().String()+"-"+im.ID.Encoded(), "rootfs")
}

// Unpack applies the image's layers in order into one directory,
// RootDir(cache), and returns it. An image already there is not unpacked
// again: the directory appears whole (a rename) or not at all, so that
// campaigns that start together share it. Device nodes are skipped (a
// node's /dev is lockstep's), as are extended attributes.
func (im *Image) Unpack(ctx context.Context, cache string) (string, error) {
	root := im.RootDir(cache)
	if fi, err := os.Stat(root); err == nil && fi.IsDir() {
		return root, nil
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(cache, "unpack-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	tmpRoot := filepath.Join(tmp, "rootfs")
	if err := os.Mkdir(tmpRoot, 0o755); err != nil {
		return "", err
	}
	for i, l := range im.layers {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		if err := im.applyLayer(tmpRoot, l); err != nil {
			return "", fmt.Errorf("%s: layer %d (%s): %w", im.Ref, i, l.name, err)
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, filepath.Dir(root)); err != nil {
		if fi, serr := os.Stat(root); serr == nil && fi.IsDir() {
			return root, nil // another campaign's, just finished
		}
		return "", err
	}
	return root, nil
}

// applyLayer unpacks one layer blob onto root.
func (im *Image) applyLayer(root string, l layer) error {
	blob, err := im.src.open(l.name)
	if err != nil {
		return err
	}
	defer blob.Close()
	var in io.Reader = blob
	var verifier digest.Verifier
	if l.digest != "" {
		verifier = l.digest.Verifier()
		in = io.TeeReader(blob, verifier)
	}
	br := bufio.NewReader(in)
	magic, _ := br.Peek(4)
	var tr *tar.Reader
	switch {
	case bytes.HasPrefix(magic, []byte{0x1f, 0x8b}):
		zr, err := gzip.NewReader(br)
		if err != nil {
			return err
		}
		defer zr.Close()
		tr = tar.NewReader(zr)
	case bytes.Equal(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return errors.New("zstd-compressed layers are not supported: save the image with gzip or uncompressed layers")
	default:
		tr = tar.NewReader(br)
	}
	written := map[string]bool{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if err := applyEntry(root, h, tr, written); err != nil {
			return fmt.Errorf("%s: %w", h.Name, err)
		}
	}
	if verifier != nil {
		// The tar reader may stop before the blob's padding ends.
		if _, err := io.Copy(io.Discard, br); err != nil {
			return err
		}
		if !verifier.Verified() {
			return fmt.Errorf("the blob does not match its digest %s", l.digest)
		}
	}
	return nil
}

// applyEntry writes one tar entry under root. Paths resolve inside root
// (a layer's symlink to /etc leads to the image's /etc, never the
// host's); the entry itself replaces whatever the layers below left at
// its name.
func applyEntry(root string, h *tar.Header, r io.Reader, written map[string]bool) error {
	name := path.Clean("/" + h.Name)
	if name == "/" {
		return nil
	}
	dir, base := path.Split(name)
	parent, err := securejoin.SecureJoin(root, dir)
	if err != nil {
		return err
	}
	if base == whiteoutOpaque {
		return clearOpaque(parent, written)
	}
	if hidden, ok := strings.CutPrefix(base, whiteoutPrefix); ok {
		return os.RemoveAll(filepath.Join(parent, hidden))
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	target := filepath.Join(parent, base)
	for p := target; p != root && len(p) > len(root); p = filepath.Dir(p) {
		written[p] = true
	}
	attrs, err := createEntry(root, target, h, r)
	if err != nil || !attrs {
		return err
	}
	return setAttrs(target, h)
}

// clearOpaque empties dir of what the layers below left there (an opaque
// whiteout), but for what this layer wrote.
func clearOpaque(dir string, written map[string]bool) error {
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, e := range ents {
		if p := filepath.Join(dir, e.Name()); !written[p] {
			if err := os.RemoveAll(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// createEntry makes at target the file, directory, link or fifo h names,
// in place of what was there (a directory stays, and keeps what it
// holds, when h is one too). It says whether h's owner, mode and times
// are the new entry's to take: not a hard link's (its target's inode),
// nor anything it skips.
func createEntry(root, target string, h *tar.Header, r io.Reader) (bool, error) {
	fi, statErr := os.Lstat(target)
	isDir := statErr == nil && fi.IsDir()
	if statErr == nil && !(h.Typeflag == tar.TypeDir && isDir) {
		if err := os.RemoveAll(target); err != nil {
			return false, err
		}
	}
	switch h.Typeflag {
	case tar.TypeDir:
		if !isDir {
			return true, os.Mkdir(target, 0o755)
		}
		return true, nil
	case tar.TypeReg:
		return true, writeNew(target, r)
	case tar.TypeSymlink:
		return true, os.Symlink(h.Linkname, target)
	case tar.TypeLink:
		src, err := securejoin.SecureJoin(root, h.Linkname)
		if err != nil {
			return false, err
		}
		return false, os.Link(src, target)
	case tar.TypeFifo:
		return true, unix.Mkfifo(target, 0o600)
	}
	return false, nil // devices (lockstep makes the node's /dev), headers
}

// writeNew creates the file target, which must not exist, with what r
// holds.
func writeNew(target string, r io.Reader) error {
	f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// setAttrs gives the entry at target h's owner (when lockstep may: as
// root), mode and modification time.
func setAttrs(target string, h *tar.Header) error {
	if err := os.Lchown(target, h.Uid, h.Gid); err != nil && os.Geteuid() == 0 {
		return err
	}
	if h.Typeflag != tar.TypeSymlink {
		// After chown, which clears set-user-ID bits.
		mode := h.FileInfo().Mode()
		if err := os.Chmod(target, mode&(os.ModePerm|os.ModeSetuid|os.ModeSetgid|os.ModeSticky)); err != nil {
			return err
		}
	}
	if h.Typeflag != tar.TypeDir {
		ts := []unix.Timespec{unix.NsecToTimespec(h.ModTime.UnixNano()), unix.NsecToTimespec(h.ModTime.UnixNano())}
		unix.UtimesNanoAt(unix.AT_FDCWD, target, ts, unix.AT_SYMLINK_NOFOLLOW)
	}
	return nil
}
