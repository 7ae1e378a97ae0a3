package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lockstep-dev/lockstep/internal/safefs"
	"golang.org/x/sys/unix"
)

// lockName is the lock file of an output directory: a campaign holds an
// exclusive flock on it while it writes there, so that a second one
// pointed at the same directory fails at once instead of mixing its
// trials with the first's (and blaming a node for what followed).
const lockName = ".lockstep.lock"

// ErrOutInUse: another lockstep process holds the output directory.
var ErrOutInUse = errors.New("in use by another lockstep campaign")

// ErrOutHoldsRun: the output directory holds a previous run's trials.
var ErrOutHoldsRun = errors.New("holds a previous run")

// outLock is a held output directory.
type outLock struct{ f *os.File }

// lockOut creates dir if needed and takes its lock.
func lockOut(dir string) (*outLock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	path := filepath.Join(dir, lockName)
	// Through no link: the directory may be a replay's beside a trace, in
	// the trial's directory, where a node could have left one.
	d, err := safefs.OpenDir(dir)
	if err != nil {
		return nil, fmt.Errorf("output directory %s: %w", dir, err)
	}
	f, err := d.OpenFile(lockName, os.O_RDWR|os.O_CREATE, 0o644)
	what := d.Kind(lockName)
	d.Close()
	if err != nil {
		if what != "" && what != "a regular file" {
			return nil, fmt.Errorf("output directory %s: %w (%s, which lockstep does not write through): choose an output directory (--out)", dir, err, what)
		}
		return nil, fmt.Errorf("output directory %s: %w", dir, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		holder := ""
		if b, rerr := os.ReadFile(path); rerr == nil {
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
				holder = fmt.Sprintf(" (pid %d)", pid)
			}
		}
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("output directory %s: %w%s: give each campaign its own --out", dir, ErrOutInUse, holder)
		}
		return nil, fmt.Errorf("locking output directory %s: %w", dir, err)
	}
	// Who holds it, for the message a second campaign gets.
	f.Truncate(0)
	f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return &outLock{f: f}, nil
}

// unlock releases the directory (the lock file stays: removing it would
// race with a campaign opening it).
func (l *outLock) unlock() {
	if l != nil && l.f != nil {
		l.f.Close()
		l.f = nil
	}
}

// clearTrial removes what an earlier run left of trial directory dir: its
// {{tmp}} mounts, the directory, and what lockstep keeps beside it (image
// nodes' writable layers, files a node's names displaced: dir.*).
func clearTrial(dir string) error {
	if err := unmountStale(dir); err != nil {
		return fmt.Errorf("clearing %s: %w", dir, err)
	}
	aside, _ := filepath.Glob(dir + ".*")
	for _, p := range append(aside, dir) {
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("clearing %s: %w", p, err)
		}
	}
	return nil
}

// prepareOut readies a locked output directory for a campaign. A previous
// run's trials there are refused when the directory was given explicitly
// (a user's --out), unless replace says to remove them; lockstep's own
// default directory is replaced. Either way no trial of an earlier run is
// left to mix with this one's.
func prepareOut(dir string, explicit, replace bool) error {
	trials := filepath.Join(dir, "trials")
	if _, err := os.Lstat(trials); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if explicit && !replace {
		return fmt.Errorf("output directory %s %w (its trials/): choose another --out, or pass --replace to remove that run first", dir, ErrOutHoldsRun)
	}
	// The trials, and the replays --verify kept of them (verify/trials).
	for _, d := range []string{trials, filepath.Join(dir, "verify")} {
		if err := unmountStale(d); err != nil {
			return fmt.Errorf("removing the previous run's trials from %s: %w", dir, err)
		}
		if err := os.RemoveAll(d); err != nil {
			return fmt.Errorf("removing the previous run's trials from %s: %w", dir, err)
		}
	}
	return nil
}

// OutBelowTrace readies out/sub for runs of the trial of the trace at
// trace when out lies in the trace's directory (a replay's or explain's
// default). That is the trial's directory, which its nodes could write: a
// link they left there would take lockstep's lock file, trial directories
// and the clearing of them to a host directory. So each directory on the
// way is made or found through no link (package safefs), and anything else
// a node left there is refused. An out elsewhere is the user's.
func OutBelowTrace(trace, out, sub string) error {
	dir, err := filepath.Abs(filepath.Dir(trace))
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(dir, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil
	}
	d, err := safefs.MkdirBelow(dir, filepath.Join(rel, sub), 0o755)
	if err != nil {
		return fmt.Errorf("%w; %s lies in the trial's directory, where its nodes could have left that, and lockstep does not write through it: choose an output directory (--out)", err, out)
	}
	return d.Close()
}
