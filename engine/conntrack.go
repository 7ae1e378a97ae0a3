package engine

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/lockstep-dev/lockstep/bpf"
	"github.com/lockstep-dev/lockstep/sched"
	"golang.org/x/sys/unix"
)

// tracker owns the campaign's connection-tracking programs: loaded once,
// watching every job's namespaces, its events sorted to the job whose
// namespace they came from.
type tracker struct {
	mu      sync.Mutex
	ct      *bpf.Conntrack
	owner   map[uint32]*job // netns inode → job
	pending map[*job][]bpf.Event
	// lostAt is the kernel's count of dropped events at each job's last
	// take: the ring is shared, so a drop since then may have been one of
	// the job's own events.
	lostAt map[*job]uint64
	self   int
}

// newTracker loads the programs; nil (with a debug line) where the kernel
// or the privileges do not allow it: the tracer's own byte accounting then
// stands alone.
func newTracker(log *slog.Logger, kernel *bpf.Kernel) *tracker {
	ct, err := bpf.NewConntrack("", kernel)
	if err != nil {
		log.Debug("connection tracking unavailable; using lockstep's own accounting", "err", err)
		return nil
	}
	return &tracker{ct: ct, owner: map[uint32]*job{}, pending: map[*job][]bpf.Event{}, lostAt: map[*job]uint64{}, self: os.Getpid()}
}

func (t *tracker) watch(j *job) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, n := range j.spec.Nodes {
		path := j.cluster.Node(n.Name).NetnsPath
		var st unix.Stat_t
		if err := unix.Stat(path, &st); err != nil {
			return err
		}
		if err := t.ct.WatchNetns(path); err != nil {
			return err
		}
		t.owner[uint32(st.Ino)] = j
	}
	return nil
}

// take returns the events recorded for j since its last take, and
// whether the kernel dropped events meanwhile (its ring was full). The
// join pairs records and events in order, so one missing event would shift
// every later pairing on its connection: with a drop, j's events are not
// to be trusted.
func (t *tracker) take(j *job) (evs []bpf.Event, dropped bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	all, err := t.ct.Drain()
	for _, e := range all {
		if o := t.owner[e.Netns]; o != nil {
			t.pending[o] = append(t.pending[o], e)
		}
	}
	evs = t.pending[j]
	delete(t.pending, j)
	lost, lerr := t.ct.Lost()
	if lerr != nil {
		return evs, true, err // not knowing is not trusting
	}
	dropped = lost > t.lostAt[j]
	t.lostAt[j] = lost
	return evs, dropped, err
}

func (t *tracker) close() error { return t.ct.Close() }

// joinConntrack gives every recv record its result (bytes consumed) and
// its causes (the deliveries whose bytes it consumed) from the kernel's
// records: lockstep's own writes of each delivery are EvSend events of
// this process, the tracee's reads EvRecv events, and sequence numbers
// match them exactly whatever the split. Records and events of one
// connection direction are both in order, so they are paired in order.
func joinConntrack(records []sched.Record, evs []bpf.Event, self int) ConntrackStats {
	st, _ := joinConntrackDetail(records, evs, self)
	return st
}

// joinConntrackDetail is joinConntrack, and where records and events
// disagree, the first disagreeing connection direction's records and
// events as they were before the join (conntrackDetail): what a
// disagreement, rare and dependent on timing, leaves to look into.
func joinConntrackDetail(records []sched.Record, evs []bpf.Event, self int) (ConntrackStats, string) {
	var st ConntrackStats
	// before keeps each joined recv's result and causes as lockstep's
	// accounting gave them, by record index, for conntrackDetail (the
	// join gives the record new slices: these are not written to).
	var before map[int]accounted
	firstConn := ""
	sends, recvs := streamEvents(evs, self)
	delivered, isDeliver := deliveredRanges(records, sends)
	for i := range records {
		rec := &records[i]
		if rec.Op.Kind != sched.Recv || rec.Op.Conn == "" || rec.Result < 0 {
			continue
		}
		q := recvs[rec.Op.Conn]
		if len(q) == 0 {
			continue // EOF, or not a stream the kernel saw
		}
		e := q[0]
		recvs[rec.Op.Conn] = q[1:]
		if before == nil {
			before = map[int]accounted{}
		}
		before[i] = accounted{rec.Result, rec.Causes}
		st.Recvs++
		st.Matched++
		// Causes other than deliveries (a parent thread's op) stay.
		var mine, others, causes []uint64
		for _, c := range rec.Causes {
			if isDeliver[c] {
				mine = append(mine, c)
			} else {
				others = append(others, c)
			}
		}
		// The connection's recvs read its stream in order: deliveries
		// wholly before this one's bytes are before every later one's, and
		// none after its end can overlap (a linear walk, not one per recv
		// over them all).
		ds := delivered[rec.Op.Conn]
		for len(ds) > 0 && int32(ds[0].seq+uint32(ds[0].n)-e.Seq) <= 0 {
			ds = ds[1:]
		}
		delivered[rec.Op.Conn] = ds
		for _, d := range ds {
			if int32(d.seq-(e.Seq+uint32(e.Len))) >= 0 {
				break
			}
			if bpf.Overlap(bpf.Event{Kind: bpf.EvSend, Proto: e.Proto, Local: e.Remote, Remote: e.Local, Seq: d.seq, Len: d.n}, e) > 0 {
				causes = append(causes, d.id)
			}
		}
		if fmt.Sprint(causes) != fmt.Sprint(mine) {
			if st.Disagreed == 0 {
				firstConn = rec.Op.Conn
				st.First = fmt.Sprintf("step %d: recv #%d %s on %s read %d bytes at seq %d: the kernel's records name deliveries %v, lockstep's accounting %v",
					rec.Step, rec.Op.ID, rec.Op.LPID, rec.Op.Conn, e.Len, e.Seq, causes, mine)
			}
			st.Disagreed++
		}
		rec.Causes = append(others, causes...)
		rec.Result = int64(e.Len)
	}
	if firstConn == "" {
		return st, ""
	}
	return st, conntrackDetail(records, before, evs, self, firstConn)
}

