package sched

// A trace is JSON Lines: one Header, then Records (released ops and faults)
// in step order, then one Outcome. Each line is an Entry with exactly one of
// its fields set.

// Header describes how a trial was run, enough to run it again.
type Header struct {
	Version    string `json:"version"`
	Spec       string `json:"spec"`        // path of the spec file as given
	SpecDigest string `json:"spec_digest"` // sha256 of the spec file's bytes
	Trial      int    `json:"trial"`
	Seed       int64  `json:"seed"`
	Strategy   string `json:"strategy"`
	Scheme     string `json:"scheme"` // signature scheme, e.g. "pid+pc"
	Epoch      int64  `json:"epoch"`  // realtime epoch, ns since 1970
	// Delays and MaxDelay are the timing bounds the trial ran with (spec
	// time.delays, time.max_delay in ns). Traces written before delays
	// existed have neither: they ran under ideal timing, which is 0.
	Delays   int   `json:"delays"`
	MaxDelay int64 `json:"max_delay"`
	// Tick is the virtual time each released op took (spec time.tick, ns).
	Tick int64 `json:"tick,omitempty"`
	// FaultSteps and DelaySteps are the steps the fault and delay windows
	// were expected to hold, over which the trial drew its step triggers
	// (its campaign's trial 0's): a replay draws the same ones without
	// running trial 0. 0 (trial 0, older traces): every trigger a time.
	FaultSteps int `json:"fault_steps,omitempty"`
	DelaySteps int `json:"delay_steps,omitempty"`
	// Symptom are the templates of the symptom the trial was run against
	// (run --symptom): a node printing the last one ended it, and a
	// replay ends at the same line.
	Symptom []string `json:"symptom,omitempty"`
	// SymptomFailure is the template of the symptom's failure line: with
	// one, no line ended the trial (the failure is what reproduces it).
	SymptomFailure string `json:"symptom_failure,omitempty"`
}

// Record is one released op.
type Record struct {
	Step  int   `json:"step"`
	VTime int64 `json:"vtime"` // virtual ns since the trial began
	Op    Op    `json:"op"`
	// Result is the syscall's return value when known (bytes moved, new fd,
	// -errno); 0 when not observed.
	Result int64 `json:"result,omitempty"`
	// Causes are the IDs of earlier ops of other threads that happen before
	// this one: the send of a deliver, the delivers whose bytes a recv
	// consumed, the connect an accept returned, the op of the parent thread
	// that created this thread. Program order within an LPID is implicit.
	// A recv with MSG_WAITALL that slept for more bytes also names the
	// later deliveries that brought them.
	Causes []uint64 `json:"causes,omitempty"`
	// Data is the first bytes of what the op sent, delivered or read
	// (spec trace.data bounds them), when known.
	Data []byte `json:"data,omitempty"`
	// Immediate is true when a "+" variant released the op at once because
	// its signature was predicted not to conflict.
	Immediate bool `json:"immediate,omitempty"`
	// Auto is true for what lockstep did by itself, not by a decision: the
	// recoveries of a fault plan's quiet period. Replay does not ask for
	// them; they recur at the same point.
	Auto bool `json:"auto,omitempty"`
	// Trigger is what let an injection or a delay be offered, for a
	// spread plan: "time" or "step" (its trigger's kind); empty otherwise.
	// Replay does not compare it: the same decisions fire the same ones.
	Trigger string `json:"trigger,omitempty"`
	// Fork, when set, says the run left a recorded one at this record's
	// decision (an exploring campaign's branch, sched.Branch): from there
	// on, the fault and delay draws came from this seed. A replay forks
	// at the same decision.
	Fork *int64 `json:"fork,omitempty"`
	// Lost are, for a power cut, the writes it took back (Op.Hit counts
	// them), in program order: explain names the request a lost write
	// carried. Replay does not compare them: the same schedule loses the
	// same writes.
	Lost []LostWrite `json:"lost,omitempty"`
	// Timed are the points since the previous record where real time,
	// not a decision, settled what ran (tracer.State.Timed): threads let
	// run beside a loop on the clock or past the grace period, bytes or a
	// FIN no longer waited for. Replay does not compare them; when a
	// replay parts from its trace, they are where to look.
	Timed []string `json:"timed,omitempty"`
}

// LostWrite is a write to a node's data file that a power cut took back:
// the file (relative to the trial's directory), where the write went,
// how long it was and its first bytes.
type LostWrite struct {
	File string `json:"file"`
	Off  int64  `json:"off"`
	Len  int64  `json:"len"`
	Data []byte `json:"data,omitempty"`
}

// Entry is one line of a trace file.
type Entry struct {
	Header  *Header  `json:"header,omitempty"`
	Record  *Record  `json:"record,omitempty"`
	Outcome *Outcome `json:"outcome,omitempty"`
}

// Trace is a whole trace in memory.
type Trace struct {
	Header  Header
	Records []Record
	Outcome *Outcome
	// Lossy are the steps of made faults whose shape a lockstep before
	// Bytes wrote with its bytes that are not UTF-8 turned into U+FFFD:
	// what they held cannot be known, so the trace cannot replay.
	Lossy []int
}
