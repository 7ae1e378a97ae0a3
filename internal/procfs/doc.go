// Package procfs reads the /proc files lockstep looks at, so that each
// format is parsed in one place: a task's stat line (its name, state,
// parent, flags, CPU, policy, start time) and a mountinfo file's mounts.
package procfs