// streamRange is a delivery's range of its stream: its bytes, from seq.
type streamRange struct {
	seq uint32
	n   int
	id  uint64
}

// streamEvents sorts the kernel's TCP events by connection direction
// ("src>dst"): this process's writes (the deliveries) and the tracees'
// reads, each in the order recorded.
func streamEvents(evs []bpf.Event, self int) (sends, recvs map[string][]bpf.Event) {
	sends, recvs = map[string][]bpf.Event{}, map[string][]bpf.Event{}
	for _, e := range evs {
		if e.Proto != unix.IPPROTO_TCP {
			continue
		}
		f := e.Flow()
		key := f.Src.String() + ">" + f.Dst.String()
		switch {
		case e.Kind == bpf.EvSend && e.PID == self:
			sends[key] = append(sends[key], e)
		case e.Kind == bpf.EvRecv:
			recvs[key] = append(recvs[key], e)
		}
	}
	return sends, recvs
}

// deliveredRanges gives each delivery its range of the stream, by
// connection direction, from the writes of this process that carried its
// bytes in order, and reports which op IDs are deliveries.
func deliveredRanges(records []sched.Record, sends map[string][]bpf.Event) (map[string][]streamRange, map[uint64]bool) {
	delivered := map[string][]streamRange{}
	isDeliver := map[uint64]bool{}
	for i := range records {
		if records[i].Op.Kind == sched.Deliver {
			isDeliver[records[i].Op.ID] = true
		}
	}
	for i := range records {
		op := &records[i].Op
		if op.Kind != sched.Deliver || op.Conn == "" {
			continue
		}
		q := sends[op.Conn]
		if len(q) == 0 {
			continue
		}
		// A delivery that found the send buffer full wrote only part of
		// its bytes (its result); the rest is a delivery of its own.
		n := op.Bytes
		if res := records[i].Result; res >= 0 && res < int64(n) {
			n = int(res)
		}
		r := streamRange{seq: q[0].Seq, id: op.ID}
		for r.n < n && len(q) > 0 {
			r.n += q[0].Len
			q = q[1:]
		}
		sends[op.Conn] = q
		delivered[op.Conn] = append(delivered[op.Conn], r)
	}
	return delivered, isDeliver
}

// accounted is a recv record's result and causes before the join.
type accounted struct {
	result int64
	causes []uint64
}

// conntrackDetail lists, for one connection direction (conn), lockstep's
// records of it in schedule order (its deliveries, and its recvs with
// the result and deliveries lockstep's accounting gave them, then the
// kernel's) beside the kernel's events of it in the order recorded:
// lockstep's own writes (the deliveries' bytes) and the tracees' reads,
// each with its sequence range.
func conntrackDetail(records []sched.Record, before map[int]accounted, evs []bpf.Event, self int, conn string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "connection %s: lockstep's records (recvs: lockstep's accounting -> the kernel's)\n", conn)
	for i := range records {
		r := &records[i]
		if r.Op.Conn != conn {
			continue
		}
		switch r.Op.Kind {
		case sched.Deliver:
			fmt.Fprintf(&b, "  step %d #%d deliver %d bytes, wrote %d\n", r.Step, r.Op.ID, r.Op.Bytes, r.Result)
		case sched.Recv:
			a, ok := before[i]
			if !ok {
				fmt.Fprintf(&b, "  step %d #%d recv %s %s asked %d nonblocking=%v: result %d causes %v (no kernel record)\n",
					r.Step, r.Op.ID, r.Op.LPID, r.Op.Syscall, r.Op.Bytes, r.Op.NonBlocking, r.Result, r.Causes)
				continue
			}
			fmt.Fprintf(&b, "  step %d #%d recv %s %s asked %d nonblocking=%v: result %d causes %v -> result %d causes %v\n",
				r.Step, r.Op.ID, r.Op.LPID, r.Op.Syscall, r.Op.Bytes, r.Op.NonBlocking, a.result, a.causes, r.Result, r.Causes)
		default:
			fmt.Fprintf(&b, "  step %d #%d %s %s\n", r.Step, r.Op.ID, r.Op.Kind, r.Op.LPID)
		}
	}
	fmt.Fprintf(&b, "connection %s: the kernel's events\n", conn)
	for _, e := range evs {
		if e.Proto != unix.IPPROTO_TCP || (e.Kind != bpf.EvSend || e.PID != self) && e.Kind != bpf.EvRecv {
			continue
		}
		f := e.Flow()
		if f.Src.String()+">"+f.Dst.String() != conn {
			continue
		}
		what := "lockstep wrote"
		if e.Kind == bpf.EvRecv {
			what = fmt.Sprintf("pid %d tid %d read", e.PID, e.TID)
		}
		fmt.Fprintf(&b, "  %s %d bytes at seq %d\n", what, e.Len, e.Seq)
	}
	return b.String()
}
