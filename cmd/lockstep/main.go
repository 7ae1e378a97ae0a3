// Command lockstep finds and reproduces concurrency bugs in distributed
// systems by running their unmodified binaries under ptrace, one network
// namespace per node, and scheduling their network operations.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/tracer"
)

func main() {
	// A job's zygote is this binary re-executed; it must not get further.
	tracer.MaybeRunZygote()
	ctx, stop := interruptContext(context.Background())
	defer stop()
	err := runApp(ctx, newApp(), os.Args)
	os.Exit(exitCode(err))
}

// interrupted is the cause of a campaign's context cancelled by a signal.
type interrupted struct{ sig os.Signal }

func (i interrupted) Error() string { return "interrupted by " + i.sig.String() }

// ExitCode is the shell's convention for death by a signal, 128+N.
func (i interrupted) ExitCode() int {
	if s, ok := i.sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 130
}

// interruptContext is cancelled, with an interrupted cause, by the first
// SIGINT or SIGTERM; commands then stop, clean up and report what they
// have. A second signal has its default effect: lockstep dies at once
// (`lockstep clean` removes what it leaves). So does the end of the reader
// of lockstep's standard output or error (`lockstep run … | head`, a CI
// log's pipe): by Go's default, the next write there killed lockstep at
// once, leaving a trial's namespaces, links and cgroups behind.
func interruptContext(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	// For the life of the process: a write to the closed pipe while
	// cleaning up must not kill it either. A SIGPIPE from any other
	// descriptor (lockstep delivering to a node's closed socket) is what
	// Go does without this, nothing: the write fails with EPIPE.
	pipes := make(chan os.Signal, 1)
	signal.Notify(pipes, syscall.SIGPIPE)
	go func() {
		for range pipes {
			if outputGone() {
				cancel(interrupted{syscall.SIGPIPE})
			}
		}
	}()
	go func() {
		select {
		case sig := <-sigs:
			signal.Stop(sigs)
			fmt.Fprintf(os.Stderr, "\nlockstep: %v: stopping the trials under way (again to quit at once)\n", sig)
			cancel(interrupted{sig})
		case <-ctx.Done():
			signal.Stop(sigs)
		}
	}()
	return ctx, func() { cancel(nil) }
}

// outputGone says whether the reader of standard output or error is gone:
// the write end of a pipe without one polls as an error.
func outputGone() bool {
	fds := []unix.PollFd{{Fd: 1}, {Fd: 2}}
	if n, err := unix.Poll(fds, 0); err != nil || n == 0 {
		return false
	}
	return fds[0].Revents&unix.POLLERR != 0 || fds[1].Revents&unix.POLLERR != 0
}

// exitCoder lets commands choose their exit status (1: bug found, 2: bad
// input or lockstep error, 128+N: stopped by signal N).
type exitCoder interface{ ExitCode() int }

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ec exitCoder
	if errors.As(err, &ec) {
		if msg := err.Error(); msg != "" {
			fmt.Fprintln(os.Stderr, "lockstep: "+msg)
		}
		return ec.ExitCode()
	}
	fmt.Fprintln(os.Stderr, "lockstep: "+err.Error())
	return 2
}
