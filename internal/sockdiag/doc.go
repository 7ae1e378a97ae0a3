// Package sockdiag looks up and aborts one TCP socket by its addresses
// through NETLINK_SOCK_DIAG: its receive queue and state (to know when a
// delivery or a FIN has arrived) and SOCK_DESTROY (the reset fault).
//
// It inspects sockets; it knows nothing of nodes, connections or ops.
package sockdiag
