package disk

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The ways a power cut treats a node's unsynced changes (Cut's persist;
// spec.DiskPlan's Persist, the spec's faults.persist: package spec
// repeats these words, engine's TestSpecVocabulary checks they agree).
const (
	PersistNone   = "none"   // loses them all
	PersistAll    = "all"    // keeps them all: a cut right after the disk caught up
	PersistPrefix = "prefix" // keeps the first k of them in program order
	PersistSubset = "subset" // keeps each unsynced write or not: reordered persistence
	PersistTorn   = "torn"   // keeps a prefix and some sectors of the write after it: a torn write
)

// sector is the unit in which a torn write reaches the disk.
const sector = 512

// Lost is a write a power cut took back, for the trace: explain matches
// its bytes with the requests the node answered before the cut, to name
// an acknowledged write the node lost.
type Lost struct {
	// Path is the file as show names it (relative to the trial's
	// directory when under it).
	Path string
	// Off and Len are where the write went and how long it was; Data its
	// first bytes (at most maxLostData).
	Off, Len int64
	Data     []byte
}

// maxLostData bounds Lost's bytes: enough for a log record's header and
// the request it carries (a Redis AOF entry repeats the command as the
// client sent it, after a SELECT), not a bulk write's whole body.
const maxLostData = 512

// maxLost bounds a cut's Lost list; the first ones in program order are
// kept: the oldest write lost is the one the failure most often shows.
const maxLost = 32

// Cut undoes, after a power cut (the node's processes are gone), the
// changes that were not durable, but those that reached the disk before
// the cut: none, all, a prefix of them, a prefix and the first sectors of
// the write after it (torn), or a subset, as persist says, the prefix's
// length or the subset drawn from pick. It returns what it did, for the
// trace, with the writes it took back (torn ones included) in program
// order. Afterwards every change counts as durable.
func (b *Books) Cut(persist string, pick uint64) (string, []Lost, error) {
	p, err := b.planCut(persist, pick)
	if err != nil {
		return "", nil, err
	}
	lost, errs := b.rollBack(p, persist == PersistSubset)
	what := fmt.Sprintf("kept %d of %d unsynced changes", p.kept(), len(b.log))
	if p.torn >= 0 {
		what += fmt.Sprintf(" and %d of the next write's %d bytes", p.tornLen, b.log[p.torn].n)
	}
	b.syncAll()
	if len(errs) > 0 {
		return what, lost, fmt.Errorf("disk: undoing the unsynced changes: %w", errs[0])
	}
	return what, lost, nil
}

// cutPlan is what of the unsynced changes reached the disk before a
// power cut: keep[i] for the log's change i, and the write torn after a
// kept prefix, whose first tornLen bytes reached it (torn -1 for none).
type cutPlan struct {
	keep    []bool
	torn    int
	tornLen int64
}

// kept counts the changes the plan keeps whole.
func (p cutPlan) kept() int {
	n := 0
	for _, k := range p.keep {
		if k {
			n++
		}
	}
	return n
}

// planCut draws from pick what persist keeps of the log; it changes no
// file.
func (b *Books) planCut(persist string, pick uint64) (cutPlan, error) {
	n := len(b.log)
	p := cutPlan{keep: make([]bool, n), torn: -1}
	r := rand.New(rand.NewPCG(pick, 0x706f776572)) // "power"
	switch persist {
	case PersistAll:
		for i := range p.keep {
			p.keep[i] = true
		}
	case PersistPrefix, PersistTorn:
		k := r.IntN(n + 1)
		for i := range k {
			p.keep[i] = true
		}
		if persist == PersistTorn {
			p.torn, p.tornLen = b.tear(k, r)
		}
	case PersistSubset:
		b.drawSubset(p.keep, r)
	case PersistNone:
	default:
		return cutPlan{}, fmt.Errorf("disk: unknown persistence %q", persist)
	}
	return p, nil
}

// tear draws how much of the write at k, the first change after a kept
// prefix, reached the disk: up to a sector boundary of the file inside
// the write, some of its sectors but not all. It returns k and that
// length, or -1 when the change there is no write or one sector holds it.
func (b *Books) tear(k int, r *rand.Rand) (int, int64) {
	if k >= len(b.log) || b.log[k].kind != chWrite {
		return -1, 0
	}
	ch := b.log[k]
	first := (ch.off/sector + 1) * sector
	end := ch.off + ch.n
	if first >= end {
		return -1, 0
	}
	return k, first + r.Int64N((end-1-first)/sector+1)*sector - ch.off
}

// drawSubset marks in keep the name changes up to a drawn point, as a
// prefix, and each data change or not.
func (b *Books) drawSubset(keep []bool, r *rand.Rand) {
	names := 0
	for _, ch := range b.log {
		if !ch.kind.data() {
			names++
		}
	}
	k := r.IntN(names + 1)
	seen := 0
	for i, ch := range b.log {
		if ch.kind.data() {
			keep[i] = r.IntN(2) == 0
			continue
		}
		keep[i] = seen < k
		seen++
	}
}

