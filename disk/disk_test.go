package disk

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// node plays a node's process: it tells the books of each call, as the
// tracer would at its stop, then makes the call on real files in a data
// directory of its own.
type node struct {
	t    *testing.T
	b    *Books
	root string
	pid  int
	lost []Lost // the last cut's
}

func newNode(t *testing.T) *node {
	root := t.TempDir()
	b := New([]string{root}, filepath.Dir(root), false)
	t.Cleanup(b.Close)
	return &node{t: t, b: b, root: root, pid: os.Getpid()}
}

func (n *node) path(name string) string { return filepath.Join(n.root, name) }

func (n *node) before(c Call) Answer {
	c.Pid = n.pid
	return n.b.Before(c)
}

// create makes a file with content, and makes it and its name durable.
func (n *node) create(name, content string) *os.File {
	f, err := os.OpenFile(n.path(name), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		n.t.Fatal(err)
	}
	n.write(f, content)
	n.fsync(f)
	n.fsyncDir()
	return f
}

func (n *node) write(f *os.File, s string) {
	if a := n.before(Call{Op: OpWrite, Fd: int(f.Fd()), Off: -1, Len: int64(len(s))}); a != (Answer{}) {
		n.t.Fatalf("write answered %+v", a)
	}
	if _, err := f.Write([]byte(s)); err != nil {
		n.t.Fatal(err)
	}
}

func (n *node) pwrite(f *os.File, s string, off int64) {
	n.before(Call{Op: OpWrite, Fd: int(f.Fd()), Off: off, Len: int64(len(s))})
	if _, err := f.WriteAt([]byte(s), off); err != nil {
		n.t.Fatal(err)
	}
}

func (n *node) fsync(f *os.File) {
	n.before(Call{Op: OpSync, Fd: int(f.Fd()), SyscallName: "fsync"})
	if err := f.Sync(); err != nil {
		n.t.Fatal(err)
	}
}

func (n *node) fsyncDir() {
	d, err := os.Open(n.root)
	if err != nil {
		n.t.Fatal(err)
	}
	defer d.Close()
	n.fsync(d)
}

func (n *node) rename(from, to string) {
	n.before(Call{Op: OpRename, Dirfd: unix.AT_FDCWD, Path: n.path(from), Dirfd2: unix.AT_FDCWD, Path2: n.path(to)})
	if err := os.Rename(n.path(from), n.path(to)); err != nil {
		n.t.Fatal(err)
	}
}

func (n *node) cut(persist string, pick uint64) string {
	what, lost, err := n.b.Cut(persist, pick)
	if err != nil {
		n.t.Fatal(err)
	}
	n.lost = lost
	return what
}

