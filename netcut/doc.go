// Package netcut owns what a cut of the network is: the links a cut holds
// and what it drops on each (Cut.Links), and the links the cuts in force
// hold (Set), written through to a firewall when the set has one. The
// fault injector keeps a Set of node names (what it holds back, whether a
// new cut would share a link with one in force); the tracer keeps a Set of
// node addresses over the cluster's firewall (which deliveries, FINs and
// connects a cut stops, and the only writes of the firewall's map). So
// "is this link cut, and how" has one answer, and one key expression.
//
// It acts on nothing itself: the firewall is handed in (netns.Cluster's
// Firewall), and it imports no package of lockstep's.
package netcut
