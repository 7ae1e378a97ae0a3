package nsexec

import (
	"errors"
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// ErrStranded reports that the thread could not return to its own
// namespace after running the code: it must not run anything else.
var ErrStranded = errors.New("thread stranded in another network namespace")

// Do runs f on a new locked OS thread inside the network namespace at
// path ("": the caller's own, for code that changes the thread's
// namespace itself) and returns f's error. The thread is unlocked only once
// it is back in its namespace; a stranded thread stays locked and ends
// with its goroutine, so the Go runtime never reuses it.
func Do(path string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		err := Here(path, f)
		if !errors.Is(err, ErrStranded) {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

// Here runs f on the calling thread inside the network namespace at path
// ("": stay) and returns to the thread's namespace, whatever f did to it.
// When that fails the error wraps ErrStranded.
//
// Precondition: the calling goroutine is locked to its OS thread, so that
// the switch affects nothing else.
func Here(path string, f func() error) error {
	home, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening this thread's network namespace: %w", err)
	}
	defer unix.Close(home)
	if path != "" {
		target, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("opening %s: %w", path, err)
		}
		err = unix.Setns(target, unix.CLONE_NEWNET)
		unix.Close(target)
		if err != nil {
			return fmt.Errorf("entering %s: %w", path, err)
		}
	}
	ferr := f()
	if err := unix.Setns(home, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("%w: %w", ErrStranded, err)
	}
	return ferr
}
