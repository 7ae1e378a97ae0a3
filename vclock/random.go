package vclock

import (
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
)

// Random is a node's reproducible byte stream, answering getrandom and
// /dev/urandom reads. It lives beside the clock because both pin the
// environment a node observes: the same seed yields the same bytes.
type Random struct {
	src *rand.ChaCha8
}

// NewRandom seeds a stream from the trial seed and the node name.
func NewRandom(seed int64, node string) *Random {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(seed))
	key := sha256.Sum256(append(b[:], node...))
	return &Random{src: rand.NewChaCha8(key)}
}

// Read fills p; it never fails.
func (r *Random) Read(p []byte) (int, error) { return r.src.Read(p) }
