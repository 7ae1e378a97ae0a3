package tracer

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"time"
)

// netSettled reports whether every FIN in flight has arrived (or waited
// long enough, or waits behind bytes held back for want of window),
// dropping those that arrived, and whether bytes once held back have
// arrived or are held again (heldSettled).
func (nw *network) netSettled() bool {
	settled := len(nw.held) == 0 || nw.heldSettled()
	keep := nw.finWaits[:0]
	for _, w := range nw.finWaits {
		if time.Now().After(w.until) {
			if !w.sent {
				continue // never sent: nothing was waited for
			}
			nw.stats.FinWaitsExpired++
			nw.rt.note("FIN late: %s>%s", w.remote, w.local)
			// It may still come, at a moment only a poll can see: the
			// books (known) leave that connection's recvs to polls.
			if nw.lateFins == nil {
				nw.lateFins = map[string]bool{}
			}
			nw.lateFins[w.remote.String()+">"+w.local.String()] = true
			continue
		}
		if nw.cutStops(w.remote, w.local) {
			continue // the partition drops it
		}
		if w.closer != nil && !w.releasing {
			if sent, ino := nw.finSent(w); !sent {
				if !nw.unheld(w, ino) {
					// Not sent yet: another descriptor still holds the
					// socket (a forked child's, a dup's, lockstep's own
					// with bytes to deliver), or the closing thread has not
					// got so far. Keep looking without waiting: when the
					// last holder lets go, the FIN leaves, and its arrival
					// must not be left to timing.
					keep = append(keep, w)
					continue
				}
				// Nobody holds it: the FIN leaves once the kernel has
				// released the socket. Wait for it as for one sent.
				w.releasing = true
			}
		}
		w.sent = true
		d, err := w.node.diagFor()
		if err != nil {
			continue
		}
		_, state, err := d.Lookup(w.local, w.remote)
		if err != nil || state != tcpEstablished {
			continue
		}
		keep = append(keep, w)
		if nw.finHeld(w) {
			// Queued behind bytes the peer has no room for: it goes when
			// the peer reads. Waiting for it is not waiting in vain.
			keep[len(keep)-1].until = time.Now().Add(finWaitLimit)
			continue
		}
		settled = false
	}
	nw.finWaits = keep
	return settled
}

// finHeld reports whether the closing side holds its FIN (and bytes before
// it) back because the peer's window is full.
func (nw *network) finHeld(w finWait) bool {
	if w.closer == nil {
		return false
	}
	d, err := w.closer.diagFor()
	if err != nil {
		return false
	}
	s, err := d.Sending(w.remote, w.local)
	return err == nil && s.WindowFull()
}

// finSent reports whether the closing side really sent its FIN and, when
// it has not, the inode of the socket's file (0: none). A close sends none
// while another descriptor still holds the socket: a forked child's or a
// dup's, or lockstep's own duplicate holding undelivered bytes (closeConn
// expects the FIN again when it lets go). Waiting for the peer then would
// cost the whole finWaitLimit for nothing; netSettled keeps looking until
// it is sent, or until nothing holds the socket (unheld).
func (nw *network) finSent(w finWait) (bool, uint32) {
	d, err := w.closer.diagFor()
	if err != nil {
		return true, 0
	}
	state, ino, err := d.Inode(w.remote, w.local)
	if err != nil {
		return true, 0 // gone (reset or closed): the peer's state decides
	}
	return state != tcpEstablished && state != tcpCloseWait, ino
}

// unheld reports whether the socket of a FIN not yet sent is held by no
// descriptor that will keep it: neither by lockstep (a connection with
// bytes to deliver) nor by a process of the closing node. What else holds
// it lets go on its own, soon: a child lockstep forked (a trial's
// sentinel, a checker) holds a copy of every descriptor lockstep has
// until it execs, and a process's last close of a socket may finish after
// its close or exit returned (the file's release runs as deferred work).
// On a loaded CPU either took hundreds of milliseconds, and a state taken
// meanwhile depended on the load. ino is the socket file's inode, as
// finSent found it.
func (nw *network) unheld(w finWait, ino uint32) bool {
	if c := nw.conns[w.remote.String()+">"+w.local.String()]; c != nil && c.dup >= 0 {
		return false
	}
	if ino == 0 {
		return true // no file any more: an orphan on its way out
	}
	want := "socket:[" + strconv.FormatUint(uint64(ino), 10) + "]"
	for p := range nw.pt.allProcs() {
		if p.node == w.closer && !p.exited && holds(p.pid, want) {
			return false
		}
	}
	return true
}

// holds reports whether process pid has a descriptor naming target (as
// /proc/PID/fd shows it), or whether that cannot be told.
func holds(pid int, target string) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist)
	}
	for _, e := range ents {
		if l, err := readlink(dir + e.Name()); err == nil && l == target {
			return true
		}
	}
	return false
}
