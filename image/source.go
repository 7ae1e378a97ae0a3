package image

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
)

// dirSource reads an unpacked layout directory.
type dirSource string

func (d dirSource) open(name string) (io.ReadCloser, error) {
	clean := path.Clean("/" + name)[1:]
	f, err := os.Open(filepath.Join(string(d), filepath.FromSlash(clean)))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: missing from the image", name)
	}
	return f, err
}

// tarSource reads files out of an archive: each open scans it from the
// start (a seekable file makes skipping over large layers cheap).
type tarSource string

func (t tarSource) open(name string) (io.ReadCloser, error) {
	return t.openDepth(name, 0)
}

func (t tarSource) openDepth(name string, depth int) (io.ReadCloser, error) {
	f, err := os.Open(string(t))
	if err != nil {
		return nil, err
	}
	want := path.Clean("/" + name)
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			f.Close()
			return nil, fmt.Errorf("%s: missing from the archive", name)
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("reading the archive: %w", err)
		}
		if path.Clean("/"+h.Name) == want && h.Typeflag == tar.TypeReg {
			return struct {
				io.Reader
				io.Closer
			}{tr, f}, nil
		}
		// Archives store a layer listed twice once, the other a link.
		if path.Clean("/"+h.Name) == want && (h.Typeflag == tar.TypeSymlink || h.Typeflag == tar.TypeLink) && depth < 8 {
			f.Close()
			target := h.Linkname
			if h.Typeflag == tar.TypeSymlink {
				target = path.Join(path.Dir(want), target)
			}
			return t.openDepth(target, depth+1)
		}
	}
}
