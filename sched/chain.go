package sched

// Chain names the chain an op belongs to, for PCT over chains (PCTCP:
// Ozkan et al., "Trace aware random testing for distributed systems",
// OOPSLA 2019). A chain is a sequence of ops that can only run in one order
// anyway, so a priority per chain, not per op, is what PCT needs to reorder
// what can be reordered:
//
//   - a connection direction's deliveries ("conn:" + Conn): they are FIFO,
//     and they must not share the sender thread's priority, or two messages
//     a single-threaded sender writes on two connections always arrive in
//     the order they were sent;
//   - without a connection name, the deliveries from one node to one
//     destination (node, receiving inbox and address);
//   - an advance op's deadline owner ("advance:" + LPID), apart from the
//     thread's own ops, so that a delay and the thread's next syscall have
//     independent priorities;
//   - a fault kind on one target ("fault:" + kind + object);
//   - every other op: its thread's own ops, in program order ("thread:" +
//     LPID).
//
// The name is stable across trials: it is built only from LPIDs, logical
// connection endpoints and objects.
func (o *Op) Chain() string {
	switch {
	case o.Kind == Deliver && o.Conn != "":
		return "conn:" + o.Conn
	case o.Kind == Deliver:
		return "deliver:" + o.Node + ">" + o.Object + "@" + o.Peer
	case o.Kind == Advance:
		return "advance:" + o.LPID
	case o.Kind.IsFault():
		return "fault:" + o.Kind.String() + ":" + o.Object
	default:
		return "thread:" + o.LPID
	}
}
