// Package conflict owns lockstep's conflict analysis: after a trial it
// builds happens-before over the released ops with vector clocks, finds
// concurrent ops on the same object, and keeps the history table of
// signatures that lets the "+" strategies release ops that never
// conflicted at once (Morpheus's POS+).
//
// Happens-before is the smallest order containing:
//   - program order of each logical thread (LPID);
//   - each record's Causes (send -> its delivery, deliveries -> the recv
//     that consumed their bytes, connect -> the accept that returned the
//     connection, a thread's creator -> its first op);
//   - delivery order per connection (TCP is FIFO, and lockstep delivers
//     the chunks of one connection in order).
//
// Deliveries are not part of the sender's program order: each connection
// is its own lane, so a sender and its message in flight are concurrent
// with what the sender does next.
//
// Two ops conflict when they touch the same object, neither happens
// before the other, and at least one of them changes the object: polls
// only observe, every other kind (deliver, recv, connect, accept, close)
// changes what a later op on the object sees. An op touches its Object,
// except that a delivery also touches its connection and a recv touches
// only its connection: a recv reads one connection's bytes, whatever
// arrives on the others. A close or shutdown sends a FIN: it touches the
// inbox its connection's deliveries went to, and comes after them in the
// connection's lane; a recv that read the connection's end read it.
//
// HappensBefore answers the same order for any two ops of a run (explain
// asks it whether the two ops of a race are causally related), and Races
// names each op's nearest races, the pairs an exploring campaign's flips
// reverse (two threads' sends on one connection among them, which the
// history does not learn).
package conflict