func (n *node) read(name string) string {
	b, err := os.ReadFile(n.path(name))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func (n *node) exists(name string) bool {
	_, err := os.Lstat(n.path(name))
	return err == nil
}

// TestPowerLosesUnsyncedWrites: a power cut undoes the writes no fsync
// covered (overwrites and appends), keeps the synced ones, and keeps a
// write to an O_DSYNC file.
func TestPowerLosesUnsyncedWrites(t *testing.T) {
	n := newNode(t)
	f := n.create("a", "synced.")
	n.write(f, "lost")        // append
	n.pwrite(f, "XX", 0)      // overwrite
	g := n.create("b", "b1.") // synced
	n.write(g, "b2.")         // synced below
	n.fsync(g)                //
	n.write(g, "b3")          // lost
	h, err := os.OpenFile(n.path("c"), os.O_RDWR|os.O_CREATE|unix.O_DSYNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	n.fsyncDir()
	n.write(h, "dsync")
	f.Close()
	g.Close()
	h.Close()
	if got := n.cut(PersistNone, 1); got != "kept 0 of 3 unsynced changes" {
		t.Errorf("cut: %s", got)
	}
	for name, want := range map[string]string{"a": "synced.", "b": "b1.b2.", "c": "dsync"} {
		if got := n.read(name); got != want {
			t.Errorf("%s holds %q, want %q", name, got, want)
		}
	}
	if n.b.Pending() != 0 {
		t.Errorf("%d changes pending after the cut", n.b.Pending())
	}
}

// TestPowerNamesLostWrites: a cut lists the writes it took back, in
// program order, each with the bytes it had written (not those it
// overwrote), and no write it kept: with any persistence, the bytes a
// write put in the file are in it after the cut exactly when the write
// is not listed.
func TestPowerNamesLostWrites(t *testing.T) {
	n := newNode(t)
	f := n.create("a", "synced.")
	n.write(f, "lost")   // append
	n.pwrite(f, "XX", 0) // overwrite
	f.Close()
	n.cut(PersistNone, 1)
	rel := filepath.Base(n.root) + "/a"
	want := []Lost{{Path: rel, Off: 7, Len: 4, Data: []byte("lost")}, {Path: rel, Off: 0, Len: 2, Data: []byte("XX")}}
	if len(n.lost) != len(want) {
		t.Fatalf("lost %+v, want %+v", n.lost, want)
	}
	for i := range want {
		if g := n.lost[i]; g.Path != want[i].Path || g.Off != want[i].Off || g.Len != want[i].Len || string(g.Data) != string(want[i].Data) {
			t.Errorf("lost[%d] = %+v, want %+v", i, g, want[i])
		}
	}

	for _, tc := range []struct {
		persist string
		picks   uint64
	}{{PersistNone, 1}, {PersistAll, 1}, {PersistPrefix, 20}, {PersistSubset, 20}} {
		for pick := range tc.picks {
			n := newNode(t)
			f := n.create("log", "")
			const writes = "123456"
			for _, c := range writes {
				n.write(f, string(c))
			}
			f.Close()
			n.cut(tc.persist, pick)
			got := n.read("log")
			lost := map[int64]bool{}
			for i, l := range n.lost {
				if i > 0 && l.Off <= n.lost[i-1].Off {
					t.Errorf("%s %d: lost out of program order: %+v", tc.persist, pick, n.lost)
				}
				if l.Len != 1 || string(l.Data) != writes[l.Off:l.Off+1] {
					t.Errorf("%s %d: lost %+v, not the byte written at %d", tc.persist, pick, l, l.Off)
				}
				lost[l.Off] = true
			}
			for off := range int64(len(writes)) {
				kept := off < int64(len(got)) && got[off] == writes[off]
				if kept == lost[off] {
					t.Errorf("%s %d: the log holds %q, lost %+v: the write at %d kept %v, listed %v", tc.persist, pick, got, n.lost, off, kept, lost[off])
				}
			}
		}
	}
}

// TestPowerUndoesNames: a creation, a rename over a file and an unlink
// not followed by an fsync of their directory are undone; those followed
// by one are kept.
func TestPowerUndoesNames(t *testing.T) {
	n := newNode(t)
	n.create("old", "old content").Close()
	n.create("gone", "unlinked").Close()
	n.create("kept", "k").Close()
	// A new file written, synced, renamed over "old": the file's fsync
	// does not make the rename durable.
	n.before(Call{Op: OpOpen, Dirfd: unix.AT_FDCWD, Path: n.path("tmp"), Flags: os.O_RDWR | os.O_CREATE | os.O_EXCL})
	f, err := os.OpenFile(n.path("tmp"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	n.write(f, "new content")
	n.fsync(f)
	f.Close()
	n.rename("tmp", "old")
	n.before(Call{Op: OpUnlink, Dirfd: unix.AT_FDCWD, Path: n.path("gone")})
	if err := os.Remove(n.path("gone")); err != nil {
		t.Fatal(err)
	}
	n.before(Call{Op: OpMkdir, Dirfd: unix.AT_FDCWD, Path: n.path("sub")})
	if err := os.Mkdir(n.path("sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	n.cut(PersistNone, 1)
	if got := n.read("old"); got != "old content" {
		t.Errorf("old holds %q after the cut, want its content before the rename", got)
	}
	if n.exists("tmp") || n.exists("sub") {
		t.Errorf("names created without a directory fsync survived (tmp %v, sub %v)", n.exists("tmp"), n.exists("sub"))
	}
	if got := n.read("gone"); got != "unlinked" {
		t.Errorf("the unlinked file holds %q, want it back", got)
	}

	// The same rename followed by an fsync of the directory survives.
	g, _ := os.Create(n.path("tmp2"))
	n.write(g, "renamed")
	n.fsync(g)
	g.Close()
	n.fsyncDir() // tmp2's creation
	n.rename("tmp2", "kept")
	n.fsyncDir()
	n.cut(PersistNone, 1)
	if got := n.read("kept"); got != "renamed" || n.exists("tmp2") {
		t.Errorf("kept holds %q (tmp2 there: %v), want the durable rename", got, n.exists("tmp2"))
	}
}

// TestPowerPersistence: all keeps everything, a prefix keeps the first k
// changes, a subset the same for the same pick.
func TestPowerPersistence(t *testing.T) {
	run := func(persist string, pick uint64) (string, string) {
		n := newNode(t)
		f := n.create("log", "")
		for _, s := range []string{"1", "2", "3", "4", "5", "6"} {
			n.write(f, s)
		}
		f.Close()
		what := n.cut(persist, pick)
		return n.read("log"), what
	}
	if got, _ := run(PersistAll, 1); got != "123456" {
		t.Errorf("all: %q", got)
	}
	for pick := range uint64(20) {
		got, what := run(PersistPrefix, pick)
		if !strings.HasPrefix("123456", got) || what != "kept "+string(rune('0'+len(got)))+" of 6 unsynced changes" {
			t.Errorf("prefix %d: %q (%s)", pick, got, what)
		}
	}
	seen := map[string]bool{}
	for pick := range uint64(20) {
		got, _ := run(PersistSubset, pick)
		again, _ := run(PersistSubset, pick)
		if got != again {
			t.Errorf("subset %d: %q then %q", pick, got, again)
		}
		// Appends kept out of order leave holes: each byte is its own
		// write's or zero.
		for i, c := range []byte(got) {
			if c != 0 && c != "123456"[i] {
				t.Errorf("subset %d: %q", pick, got)
			}
		}
		seen[got] = true
	}
	if len(seen) < 3 {
		t.Errorf("subsets drew only %d outcomes in 20 picks", len(seen))
	}
}

// TestCorrupt: a flip changes exactly one bit of one written file; a
// tail cut leaves a prefix of it.
func TestCorrupt(t *testing.T) {
	content := strings.Repeat("lockstep", 64)
	for pick := range uint64(10) {
		n := newNode(t)
		n.create("f", content).Close()
		what, _, err := n.b.Corrupt(CorruptFlip, pick, Spot{})
		if err != nil {
			t.Fatal(err)
		}
		got := n.read("f")
		diff := 0
		for i := range len(content) {
			x := got[i] ^ content[i]
			for ; x != 0; x &= x - 1 {
				diff++
			}
		}
		if len(got) != len(content) || diff != 1 || !strings.HasPrefix(what, "flipped bit ") {
			t.Errorf("pick %d: %d bits differ (%s)", pick, diff, what)
		}
		if _, _, err := n.b.Corrupt(CorruptTail, pick, Spot{}); err != nil {
			t.Fatal(err)
		}
		if cut := n.read("f"); len(cut) >= len(got) || !strings.HasPrefix(got, cut) {
			t.Errorf("pick %d: tail cut left %d of %d bytes", pick, len(cut), len(got))
		}
	}
}

// TestCorruptKeepsItsFile: a corruption forced with the spot it hit (its
// trace's file and place) damages that file there again, though the node
// wrote other files as well, before and after it, or wrote it longer (a
// file of one entry per peer the node knew then), which would move the
// draw; where the file is too short for the spot, or the node did not
// write it, the draw decides as before.
func TestCorruptKeepsItsFile(t *testing.T) {
	content := strings.Repeat("lockstep", 64)
	for _, how := range []string{CorruptFlip, CorruptTail} {
		for pick := range uint64(10) {
			first := newNamedNode(t, "n3")
			first.create("a", content).Close()
			first.create("b", content).Close()
			what, spot, err := first.b.Corrupt(how, pick, Spot{})
			if err != nil {
				t.Fatal(err)
			}
			base := spot.File[strings.LastIndexByte(spot.File, '/')+1:]
			// The other run wrote three more files, before and between.
			other := newNamedNode(t, "n3")
			other.create("x", content).Close()
			other.create("a", content).Close()
			other.create("y", content).Close()
			other.create("z", content).Close()
			other.create("b", content).Close()
			again, spot2, err := other.b.Corrupt(how, pick, spot)
			if err != nil {
				t.Fatal(err)
			}
			if spot2 != spot || again != what {
				t.Errorf("%s, pick %d: %q at %v then, forced there, %q at %v", how, pick, what, spot, again, spot2)
			}
			if first.read(base) != other.read(base) {
				t.Errorf("%s, pick %d: %s damaged otherwise the second time", how, pick, base)
			}
			// The third run wrote the file twice as long: the same spot.
			longer := newNamedNode(t, "n3")
			longer.create("a", content+content).Close()
			longer.create("b", content+content).Close()
			if _, spot3, err := longer.b.Corrupt(how, pick, spot); err != nil || spot3 != spot {
				t.Errorf("%s, pick %d: forced at %v onto a longer file, struck %v (%v)", how, pick, spot, spot3, err)
			}
			// Too short for the spot: drawn within its one byte.
			short := newNamedNode(t, "n3")
			short.create(base, "x").Close()
			within := map[string]func(string) bool{
				CorruptFlip: func(at string) bool { return strings.HasPrefix(at, "0.") },
				CorruptTail: func(at string) bool { return at == "0" },
			}[how]
			if _, spot4, err := short.b.Corrupt(how, pick, spot); err != nil || spot4.File != spot.File || !within(spot4.At) {
				t.Errorf("%s, pick %d: forced at %v onto a 1-byte file, struck %v (%v)", how, pick, spot, spot4, err)
			}
			alone := newNamedNode(t, "n3")
			alone.create("a", content).Close()
			if _, drawn, err := alone.b.Corrupt(how, pick, Spot{File: "n3/gone", At: spot.At}); err != nil || drawn.File != "n3/a" {
				t.Errorf("%s, pick %d: forced onto a file the node did not write: %v, %v", how, pick, drawn, err)
			}
		}
	}
}

// newNamedNode is newNode with its data directory named name, so that
// two nodes show their files by the same names (as a node's are in every
// trial: "n3/js/..."), not by their temporary directories'.
func newNamedNode(t *testing.T, name string) *node {
	root := filepath.Join(t.TempDir(), name)
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	b := New([]string{root}, filepath.Dir(root), false)
	t.Cleanup(b.Close)
	return &node{t: t, b: b, root: root, pid: os.Getpid()}
}

// TestArmed: an armed ioerror fails the next call of its kind on a data
// file once, and a stall answers the next fsync.
func TestArmed(t *testing.T) {
	n := newNode(t)
	f := n.create("f", "x")
	defer f.Close()
	var hits []string
	hit := func(s string) { hits = append(hits, s) }
	n.b.Arm("fsync", syscall.EIO, 0, hit)
	n.write(f, "y") // not a fsync: runs
	if a := n.before(Call{Op: OpSync, Fd: int(f.Fd()), SyscallName: "fdatasync"}); a.Errno != syscall.EIO {
		t.Errorf("armed fsync answered %+v", a)
	}
	if a := n.before(Call{Op: OpSync, Fd: int(f.Fd()), SyscallName: "fsync"}); a != (Answer{}) {
		t.Errorf("second fsync answered %+v", a)
	}
	n.b.Arm("", 0, 30*time.Millisecond, hit)
	if a := n.before(Call{Op: OpSync, Fd: int(f.Fd()), SyscallName: "fsync"}); a.Stall != 30*time.Millisecond {
		t.Errorf("stalled fsync answered %+v", a)
	}
	n.b.Arm("write", syscall.ENOSPC, 0, hit)
	if a := n.before(Call{Op: OpWrite, Fd: 1, Len: 1}); a != (Answer{}) {
		t.Errorf("a write outside the data paths answered %+v", a)
	}
	if a := n.before(Call{Op: OpWrite, Fd: int(f.Fd()), Off: -1, Len: 1, SyscallName: "write"}); a.Errno != syscall.ENOSPC {
		t.Errorf("armed write answered %+v", a)
	}
	base := filepath.Base(n.root)
	want := []string{"fdatasync of " + base + "/f failed with EIO", "fsync of " + base + "/f took 30ms", "write of " + base + "/f failed with ENOSPC"}
	if strings.Join(hits, "|") != strings.Join(want, "|") {
		t.Errorf("hits %q, want %q", hits, want)
	}
	if !bytes.Equal([]byte(n.read("f")), []byte("xy")) {
		t.Errorf("f holds %q", n.read("f"))
	}
}

// TestPowerRenamedDirectory: names made in a directory that was renamed
// afterwards (etcd's wal.tmp, renamed to wal) are undone where the
// directory is now, and an fsync of it under its new name makes them
// durable.
func TestPowerRenamedDirectory(t *testing.T) {
	for _, synced := range []bool{false, true} {
		n := newNode(t)
		if err := os.Mkdir(n.path("wal.tmp"), 0o755); err != nil {
			t.Fatal(err)
		}
		n.fsyncDir()
		n.before(Call{Op: OpOpen, Dirfd: unix.AT_FDCWD, Path: n.path("wal.tmp/0.wal"), Flags: os.O_CREATE | os.O_WRONLY})
		f, err := os.OpenFile(n.path("wal.tmp/0.wal"), os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		n.write(f, "record")
		n.fsync(f)
		f.Close()
		n.rename("wal.tmp", "wal")
		n.fsyncDir()
		if synced {
			d, _ := os.Open(n.path("wal"))
			n.fsync(d)
			d.Close()
		}
		n.cut(PersistNone, 1)
		if !n.exists("wal") || n.exists("wal.tmp") {
			t.Fatalf("synced %v: the durable rename of the directory was undone", synced)
		}
		if got := n.exists("wal/0.wal"); got != synced {
			t.Errorf("synced %v: wal/0.wal there: %v", synced, got)
		}
	}
}

// TestPowerJournalNames: with journal, an fsync of a file makes every
// name change before it durable, the creation of a directory included;
// the data of other files stays unsynced.
func TestPowerJournalNames(t *testing.T) {
	root := t.TempDir()
	b := New([]string{root}, filepath.Dir(root), true)
	t.Cleanup(b.Close)
	n := &node{t: t, b: b, root: root, pid: os.Getpid()}
	n.before(Call{Op: OpMkdir, Dirfd: unix.AT_FDCWD, Path: n.path("member")})
	if err := os.Mkdir(n.path("member"), 0o755); err != nil {
		t.Fatal(err)
	}
	other, _ := os.Create(n.path("other"))
	n.write(other, "unsynced")
	n.before(Call{Op: OpOpen, Dirfd: unix.AT_FDCWD, Path: n.path("member/wal"), Flags: os.O_CREATE | os.O_WRONLY})
	f, err := os.OpenFile(n.path("member/wal"), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	n.write(f, "record")
	n.fsync(f)
	f.Close()
	other.Close()
	n.before(Call{Op: OpOpen, Dirfd: unix.AT_FDCWD, Path: n.path("late"), Flags: os.O_CREATE | os.O_WRONLY})
	late, _ := os.Create(n.path("late"))
	late.Close()
	n.cut(PersistNone, 1)
	if got := n.read("member/wal"); got != "record" {
		t.Errorf("member/wal holds %q after the cut, want the synced record under its journaled name", got)
	}
	if got := n.read("other"); got != "" {
		t.Errorf("other holds %q: its data was never synced", got)
	}
	if n.exists("late") {
		t.Error("a file created after the last fsync survived")
	}
}

// TestPowerTorn: a torn cut keeps a prefix of the changes and the write
// after it up to a sector boundary of the file inside it.
func TestPowerTorn(t *testing.T) {
	torn := 0
	for pick := range uint64(30) {
		n := newNode(t)
		f := n.create("log", "")
		a, bb := strings.Repeat("a", 1000), strings.Repeat("b", 2048)
		n.write(f, a)
		n.write(f, bb)
		f.Close()
		what := n.cut(PersistTorn, pick)
		got := n.read("log")
		switch {
		case strings.Contains(what, "next write"):
			torn++
			// Cut at 512 (in a), or at 1024, 1536, 2048 or 2560 (in b).
			if !strings.HasPrefix(a+bb, got) || len(got)%sector != 0 || len(got) == 0 || len(got) == len(a+bb) {
				t.Errorf("pick %d: %s, the log holds %d bytes", pick, what, len(got))
			}
		case got != "" && got != a && got != a+bb:
			t.Errorf("pick %d: %s, the log holds %d bytes", pick, what, len(got))
		}
	}
	if torn == 0 {
		t.Error("30 picks tore no write")
	}
}

// TestPowerNothingPending: a cut with nothing unsynced changes nothing,
// whatever the persistence.
func TestPowerNothingPending(t *testing.T) {
	for _, p := range []string{PersistNone, PersistAll, PersistPrefix, PersistSubset, PersistTorn} {
		n := newNode(t)
		n.create("f", "durable").Close()
		if what := n.cut(p, 7); what != "kept 0 of 0 unsynced changes" || n.read("f") != "durable" {
			t.Errorf("%s: %s, f holds %q", p, what, n.read("f"))
		}
	}
}

// TestPowerFollowsNoLink: a node's data directory holds a link to a
// directory of the host's; what the node does through it (here: calls the
// books see but that fail, as on the node's read-only view of the host)
// is not in the books, so the undo at a cut touches nothing of the
// host's: a file the host made since at the name the node created
// stays, as does a file the node unlinked and renamed there.
func TestPowerFollowsNoLink(t *testing.T) {
	n := newNode(t)
	host := t.TempDir()
	if err := os.Symlink(host, n.path("link")); err != nil {
		t.Fatal(err)
	}
	n.fsyncDir()
	victim := filepath.Join(host, "victim")
	if err := os.WriteFile(victim, []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	n.before(Call{Op: OpOpen, Dirfd: unix.AT_FDCWD, Path: n.path("link/made"), Flags: os.O_WRONLY | os.O_CREATE})
	n.before(Call{Op: OpMkdir, Dirfd: unix.AT_FDCWD, Path: n.path("link/dir")})
	n.before(Call{Op: OpUnlink, Dirfd: unix.AT_FDCWD, Path: n.path("link/victim")})
	n.before(Call{Op: OpRename, Dirfd: unix.AT_FDCWD, Path: n.path("link/victim"), Dirfd2: unix.AT_FDCWD, Path2: n.path("link/moved")})
	n.before(Call{Op: OpTruncate, Fd: -1, Dirfd: unix.AT_FDCWD, Path: n.path("link/victim"), Len: 0})
	if p := n.b.Pending(); p != 0 {
		t.Errorf("%d changes through the link are in the books", p)
	}
	// The host makes the names the node's calls named.
	for _, name := range []string{"made", "dir", "moved"} {
		if err := os.WriteFile(filepath.Join(host, name), []byte("host's"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n.cut(PersistNone, 1)
	for _, name := range []string{"made", "dir", "moved", "victim"} {
		if _, err := os.Lstat(filepath.Join(host, name)); err != nil {
			t.Errorf("the host's %s: %v", name, err)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "host" {
		t.Errorf("the host's file holds %q", b)
	}
}
