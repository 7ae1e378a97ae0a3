package sched

// The fault kinds sched itself shows (Describe) or makes up in a replay
// (remakeable), by their names in traces. Package faults defines every
// fault kind; these names are here only because traces written before a
// kind wrote its own show text (Op.Peer) are shown as they always were. A
// kind not named here is shown by its Op.Peer and replayed only as the
// engine offers it, so a new fault kind needs no line in sched.
const (
	crashKind       Kind = "crash"
	restartKind     Kind = "restart"
	partitionKind   Kind = "partition"
	healKind        Kind = "heal"
	dropKind        Kind = "drop"
	pauseKind       Kind = "pause"
	clockJumpKind   Kind = "clock"
	clockDriftKind  Kind = "drift"
	resetKind       Kind = "reset"
	oneWayKind      Kind = "oneway"
	linkKind        Kind = "link"
	bipartitionKind Kind = "bipartition"
	holdKind        Kind = "hold"
	powerKind       Kind = "power"
	corruptKind     Kind = "corrupt"
	ioErrorKind     Kind = "ioerror"
	stallKind       Kind = "stall"
)

// remakeable reports whether a replay may make up a fault op of kind k
// that the engine did not offer, from its recorded parameters: a crash,
// partition, pause, clock fault, power cut, ioerror or stall. The others
// need what only the engine knows is there (a crashed node, a cut, a
// connection, a datagram, a node down with files, a link's traffic).
func remakeable(k Kind) bool {
	switch k {
	case crashKind, partitionKind, pauseKind, clockJumpKind, clockDriftKind, powerKind, ioErrorKind, stallKind:
		return true
	}
	return false
}
