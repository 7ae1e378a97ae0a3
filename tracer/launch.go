package tracer

import "github.com/lockstep-dev/lockstep/tracer/internal/launch"

// Sandbox isolates a node the way a container would; see LaunchConfig.
type Sandbox = launch.Sandbox

// A Zygote forks nodes on a tracer's behalf (Options.Zygote).
type Zygote = launch.Zygote

// DefaultCaps are the capabilities a sandboxed node keeps.
func DefaultCaps() []int { return launch.DefaultCaps() }

// ParseCap reads a capability name, with or without its CAP_ prefix, in any
// case.
func ParseCap(name string) (int, error) { return launch.ParseCap(name) }

// StartZygote starts a zygote: lockstep re-executed in zygote mode (the
// binary must call MaybeRunZygote first thing in main).
func StartZygote() (*Zygote, error) { return launch.StartZygote() }

// MaybeRunZygote turns the process into a zygote when it was started as
// one, and never returns in that case. Binaries that use a Zygote call it
// first thing in main (and in TestMain).
func MaybeRunZygote() { launch.MaybeRunZygote() }
