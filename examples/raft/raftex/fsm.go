package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"sync"

	"github.com/hashicorp/raft"
)

// An Entry is one command a member applied: its log index, the command, and
// the chain's hash after it.
type Entry struct {
	Index uint64 `json:"index"`
	Cmd   string `json:"cmd"`
	Hash  string `json:"hash"`
}

// chain is the state machine: a "chain of blocks" whose state is the hash of
// the previous state and the command, state = H(state || cmd). Any member
// that applies another command at some index, or skips one, ends with
// another hash from there on. It keeps every applied entry so that the
// client can compare members index by index.
type chain struct {
	mu       sync.Mutex
	hash     [sha256.Size]byte
	last     uint64 // index of the last command applied
	entries  []Entry
	restores int
}

func (c *chain) Apply(l *raft.Log) any {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l.Type != raft.LogCommand {
		return nil
	}
	h := sha256.New()
	h.Write(c.hash[:])
	h.Write(l.Data)
	copy(c.hash[:], h.Sum(nil))
	c.last = l.Index
	c.entries = append(c.entries, Entry{Index: l.Index, Cmd: string(l.Data), Hash: hex.EncodeToString(c.hash[:8])})
	return l.Index
}

// snapshotData is what a snapshot holds: the whole chain, so that a member
// restored from one can still be compared entry by entry.
type snapshotData struct {
	Hash    string  `json:"hash"`
	Last    uint64  `json:"last"`
	Entries []Entry `json:"entries"`
}

func (c *chain) Snapshot() (raft.FSMSnapshot, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, err := json.Marshal(snapshotData{Hash: hex.EncodeToString(c.hash[:]), Last: c.last, Entries: c.entries})
	if err != nil {
		return nil, err
	}
	return snapshot(b), nil
}

func (c *chain) Restore(r io.ReadCloser) error {
	defer r.Close()
	var d snapshotData
	if err := json.NewDecoder(r).Decode(&d); err != nil {
		return err
	}
	h, err := hex.DecodeString(d.Hash)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	copy(c.hash[:], h)
	c.last = d.Last
	c.entries = d.Entries
	c.restores++
	return nil
}

// state returns the chain's last index and hash.
func (c *chain) state() (uint64, string, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last, hex.EncodeToString(c.hash[:8]), c.restores
}

func (c *chain) log() []Entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Entry(nil), c.entries...)
}

type snapshot []byte

func (s snapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s snapshot) Release() {}