// rollBack carries out a plan on the files. It undoes, newest first,
// every data change (keeping the bytes each wrote, read before it is
// undone) and the name changes not kept; then, for a subset, it writes
// again the data changes kept, oldest first. A prefix keeps nothing newer
// than a change it keeps, so there a kept data change stays as it is.
// It returns the writes taken back, in program order (at most maxLost).
func (b *Books) rollBack(p cutPlan, subset bool) ([]Lost, []error) {
	redo := make([][]byte, len(b.log))
	lost := make([]*Lost, len(b.log))
	var errs []error
	for i := len(b.log) - 1; i >= 0; i-- {
		ch := b.log[i]
		if !ch.kind.data() {
			if !p.keep[i] {
				if err := b.undoName(ch); err != nil {
					errs = append(errs, err)
				}
			}
			continue
		}
		if p.keep[i] && !subset {
			continue
		}
		if p.keep[i] && ch.kind == chWrite {
			redo[i] = readAt(ch.f.f, ch.off, ch.n)
		}
		if !p.keep[i] && ch.kind == chWrite {
			// Newer changes are undone already: the file holds what this
			// one wrote.
			lost[i] = &Lost{Path: b.show(ch.f.path), Off: ch.off, Len: ch.n, Data: readAt(ch.f.f, ch.off, min(ch.n, maxLostData))}
		}
		var err error
		if i == p.torn {
			err = undoFrom(ch, p.tornLen)
		} else {
			err = b.undoData(ch)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	var out []Lost
	for _, l := range lost {
		if l != nil && len(out) < maxLost {
			out = append(out, *l)
		}
	}
	if !subset {
		return out, errs
	}
	for i, ch := range b.log {
		if !p.keep[i] || !ch.kind.data() {
			continue
		}
		if err := redoData(ch, redo[i]); err != nil {
			errs = append(errs, err)
		}
	}
	return out, errs
}

// undoFrom undoes a write but for its first m bytes (a torn write).
func undoFrom(ch *change, m int64) error {
	f := ch.f.f
	if m < int64(len(ch.old)) {
		if _, err := f.WriteAt(ch.old[m:], ch.off+m); err != nil {
			return err
		}
	}
	if end := max(ch.oldSize, ch.off+m); size(f) > end {
		return f.Truncate(end)
	}
	return nil
}

func (b *Books) undoData(ch *change) error {
	f := ch.f.f
	if len(ch.old) > 0 {
		if _, err := f.WriteAt(ch.old, ch.off); err != nil {
			return err
		}
	}
	if size(f) != ch.oldSize {
		return f.Truncate(ch.oldSize)
	}
	return nil
}

func redoData(ch *change, data []byte) error {
	f := ch.f.f
	if ch.kind == chTruncate {
		return f.Truncate(ch.off)
	}
	_, err := f.WriteAt(data, ch.off)
	return err
}

// undoName takes a name change back, through the directories it was in
// (see dirRef): each call names one entry of a directory lockstep holds.
func (b *Books) undoName(ch *change) error {
	var st unix.Stat_t
	switch ch.kind {
	case chCreate:
		if ch.at.lstat(ch.base, &st) != nil {
			return nil
		}
		if ch.dir {
			// RemoveAll opens what it descends into with O_NOFOLLOW, from
			// the directory's descriptor (the magic link is lockstep's own).
			return os.RemoveAll("/proc/self/fd/" + strconv.Itoa(ch.at.fd()) + "/" + ch.base)
		}
		return unix.Unlinkat(ch.at.fd(), ch.base, 0)
	case chRename:
		if ch.at2.lstat(ch.base2, &st) != nil || (fileKey{st.Dev, st.Ino}) != ch.moved {
			return nil // the rename failed, or what it moved went on
		}
		if err := unix.Renameat(ch.at2.fd(), ch.base2, ch.at.fd(), ch.base); err != nil {
			return err
		}
		return b.restore(ch, ch.at2, ch.base2)
	case chUnlink, chRmdir:
		return b.restore(ch, ch.at, ch.base)
	}
	return nil
}

// restore puts back at base in d what a change removed from there.
func (b *Books) restore(ch *change, d *dirRef, base string) error {
	switch {
	case ch.kind == chRmdir || (ch.dir && ch.kind == chRename):
		if err := unix.Mkdirat(d.fd(), base, ch.mode); err != nil {
			return err
		}
		if ch.self != nil {
			// Names inside it come back into the new directory.
			sub, err := d.dir.Sub(base)
			if err != nil {
				return err
			}
			ch.self.dir.Close()
			ch.self.dir = sub
		}
		return nil
	case ch.link != "":
		return unix.Symlinkat(ch.link, d.fd(), base)
	case ch.kept != nil:
		fd := int(ch.kept.Fd())
		err := unix.Linkat(fd, "", d.fd(), base, unix.AT_EMPTY_PATH)
		if err == nil {
			return nil
		}
		// No name left (a link count of 0): copy what it holds. O_EXCL
		// follows no link in base's place.
		ofd, err := unix.Openat(d.fd(), base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, ch.mode)
		if err != nil {
			return err
		}
		out := os.NewFile(uintptr(ofd), base)
		defer out.Close()
		_, err = io.Copy(out, io.NewSectionReader(ch.kept, 0, size(ch.kept)))
		return err
	}
	return nil
}

// Written are the data files the node wrote during the trial that still
// have a name and hold bytes, oldest first.
func (b *Books) Written() int { return len(b.written()) }

func (b *Books) written() []*file {
	var out []*file
	for _, f := range b.files {
		st, err := f.f.Stat()
		if err != nil || st.Size() == 0 {
			continue
		}
		var s unix.Stat_t
		if unix.Fstat(int(f.f.Fd()), &s) != nil || s.Nlink == 0 {
			continue
		}
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b *file) int { return a.seq - b.seq })
	return out
}

// The ways a corruption damages a file (Corrupt's how; spec.DiskPlan's
// Corruptions, the spec's faults.corruptions, repeated by package spec).
const (
	CorruptFlip = "flip" // flips one bit
	CorruptTail = "tail" // cuts its tail off
)

// A Spot is where a corruption struck: the file, as show names it, and
// the place in it (At): for a cut the length it left ("13"), for a flip
// the byte and the bit ("812.3").
type Spot struct {
	File string
	At   string
}

// Corrupt damages one of the files the node wrote (Written), drawn from
// pick, or want.File when the node wrote that one: flips one bit of it, or
// cuts its tail off. It returns what it did and where. The bit or the cut
// is want.At when the file holds it, else drawn from pick after the file,
// so that a corruption forced onto the file it hit does to it what it did
// in a run where the node wrote other files as well, or wrote that one
// longer or shorter (a file of one entry per peer the node knew then).
func (b *Books) Corrupt(how string, pick uint64, want Spot) (what string, got Spot, err error) {
	fs := b.written()
	if len(fs) == 0 {
		return "no data file to corrupt", Spot{}, nil
	}
	r := rand.New(rand.NewPCG(pick, 0x636f7272757074)) // "corrupt"
	f := fs[r.IntN(len(fs))]
	if want.File != "" {
		if i := slices.IndexFunc(fs, func(g *file) bool { return b.show(g.path) == want.File }); i >= 0 {
			f = fs[i]
		} else {
			want.At = ""
		}
	}
	what, at, err := b.corrupt(f, how, r, want.At)
	return what, Spot{File: b.show(f.path), At: at}, err
}

// corrupt flips a bit of f or cuts its tail: at, when f holds it, else
// drawn from r. It returns what it did and at.
func (b *Books) corrupt(f *file, how string, r *rand.Rand, at string) (what, where string, err error) {
	sz := size(f.f)
	name := b.show(f.path)
	switch how {
	case CorruptFlip:
		off, bit, ok := flipAt(at)
		if !ok || off >= sz {
			off, bit = r.Int64N(sz), r.IntN(8)
		}
		var c [1]byte
		if _, err := f.f.ReadAt(c[:], off); err != nil {
			return "", "", fmt.Errorf("disk: corrupting %s: %w", name, err)
		}
		c[0] ^= 1 << bit
		if _, err := f.f.WriteAt(c[:], off); err != nil {
			return "", "", fmt.Errorf("disk: corrupting %s: %w", name, err)
		}
		return "flipped bit " + strconv.Itoa(bit) + " of byte " + strconv.FormatInt(off, 10) + " of " + name,
			strconv.FormatInt(off, 10) + "." + strconv.Itoa(bit), nil
	case CorruptTail:
		to, perr := strconv.ParseInt(at, 10, 64)
		if perr != nil || to < 0 || to >= sz {
			to = r.Int64N(sz)
		}
		if err := f.f.Truncate(to); err != nil {
			return "", "", fmt.Errorf("disk: corrupting %s: %w", name, err)
		}
		return fmt.Sprintf("cut %s from %d to %d bytes", name, sz, to), strconv.FormatInt(to, 10), nil
	}
	return "", "", fmt.Errorf("disk: unknown corruption %q", how)
}

// flipAt reads a flip's Spot.At, "byte.bit".
func flipAt(at string) (off int64, bit int, ok bool) {
	o, b, found := strings.Cut(at, ".")
	if !found {
		return 0, 0, false
	}
	off, err1 := strconv.ParseInt(o, 10, 64)
	bit, err2 := strconv.Atoi(b)
	return off, bit, err1 == nil && err2 == nil && off >= 0 && bit >= 0 && bit < 8
}
