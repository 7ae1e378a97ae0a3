package tracer

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// setTicks sets a timerfd's expiration count and wakes its readers.
func setTicks(fd int, ticks uint64) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), tfdIocSetTicks, uintptr(unsafe.Pointer(&ticks)))
	if errno != 0 {
		return errno
	}
	return nil
}

// queueSignal queues sig with info to the process pid, or to its thread
// tid when tid is not 0.
func queueSignal(pid, tid, sig int, info *[128]byte) error {
	var errno unix.Errno
	if tid != 0 {
		_, _, errno = unix.Syscall6(unix.SYS_RT_TGSIGQUEUEINFO, uintptr(pid), uintptr(tid), uintptr(sig), uintptr(unsafe.Pointer(info)), 0, 0)
	} else {
		_, _, errno = unix.Syscall6(unix.SYS_RT_SIGQUEUEINFO, uintptr(pid), uintptr(sig), uintptr(unsafe.Pointer(info)), 0, 0, 0)
	}
	if errno != 0 {
		return errno
	}
	return nil
}
