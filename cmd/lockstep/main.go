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
// (`lockstep clean` removes what it leaves).
func interruptContext(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
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
