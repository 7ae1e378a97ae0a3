// Package compose turns a Compose file (docker compose, podman compose)
// into a lockstep spec: each service a node from its image, with its
// command, entrypoint, environment and working directory; depends_on
// orders the nodes, and a service others wait for is ready when it listens
// on its port. What a spec cannot say (volumes, port mappings, build,
// networks, ...) is left as a comment in the spec it writes.
//
// It writes YAML text and reads nothing but the compose file: images are
// checked when the spec loads (package spec).
package compose
