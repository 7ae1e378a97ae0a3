package explore

import (
	"bytes"
	"cmp"
	"compress/flate"
	"encoding/gob"
	"fmt"
	"slices"

	"github.com/lockstep-dev/lockstep/sched"
)

// DefaultMaxRecords is how many records New lets the corpus's entries
// hold unpacked, about 450 MB of a Go system's records (hashicorp/raft:
// 29,000 records and 13.5 MB a trial). Past it the entries used least
// recently are packed, about 30 times smaller, and unpacked when a
// branch starts from them. Campaigns of small trials never reach it.
const DefaultMaxRecords = 1 << 20

// records are the entry's trace's records (the prefixes its branches
// force), unpacked when the corpus packed them. The slice is the entry's
// own: callers must not change it.
func (e *Entry) records() ([]sched.Record, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.Records == nil && e.packed != nil {
		var recs []sched.Record
		if err := gob.NewDecoder(flate.NewReader(bytes.NewReader(e.packed))).Decode(&recs); err != nil {
			return nil, fmt.Errorf("explore: unpacking trial %d's records: %w", e.Trial, err)
		}
		e.Records = recs
	}
	if e.clock != nil {
		e.used = e.clock.Add(1)
	}
	return e.Records, nil
}

// pack lets go of the entry's records, encoded first (once: records do
// not change). It reports whether it did: an entry whose records would
// not come back the same stays unpacked, and so does one gob cannot
// encode (a field of a type it does not know: TestPackedBranch fails
// first), since memory is all packing saves.
func (e *Entry) pack() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.Records == nil {
		return false
	}
	if e.packed == nil {
		if !packable(e.Records) {
			return false
		}
		var b bytes.Buffer
		w, _ := flate.NewWriter(&b, flate.BestSpeed) // errs only on a bad level
		if gob.NewEncoder(w).Encode(e.Records) != nil || w.Close() != nil {
			return false
		}
		e.packed = b.Bytes()
	}
	e.Records = nil
	return true
}

// packable says whether gob gives recs back as they are: it writes what a
// pointer points to and leaves out zero values, so a fork at seed 0 would
// come back as no fork.
func packable(recs []sched.Record) bool {
	for i := range recs {
		if f := recs[i].Fork; f != nil && *f == 0 {
			return false
		}
	}
	return true
}

// Packed is how many entries hold their records packed.
func (c *Corpus) Packed() int {
	n := 0
	for _, e := range c.entries {
		e.mu.Lock()
		if e.Records == nil && e.packed != nil {
			n++
		}
		e.mu.Unlock()
	}
	return n
}

// unpacked are how many records the corpus's entries hold unpacked.
func (c *Corpus) unpacked() int {
	n := 0
	for _, e := range c.entries {
		e.mu.Lock()
		n += len(e.Records)
		e.mu.Unlock()
	}
	return n
}

// packOld packs the entries used least recently (added, or branched from)
// until those unpacked hold at most MaxRecords records. What an entry
// packed holds is what it held: the campaign is the same, only slower
// where a branch unpacks.
func (c *Corpus) packOld() {
	if c.MaxRecords <= 0 {
		return
	}
	n := c.unpacked()
	if n <= c.MaxRecords {
		return
	}
	byUse := slices.Clone(c.entries)
	slices.SortStableFunc(byUse, func(a, b *Entry) int { return cmp.Compare(a.lastUsed(), b.lastUsed()) })
	for _, e := range byUse {
		if n <= c.MaxRecords {
			break
		}
		if e.pack() {
			n -= e.nrecords
		}
	}
}

func (e *Entry) lastUsed() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.used
}
