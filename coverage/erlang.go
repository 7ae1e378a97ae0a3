package coverage

import "strconv"

// etfVersion is the Erlang external term format's version byte, the first
// of every term two VMs exchange.
const etfVersion = 131

// distShape recognizes a message between two connected Erlang VMs after
// its length field (depth > 0): the control message's operation, which is
// what tells one exchange from another (REG_SEND, MONITOR_P, SPAWN_REQUEST
// ...). Its arguments are values: pids, references, and atoms sent by
// their slot in the connection's atom cache, a slot that follows the order
// in which the VM made its atoms. The message is
//
//   - 131, 'D', the distribution header (its atom cache references), then
//     the control message without a version byte;
//   - 131, 'E', a fragmented message's sequence and fragment ids (8 bytes
//     each), then the same header and control message;
//   - 131, 'F', a later fragment: its bytes continue another message;
//   - 'p', then the control message as a term of its own (131 first), as
//     VMs that keep no atom cache send it.
//
// A header that runs past the bytes kept gives "dist…": the trace keeps
// too few bytes (trace.data) to see the operation.
func distShape(b []byte, depth int) (string, bool) {
	if depth == 0 || len(b) < 2 {
		return "", false
	}
	switch {
	case b[0] == 'p' && b[1] == etfVersion:
		return controlShape(b[2:])
	case b[0] != etfVersion:
		return "", false
	case b[1] == 'D':
		return headerShape(b[2:])
	case b[1] == 'E':
		if len(b) < 18 {
			return "dist" + cut, true
		}
		return headerShape(b[18:])
	case b[1] == 'F':
		return "dist fragment" + masked, true
	}
	return "", false
}

// headerShape reads a distribution header's atom cache references (their
// count, a flag nibble per reference and one for the header, then per
// reference its slot and, when new, its atom's text) and shapes the
// control message after them.
func headerShape(h []byte) (string, bool) {
	if len(h) == 0 {
		return "dist" + cut, true
	}
	refs, i := int(h[0]), 1
	if refs > 0 {
		n := refs/2 + 1 // a nibble per reference and one for the header
		if len(h) < i+n {
			return "dist" + cut, true
		}
		flags := h[i : i+n]
		i += n
		nibble := func(k int) byte { return flags[k/2] >> (4 * (k % 2)) & 0xf }
		longAtoms := nibble(refs)&1 != 0
		for k := range refs {
			i++ // the reference's slot in its segment
			if nibble(k)&8 == 0 {
				continue
			}
			// A new entry: the atom's length (two bytes with long atoms)
			// and its text.
			switch {
			case longAtoms && i+2 <= len(h):
				i += 2 + (int(h[i])<<8 | int(h[i+1]))
			case !longAtoms && i < len(h):
				i += 1 + int(h[i])
			default:
				return "dist" + cut, true
			}
		}
		if i >= len(h) {
			return "dist" + cut, true
		}
	}
	return controlShape(h[i:])
}

// controlShape names a control message, a tuple whose first element is its
// operation; "" and false when the bytes are no such tuple.
func controlShape(c []byte) (string, bool) {
	if len(c) > 0 && c[0] == etfVersion {
		c = c[1:]
	}
	if len(c) < 4 {
		return "dist" + cut, true
	}
	// A small tuple ('h', its arity) whose first element is a small
	// integer ('a', the operation).
	if c[0] != 'h' || c[1] == 0 || c[2] != 'a' {
		return "", false
	}
	if op := int(c[3]); op < len(distOps) && distOps[op] != "" {
		return "dist " + distOps[op], true
	}
	return "dist op" + strconv.Itoa(int(c[3])), true
}

// distOps are the control messages' operations (the Erlang distribution
// protocol, "Protocol between Connected Nodes"); the _TT ones carry a
// trace token.
var distOps = [...]string{
	1: "LINK", 2: "SEND", 3: "EXIT", 4: "UNLINK", 5: "NODE_LINK", 6: "REG_SEND",
	7: "GROUP_LEADER", 8: "EXIT2", 12: "SEND_TT", 13: "EXIT_TT", 16: "REG_SEND_TT",
	18: "EXIT2_TT", 19: "MONITOR_P", 20: "DEMONITOR_P", 21: "MONITOR_P_EXIT",
	22: "SEND_SENDER", 23: "SEND_SENDER_TT", 24: "PAYLOAD_EXIT", 25: "PAYLOAD_EXIT_TT",
	26: "PAYLOAD_EXIT2", 27: "PAYLOAD_EXIT2_TT", 28: "PAYLOAD_MONITOR_P_EXIT",
	29: "SPAWN_REQUEST", 30: "SPAWN_REQUEST_TT", 31: "SPAWN_REPLY", 32: "SPAWN_REPLY_TT",
	33: "ALIAS_SEND", 34: "ALIAS_SEND_TT", 35: "UNLINK_ID", 36: "UNLINK_ID_ACK",
}
