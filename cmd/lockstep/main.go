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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := newApp().RunContext(ctx, os.Args)
	os.Exit(exitCode(err))
}

// exitCoder lets commands choose their exit status (1: bug found, 2: bad
// input or lockstep error).
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
