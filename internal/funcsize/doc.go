// Package funcsize measures the module's functions, their lines and their
// cyclomatic complexity, so that a test can hold every function to a
// size a reader takes in at once (issue 47) and keep the known long ones
// from growing while they are split.
package funcsize
