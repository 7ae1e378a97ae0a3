package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/internal/safefs"
)

// trialFiles is how lockstep writes its own files (the nodes' output,
// threads.txt, checker.out, history.html, trace.jsonl) into a trial's
// directory, which the trial's nodes can write too: through the
// directory's descriptor, opened before any node ran, and through no link
// (package safefs). A name a node took first with something lockstep must
// not write through (a symbolic link to a host file, a directory, a FIFO)
// costs neither the host's file nor the campaign: the file goes beside the
// directory instead, out of every node's reach (trials/NNNNN.NAME), and a
// note says so in the trial's outcome.
type trialFiles struct {
	dir   *safefs.Dir
	notes []string
}

// openTrialFiles opens the trial's directory path, which lockstep has
// just made.
func openTrialFiles(path string) (*trialFiles, error) {
	d, err := safefs.OpenDir(path)
	if err != nil {
		return nil, fmt.Errorf("opening the trial's directory: %w", err)
	}
	return &trialFiles{dir: d}, nil
}

func (tf *trialFiles) close() {
	if tf != nil {
		tf.dir.Close()
	}
}

// create creates (or truncates) name in the trial's directory for
// lockstep to write, or beside it when a node took the name (see
// trialFiles); err is the write's failure in both places, or in the
// trial's directory alone when no node caused it (a full disk).
func (tf *trialFiles) create(name string) (*os.File, error) {
	f, err := tf.dir.Create(name)
	if err == nil {
		return f, nil
	}
	if !planted(err) {
		return nil, err
	}
	what := tf.dir.Kind(name)
	aside := filepath.Base(tf.dir.Path()) + "." + name
	parent, perr := safefs.OpenDir(filepath.Dir(tf.dir.Path()))
	if perr != nil {
		return nil, fmt.Errorf("%w (and beside the trial's directory: %w)", err, perr)
	}
	defer parent.Close()
	f, aerr := parent.Create(aside)
	if aerr != nil {
		return nil, fmt.Errorf("%w (and beside the trial's directory: %w)", err, aerr)
	}
	if what == "" {
		what = "something"
	}
	tf.notes = append(tf.notes, fmt.Sprintf("a node left %s at %s in the trial's directory, which lockstep does not write through: it wrote %s instead",
		what, name, f.Name()))
	return f, nil
}

// planted reports whether an open through safefs failed for what a node
// can have put at the name: a link, a directory, a FIFO or a socket.
func planted(err error) bool {
	for _, e := range []error{unix.ELOOP, unix.EISDIR, unix.ENOTDIR, unix.ENXIO, unix.EXDEV, safefs.ErrNotRegular} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// writeFile writes b to name (see create) and returns where it went.
func (tf *trialFiles) writeFile(name string, b []byte) (string, error) {
	f, err := tf.create(name)
	if err != nil {
		return "", err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return f.Name(), err
}

// output opens a node's output file (NODE.out, NODE.err) for appending:
// once per trial, before any node starts, so in a directory no node has
// written yet; a restart appends to the same open file.
func (tf *trialFiles) output(name string) (*os.File, error) {
	return tf.dir.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
}

// open opens name below the trial's directory for reading, through no
// link: a node's history linked to a host file is not read.
func (tf *trialFiles) open(name string) (*os.File, error) {
	return tf.dir.Open(name)
}
