// Package disk keeps the books of a node's data files for the storage
// faults: before each change a node makes under its data paths runs (a
// write, a truncation, a directory entry's creation, rename or removal), it
// keeps what the change overwrites or removes, and it tracks which changes
// an fsync, fdatasync, syncfs or sync has made durable. At a power cut
// (Books.Cut) it undoes the changes that were not durable, all or some of
// them, on the real files; it also flips a bit in or cuts the tail off a
// file (Books.Corrupt) and fails or stalls one call when a fault is armed
// (Books.Arm).
//
// It works on any process's files through /proc (the tracer hands it the
// pid and descriptor of the call it stopped), with no file system of its
// own and nothing in the kernel: static binaries included. It does not
// see writes through mmap. A Books is used from one goroutine (the
// tracer's thread).
package disk
