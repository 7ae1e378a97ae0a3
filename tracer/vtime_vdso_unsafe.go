package tracer

import (
	"sync/atomic"
	"unsafe"
)

// storeU64 writes v into b[:8] in one store, so a tracee reading the page
// never sees half of an old value and half of a new one.
func storeU64(b []byte, v uint64) {
	_ = b[7]
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&b[0])), v)
}
