package callsite

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSharedSymbols: caches that share a store read a module's symbols
// once, through any root; a file of the same path replaced between them
// (another inode, another length) is read again.
func TestSharedSymbols(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	shared := NewSymbols()
	first := NewSharedCache(shared).symbols(exe, "")
	if first == nil || len(first.addrs) == 0 {
		t.Fatalf("no symbols read from %s", exe)
	}
	// Another trial's process reaches the same file through its root.
	if again := NewSharedCache(shared).symbols(exe, "/proc/self/root"); again != first {
		t.Error("a second cache read the module again")
	}
	if own := NewCache().symbols(exe, ""); own == first {
		t.Error("a cache of its own took the store's table")
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	other := filepath.Join(dir, "bin")
	if err := os.WriteFile(other, b, 0o755); err != nil {
		t.Fatal(err)
	}
	firstOther := NewSharedCache(shared).symbols(other, "")
	if err := os.Remove(other); err != nil {
		t.Fatal(err)
	}
	// A rebuilt binary at the same path: the inode number may come back,
	// the length does not.
	if err := os.WriteFile(other, append(b, 0), 0o755); err != nil {
		t.Fatal(err)
	}
	if replaced := NewSharedCache(shared).symbols(other, ""); replaced == firstOther {
		t.Error("the replaced file's symbols came from the store")
	}
}
