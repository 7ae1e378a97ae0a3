// Package safefs opens files in directories a node can write without
// following what a node may have put there: every name is resolved
// relative to a directory descriptor lockstep opened itself, by the
// kernel (openat2 with RESOLVE_BENEATH, RESOLVE_NO_SYMLINKS and
// RESOLVE_NO_MAGICLINKS), so that a symbolic link or a ".." a node planted
// fails the open instead of taking lockstep, which runs as root, to a file
// of the host's. Only regular
// files are opened: a FIFO, device or directory in a file's place is
// refused with ErrNotRegular (a FIFO without ever blocking). Directories
// lockstep makes where a node could have written first (a replay's output
// beside a trial's trace) are made the same way, one at a time (MkdirBelow).
//
// It is a leaf: every package that writes, truncates or appends where a
// node can (the trial's directory, a node's data paths) goes through it,
// and it imports no other lockstep package.
package safefs
