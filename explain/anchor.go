package explain

import "github.com/lockstep-dev/lockstep/sched"

// A forced fault comes right after the op the trace released before it,
// named by its position among its process's ops of that kind (sched.Key).
// For a sleep, a poll or an advance that position depends on the
// timeline: a Go runtime thread's nth nanosleep, a server's nth
// epoll_wait, whose count includes its timer's ticks. With a delay
// elsewhere left out of a subset, the timeline moves and the fault, still
// right after the nth sleep, lands at another point of the workload:
// ddmin then keeps the delay beside the fault though the failure does not
// need it (a power cut of Redis kept with the 1 ms delay of a timer, or a
// hold that made the client's first request time out). A message is
// named by its place on its connection, which the same workload keeps
// whatever the timing: messageAnchors moves each fault's anchor back to
// the last message before it.

// messageAnchors returns ds with each injected fault whose anchor (After)
// is not a message re-anchored on the last message (a send or a
// delivery with bytes) released before it in recs, the run ds were read
// from (choices its offers, which name its connections: sched.Keys); a fault with an advance or another fault between it and that
// message keeps its anchor (moving it would reorder injections). moved
// counts the faults re-anchored.
func messageAnchors(ds []sched.Decision, recs []sched.Record, choices [][]sched.Op) (out []sched.Decision, moved int) {
	keys := sched.Keys(recs, choices)
	at := make(map[int]int, len(recs)) // step → index
	for j := range recs {
		if !recs[j].Auto {
			at[recs[j].Step] = j
		}
	}
	out = append([]sched.Decision(nil), ds...)
	for i := range out {
		d := &out[i]
		if d.Kind != sched.InjectDecision || !d.Op.Kind.IsFault() || d.After == nil {
			continue
		}
		j, ok := at[d.AfterStep]
		if !ok || keys[j] != *d.After || isMessage(&recs[j]) {
			continue
		}
		for k := j - 1; k >= 0; k-- {
			r := &recs[k]
			if r.Auto {
				continue
			}
			if r.Op.Kind == sched.Advance || r.Op.Kind.IsFault() {
				break
			}
			if isMessage(r) {
				key := keys[k]
				d.After, d.AfterStep, d.Loose = &key, r.Step, sched.LooseAnchor(keys, k)
				moved++
				break
			}
		}
	}
	return out, moved
}

// isMessage says r sent or delivered bytes.
func isMessage(r *sched.Record) bool {
	return (r.Op.Kind == sched.Send || r.Op.Kind == sched.Deliver) && len(r.Data) > 0
}
