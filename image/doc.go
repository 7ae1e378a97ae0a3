// Package image reads OCI and Docker images from local sources (an OCI
// layout directory, an OCI or docker archive, or an image in the local
// podman store, exported through podman) and unpacks their layers into a
// root filesystem cached by the config's digest, whiteouts applied.
// Resolve does it for a spec's image nodes, which spec.Load only names.
//
// It never pulls from a registry, and it does not mount anything: the
// node's overlay over the unpacked root is package launch's.
package image
