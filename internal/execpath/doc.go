// Package execpath finds a program as execve will find it inside an image's
// root filesystem rather than the host's: package spec uses it to check
// that an image node's program exists, the tracer to start it. It only
// reads the filesystem.
package execpath
