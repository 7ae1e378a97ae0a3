package coverage

import (
	"sync"

	"github.com/lockstep-dev/lockstep/sched"
)

// Namer names the messages of other runs of a trial by their kinds,
// numbered as one trace of it numbers them (what `lockstep kinds TRACE`
// and `show` print): explain's forced runs send the messages the trace
// did, over the same listening ports, and a person reading its sentences
// has the trace's kinds in front of them. A kind the trace did not show
// is numbered after its own. A delivery is named by its own first bytes,
// so the part of a long message that a later delivery carries (Messages
// joins it to the message) takes the kind its bytes look like.
type Namer struct {
	mu sync.Mutex
	ks *Kinds
	p  *protocols
}

// NewNamer learns tr's kinds, in the order Messages numbers them.
func NewNamer(tr *sched.Trace) *Namer {
	ks := NewKinds()
	ks.Messages(tr)
	return &Namer{ks: ks, p: newProtocols(tr)}
}

// Kind is the kind of a send's or a delivery's message, nil for any other
// op and for a message whose bytes were not kept.
func (n *Namer) Kind(r *sched.Record) *Kind {
	if n == nil || len(r.Data) == 0 || (r.Op.Kind != sched.Send && r.Op.Kind != sched.Deliver) {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ks.Classify(n.p.of(r.Op.Conn), r.Data, sched.DataLen(r))
}

// Text says whether a message's bytes read as they are: printable ASCII,
// tabs and line ends. Where they do not, its kind says more than its
// bytes.
func Text(b []byte) bool {
	return !binaryAfter(b, 0)
}
