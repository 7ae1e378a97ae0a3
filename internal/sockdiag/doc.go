// Package sockdiag looks up and aborts one TCP socket by its addresses
// through NETLINK_SOCK_DIAG: its receive queue and state (to know when a
// delivery or a FIN has arrived) and SOCK_DESTROY (the reset fault); and
// it finds whether a namespace has a listener on a port (a node's
// readiness), and whether a Unix socket of the namespace is bound to a
// file.
//
// It inspects sockets; it knows nothing of nodes, connections or ops.
package sockdiag
