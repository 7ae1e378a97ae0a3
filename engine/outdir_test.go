package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrepareOut: a previous run's trials in an --out given explicitly
// are refused unless replace says so; the default directory is replaced;
// an empty or new directory is used as it is.
func TestPrepareOut(t *testing.T) {
	for _, tc := range []struct {
		name              string
		previous          bool
		explicit, replace bool
		wantErr           error
		trialsLeft        bool
	}{
		{"new directory", false, true, false, nil, false},
		{"previous run, --out", true, true, false, ErrOutHoldsRun, true},
		{"previous run, --out --replace", true, true, true, nil, false},
		{"previous run, the default directory", true, false, false, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			other := filepath.Join(dir, "notes.txt") // not lockstep's: never removed
			os.WriteFile(other, []byte("mine"), 0o644)
			if tc.previous {
				os.MkdirAll(filepath.Join(dir, "trials", "00007"), 0o755)
				os.WriteFile(filepath.Join(dir, "trials", "00007", "trace.jsonl"), []byte("{}\n"), 0o644)
			}
			err := prepareOut(dir, tc.explicit, tc.replace)
			if !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if err != nil && (strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "--replace")) {
				t.Errorf("error %q: want one line that names --replace", err)
			}
			if _, err := os.Stat(filepath.Join(dir, "trials")); (err == nil) != tc.trialsLeft {
				t.Errorf("trials/ left: %v, want %v", err == nil, tc.trialsLeft)
			}
			if _, err := os.Stat(other); err != nil {
				t.Errorf("a file of the user's was removed: %v", err)
			}
		})
	}
}

// TestLockOut: while a campaign holds an output directory, a second one
// is refused with the holder's pid; once released it may take it.
func TestLockOut(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	l1, err := lockOut(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = lockOut(dir)
	if !errors.Is(err, ErrOutInUse) || !strings.Contains(err.Error(), "(pid ") {
		t.Fatalf("second lock: %v, want %v naming the holder", err, ErrOutInUse)
	}
	l1.unlock()
	l2, err := lockOut(dir)
	if err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	l2.unlock()
}
