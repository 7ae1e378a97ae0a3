// Package layering states lockstep's dependency direction (docs/architecture.md,
// "Dependency direction") as rules over the module's import graph,
// and its test checks them, so that a layer that leaks fails the build's
// tests rather than a review.
package layering
