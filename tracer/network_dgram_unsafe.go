package tracer

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// rmemAlloc is the memory a socket's receive queue holds (SO_MEMINFO): it
// grows when a datagram arrives.
func rmemAlloc(fd int) uint32 {
	if fd < 0 {
		return 0
	}
	var mi [unix.SK_MEMINFO_VARS]uint32
	l := uint32(len(mi) * 4)
	if _, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_MEMINFO,
		uintptr(unsafe.Pointer(&mi[0])), uintptr(unsafe.Pointer(&l)), 0); e != 0 {
		return 0
	}
	return mi[unix.SK_MEMINFO_RMEM_ALLOC]
}
