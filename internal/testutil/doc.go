// Package testutil holds the helpers shared by lockstep's privileged tests:
// run-time capability checks that skip with a clear message, and a leak check
// for TestMain that fails a package which leaves namespaces, links, tracees or
// cgroups behind.
package testutil
