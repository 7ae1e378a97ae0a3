// Package recent counts the kinds of the last N things seen one way (the
// messages to a node, the messages from it), to say which kind is the
// commonest now: a node's role changes within a trial (a follower
// answers, a leader sends heartbeats), and what it does now is what
// counts. It owns only the counting; it must not know what the kinds are.
package recent
