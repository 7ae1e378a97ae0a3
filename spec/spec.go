package spec

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"text/template"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
	"github.com/lockstep-dev/lockstep/compose"
)

// Role says whether a node's exit ends the trial.
type Role string

const (
	RoleServer Role = "server"
	RoleClient Role = "client"
)

// Spec is a validated test spec. docs/spec.md documents the format.
type Spec struct {
	Path    string // as given
	Dir     string // absolute directory of the spec file
	Digest  string // sha256 of the file's bytes
	Name    string
	Nodes   []Node
	Network struct {
		Subnet netip.Prefix
	}
	Scheduler struct {
		Strategy string
		Seed     int64
		PCTDepth int
		Conflict struct {
			Scheme  string
			Mode    string // "skip" or "weight"
			Weight  float64
			History string // absolute path, "" for none
		}
	}
	Trials int
	Limits struct {
		VirtualTime time.Duration
		Steps       int
		RealTime    time.Duration
		// LivelockSteps bounds the ops released while virtual time stands
		// still: past it the trial ends as a livelock (engine.Livelock).
		LivelockSteps int
		// DeadlockGrace is the real time lockstep keeps watching a state
		// with nothing enabled and no deadline before it calls it a
		// deadlock: threads still starting or runnable on a loaded machine
		// may yet reach a gated syscall.
		DeadlockGrace time.Duration
		// Node bounds every node's resources (limits.node); each node's
		// own Limits override it field by field (see NodeLimits).
		Node NodeLimits
	}
	Checker struct {
		Command []string // unexpanded
		Timeout time.Duration
		// Model checks the clients' histories (docs/history.md); nil for none.
		Model *HistoryCheck
	}
	checkerLine int
	// Properties are patterns over the nodes' output lines that must never,
	// eventually or sometimes match (properties:).
	Properties []Property
	// Faults is the fault plan; its zero value injects nothing.
	Faults FaultPlan
	Time   struct {
		Epoch time.Time
		// Delays is the budget of advance ops per trial: how many times the
		// scheduler may let virtual time run to a deadline while other ops
		// are enabled. 0 is ideal timing (the clock moves only when nothing
		// else can run).
		Delays int
		// MaxDelay bounds each delay: no op that was enabled is held longer
		// than this much virtual time.
		MaxDelay time.Duration
		// Tick, when set, is the virtual time each released op takes, so
		// that clock readings order what happened (client histories).
		Tick time.Duration
		// Skew, when set, sets each node's wall clock apart from the
		// others' by up to this much either way, drawn from the trial's
		// seed, as real hosts' clocks are: with identical clocks, programs
		// that seed a random generator with the time draw the same numbers
		// on every node (Raft members then time out together forever).
		Skew time.Duration
		// From and Until are the delay window: the k-th delay of a trial
		// is offered only once virtual time passes its trigger, drawn from
		// the seed uniformly in [From, Until). Until 0 means no spread:
		// delays are offered from From on (see delayWindow for defaults).
		From, Until time.Duration
		// By is what the delays' triggers are drawn over (time.spread):
		// the window's virtual time, its steps, or either (the default).
		By SpreadBy
	}
	// Trace says what a trace keeps (spec section `trace`).
	Trace struct {
		// Data is how many of the first bytes of each message an op sent,
		// delivered or read are kept in its record, for show and explain;
		// 0 keeps none.
		Data int
	}
}

// Node returns the named node of the spec, or nil.
func (s *Spec) Node(name string) *Node {
	for i := range s.Nodes {
		if s.Nodes[i].Name == name {
			return &s.Nodes[i]
		}
	}
	return nil
}

// Node is one node of a spec.
type Node struct {
	Name    string
	Role    Role
	Command []string // unexpanded templates
	// Image, when set, is the image whose filesystem is the node's root
	// and whose config gives its command, environment and working
	// directory where the spec does not (spec: image:, docs/spec.md
	// "Images"). Entrypoint then replaces the image's ENTRYPOINT.
	Image      *Image
	Entrypoint []string
	Env        map[string]string
	Workdir    string
	StartDelay time.Duration
	// ReadyPort, when set, holds back the nodes after this one in the spec
	// until this node listens on that TCP port (spec: ready: {listen: PORT}).
	ReadyPort uint16
	// Caps are capabilities the node keeps beside the sandbox's default ones
	// (spec: capabilities: [NET_ADMIN]).
	Caps []int
	// Limits override limits.node for this node (spec: limits: {...}).
	Limits NodeLimits
	// Lines of the node and of its fields, for errors found after decoding.
	line, cmdLine, workdirLine, delayLine, imageLine int
	envLines                                         map[string]int
}

// Timing defaults (docs/spec.md, "Timing"): up to two delays per trial,
// each holding the ops it passes over for at most one virtual second.
const (
	// DefaultTraceData: see Spec.Trace.Data.
	DefaultTraceData = 32
	// maxTraceData bounds Spec.Trace.Data: a trace keeps a message's
	// first bytes, not the message.
	maxTraceData = 4096
	// DefaultDeadlockGrace: see Spec.Limits.DeadlockGrace.
	DefaultDeadlockGrace = time.Second
	DefaultDelays        = 2
	DefaultMaxDelay      = time.Second
	maxDelays            = 1000
)

// Bounds on a spec's numbers (docs/spec.md). Each keeps a typo from
// turning into hours of spinning or gigabytes of memory, and leaves room
// far beyond any real campaign.
const (
	// MaxSize bounds the spec file: `lockstep run /dev/zero` must fail
	// at once, not read forever.
	MaxSize = 1 << 20
	// MaxTrials bounds trials per campaign (a month at a trial a second).
	MaxTrials      = 10_000_000
	maxSteps       = 10_000_000
	maxPCTDepth    = 100 // d-1 change points are drawn per trial
	maxVirtualTime = 365 * 24 * time.Hour
	maxRealTime    = 24 * time.Hour
	maxWeight      = 1e6
	maxNodes       = 64
)

// Epochs lockstep can represent: traces store the epoch in Unix
// nanoseconds, which end in 2262, and virtual time runs on from it.
var (
	minEpoch = time.Unix(0, 0).UTC()
	maxEpoch = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

// unusableNets are IPv4 ranges a cluster cannot use: their addresses are
// routed specially (loopback, link-local) or cannot be unicast addresses
// at all, so a correct client and server would fail to talk.
var unusableNets = []struct {
	pfx  netip.Prefix
	what string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "\"this network\" (0.0.0.0/8)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback (127.0.0.0/8)"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local (169.254.0.0/16)"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast (224.0.0.0/4)"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved (240.0.0.0/4)"},
}

// HostNets lists the host's own IPv4 networks, which a cluster subnet
// must not overlap (traffic to them would be ambiguous). Loopback is left
// out: it is refused on its own.
func HostNets() ([]netip.Prefix, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("listing host addresses: %w", err)
	}
	var out []netip.Prefix
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(ipn.IP.To4())
		if !ok || ip.IsLoopback() {
			continue
		}
		ones, _ := ipn.Mask.Size()
		out = append(out, netip.PrefixFrom(ip, ones).Masked())
	}
	return out, nil
}

// Error is a one-line, located complaint about a spec.
type Error struct {
	File  string
	Line  int
	Field string
	Msg   string
}

func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc += fmt.Sprintf(":%d", e.Line)
	}
	msg := loc + ": " + e.Msg
	if e.Field != "" {
		msg = loc + ": " + e.Field + ": " + e.Msg
	}
	// A byte order mark inside the file (one at its start is dropped)
	// would print as nothing and puzzle the reader.
	return strings.ReplaceAll(msg, "\ufeff", "")
}

// Load reads and validates a spec file.
func Load(path string) (*Spec, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return load(path, data, HostNets)
}

// load is Load of data read from path, a spec or a compose file, with the
// host's networks supplied by hostNets.
func load(path string, data []byte, hostNets func() ([]netip.Prefix, error)) (*Spec, error) {
	// Before compose.Is: it parses the file too, and expands its aliases.
	if err := checkText(path, data); err != nil {
		return nil, err
	}
	if err := checkAliases(path, data); err != nil {
		return nil, err
	}
	if compose.Is(path, data) {
		return loadCompose(path, data)
	}
	return parse(path, data, hostNets)
}

// readFile reads a spec file of at most MaxSize bytes. Only regular
// files are read: a FIFO would block and a device may never end.
func readFile(path string) ([]byte, error) {
	fail := func(err error) error {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return &Error{File: path, Msg: err.Error()}
	}
	// O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
	// writer before the type check below could refuse it.
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fail(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fail(err)
	}
	if !st.Mode().IsRegular() {
		return nil, &Error{File: path, Msg: fmt.Sprintf("not a regular file (%s)", fileKind(st.Mode()))}
	}
	if st.Size() > MaxSize {
		return nil, &Error{File: path, Msg: fmt.Sprintf("spec is %d bytes, more than the limit of %d", st.Size(), MaxSize)}
	}
	// The size may change after Stat; never read past the limit.
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, fail(err)
	}
	if len(data) > MaxSize {
		return nil, &Error{File: path, Msg: fmt.Sprintf("spec is more than the limit of %d bytes", MaxSize)}
	}
	return data, nil
}

func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a block device"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return m.Type().String()
}

// Parse validates a spec read from path (used for error messages and
// for resolving {{dir}}).
func Parse(path string, data []byte) (*Spec, error) {
	return parse(path, data, HostNets)
}

// parse is Parse with the host's networks supplied by hostNets
// (tests give their own).
func parse(path string, data []byte, hostNets func() ([]netip.Prefix, error)) (*Spec, error) {
	d := &decoder{file: path, hostNets: hostNets}
	if err := checkText(path, data); err != nil {
		return nil, err
	}
	s := &Spec{Path: path, Digest: digest(data)}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	s.Dir = filepath.Dir(abs)
	data = stripBOM(data) // the digest above is of the file as it is
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &Error{File: path, Msg: "empty spec"}
	}
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		var se *yaml.SyntaxError
		if errors.As(err, &se) {
			return nil, &Error{File: path, Line: se.GetToken().Position.Line, Msg: "invalid YAML: " + se.GetMessage()}
		}
		return nil, &Error{File: path, Msg: "invalid YAML: " + firstLine(err.Error())}
	}
	if len(f.Docs) == 0 || f.Docs[0].Body == nil {
		return nil, &Error{File: path, Msg: "empty spec"}
	}
	// A second document would be silently ignored: say so instead.
	for _, doc := range f.Docs[1:] {
		if doc.Body != nil {
			return nil, d.errf(doc.Body, "", "a second YAML document (after ---): a spec is one document")
		}
	}
	if err := d.spec(f.Docs[0].Body, s); err != nil {
		return nil, err
	}
	return s, nil
}

// digest names a spec file's contents: a trace records it, and a replay
// refuses a spec that changed since.
func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

type decoder struct {
	file     string
	hostNets func() ([]netip.Prefix, error)
	images   map[string]*Image // by reference: nodes often share one
}

func (d *decoder) errf(n ast.Node, field, format string, args ...any) error {
	return &Error{File: d.file, Line: lineOf(n), Field: field, Msg: fmt.Sprintf(format, args...)}
}

func lineOf(n ast.Node) int {
	if n == nil || n.GetToken() == nil {
		return 0
	}
	return n.GetToken().Position.Line
}

// keyName is a mapping key's text, without the quotes of a quoted key.
func keyName(n ast.Node) string {
	if s, ok := unwrap(n).(*ast.StringNode); ok {
		return s.Value
	}
	return n.String()
}

type kv struct {
	key   string
	knode ast.Node
	value ast.Node
}

func unwrap(n ast.Node) ast.Node {
	for {
		switch v := n.(type) {
		case *ast.TagNode:
			n = v.Value
		case *ast.AnchorNode:
			n = v.Value
		default:
			return n
		}
	}
}

// fields returns a mapping's pairs, rejecting keys not in known.
func (d *decoder) fields(n ast.Node, path string, known ...string) ([]kv, error) {
	n = unwrap(n)
	var pairs []*ast.MappingValueNode
	switch m := n.(type) {
	case *ast.MappingNode:
		pairs = m.Values
	case *ast.MappingValueNode:
		pairs = []*ast.MappingValueNode{m}
	default:
		return nil, d.errf(n, path, "must be a mapping, got %s", describe(n))
	}
	seen := map[string]bool{}
	var out []kv
	for _, p := range pairs {
		k := keyName(p.Key)
		field := join(path, k)
		if !contains(known, k) {
			msg := "unknown field"
			if s := closest(k, known); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			return nil, d.errf(p.Key, field, "%s", msg)
		}
		if seen[k] {
			return nil, d.errf(p.Key, field, "given twice")
		}
		seen[k] = true
		out = append(out, kv{key: k, knode: p.Key, value: unwrap(p.Value)})
	}
	return out, nil
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// closest suggests a known name within edit distance 2.
func closest(s string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if dd := editDistance(s, k); dd < bestD {
			best, bestD = k, dd
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func describe(n ast.Node) string {
	switch v := n.(type) {
	case nil, *ast.NullNode:
		return "nothing"
	case *ast.StringNode:
		return fmt.Sprintf("string %q", v.Value)
	case *ast.IntegerNode:
		return fmt.Sprintf("integer %v", v.Value)
	case *ast.FloatNode:
		return fmt.Sprintf("number %v", v.Value)
	case *ast.BoolNode:
		return fmt.Sprintf("boolean %v", v.Value)
	case *ast.SequenceNode:
		return "a list"
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.NanNode:
		return "NaN"
	case *ast.InfinityNode:
		return "infinity"
	}
	return n.Type().String()
}

func (d *decoder) str(n ast.Node, field string) (string, error) {
	switch v := n.(type) {
	case *ast.StringNode:
		return v.Value, nil
	case *ast.LiteralNode:
		return v.Value.Value, nil
	}
	return "", d.errf(n, field, "must be a string, got %s", describe(n))
}

// word accepts strings and plain numbers (argv elements, env values).
func (d *decoder) word(n ast.Node, field string) (string, error) {
	switch v := n.(type) {
	case *ast.IntegerNode:
		return v.GetToken().Value, nil
	case *ast.FloatNode:
		return v.GetToken().Value, nil
	case *ast.BoolNode:
		return v.GetToken().Value, nil
	}
	return d.str(n, field)
}

var digitsRE = regexp.MustCompile(`^[-+]?[0-9]+$`)

func (d *decoder) integer(n ast.Node, field string) (int64, error) {
	v, ok := n.(*ast.IntegerNode)
	if !ok {
		// The YAML parser makes a string of an integer too large for 64 bits.
		if s, isStr := n.(*ast.StringNode); isStr && digitsRE.MatchString(s.Value) && s.GetToken().Type != token.DoubleQuoteType && s.GetToken().Type != token.SingleQuoteType {
			return 0, d.errf(n, field, "%s is out of range (a 64-bit signed integer)", s.Value)
		}
		return 0, d.errf(n, field, "must be an integer, got %s", describe(n))
	}
	switch x := v.Value.(type) {
	case int64:
		return x, nil
	case uint64:
		if x > 1<<63-1 {
			return 0, d.errf(n, field, "%d is out of range (a 64-bit signed integer)", x)
		}
		return int64(x), nil
	}
	return 0, d.errf(n, field, "must be an integer")
}

func (d *decoder) number(n ast.Node, field string) (float64, error) {
	switch v := n.(type) {
	case *ast.IntegerNode:
		i, err := d.integer(n, field)
		return float64(i), err
	case *ast.FloatNode:
		return v.Value, nil
	}
	return 0, d.errf(n, field, "must be a number, got %s", describe(n))
}

func (d *decoder) duration(n ast.Node, field string, allowZero bool, maxD time.Duration) (time.Duration, error) {
	s, err := d.str(n, field)
	if err != nil {
		if _, ok := n.(*ast.IntegerNode); ok {
			return 0, d.errf(n, field, "must be a duration with a unit such as 10s or 5m, got %s", describe(n))
		}
		return 0, err
	}
	v, perr := time.ParseDuration(s)
	if perr != nil {
		return 0, d.errf(n, field, "invalid duration %q (use e.g. 500ms, 10s, 5m)", s)
	}
	if v < 0 || (v == 0 && !allowZero) {
		if allowZero {
			return 0, d.errf(n, field, "must not be negative, got %s", s)
		}
		return 0, d.errf(n, field, "must be positive, got %s", s)
	}
	if v > maxD {
		return 0, d.errf(n, field, "at most %s, got %s", fmtDuration(maxD), s)
	}
	return v, nil
}

// fmtDuration prints whole hours as hours ("8760h", not "8760h0m0s").
func fmtDuration(v time.Duration) string {
	if v >= time.Hour && v%time.Hour == 0 {
		return fmt.Sprintf("%dh", v/time.Hour)
	}
	return v.String()
}

func (d *decoder) strings(n ast.Node, field string) ([]string, error) {
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		return nil, d.errf(n, field, "must be a list of strings, got %s", describe(n))
	}
	var out []string
	for i, v := range seq.Values {
		s, err := d.word(unwrap(v), fmt.Sprintf("%s[%d]", field, i))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

var (
	nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
)

func (d *decoder) spec(root ast.Node, s *Spec) error {
	pairs, err := d.fields(root, "", "name", "nodes", "network", "scheduler", "trials", "limits", "checker", "faults", "time", "trace", "properties")
	if err != nil {
		return err
	}
	// Defaults.
	s.Network.Subnet = DefaultSubnet
	s.Scheduler.Strategy = "pos"
	s.Scheduler.Seed = 1
	s.Scheduler.Conflict.Scheme = "proc+pc"
	s.Scheduler.Conflict.Mode = "skip"
	s.Trials = 100
	s.Limits.VirtualTime = 10 * time.Minute
	s.Limits.Steps = 100000
	s.Limits.RealTime = 60 * time.Second
	s.Checker.Timeout = 30 * time.Second
	s.Time.Epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	s.Limits.DeadlockGrace = DefaultDeadlockGrace
	s.Limits.LivelockSteps = DefaultLivelockSteps
	s.Time.Delays = DefaultDelays
	s.Time.MaxDelay = DefaultMaxDelay
	s.Trace.Data = DefaultTraceData
	var nodesNode, checkerNode, subnetNode, faultsNode, timeUntil, timeSpreadNode, propertiesNode ast.Node
	timeSpread := true
	haveName := false
	pctNode := ast.Node(nil)
	for _, p := range pairs {
		switch p.key {
		case "name":
			if s.Name, err = d.str(p.value, "name"); err != nil {
				return err
			}
			if !nameRE.MatchString(s.Name) {
				return d.errf(p.value, "name", "%q is not a valid name (lowercase letters, digits and dashes)", s.Name)
			}
			haveName = true
		case "nodes":
			nodesNode = p.value
		case "network":
			np, err := d.fields(p.value, "network", "subnet")
			if err != nil {
				return err
			}
			for _, q := range np {
				v, err := d.str(q.value, "network.subnet")
				if err != nil {
					return err
				}
				pfx, perr := netip.ParsePrefix(v)
				if perr != nil {
					return d.errf(q.value, "network.subnet", "invalid subnet %q", v)
				}
				if !pfx.Addr().Is4() {
					return d.errf(q.value, "network.subnet", "must be an IPv4 subnet, got %s", v)
				}
				if pfx.Bits() < 8 || pfx.Bits() > 30 {
					return d.errf(q.value, "network.subnet", "prefix length must be between 8 and 30, got /%d", pfx.Bits())
				}
				if err := d.usableSubnet(q.value, pfx.Masked()); err != nil {
					return err
				}
				s.Network.Subnet = pfx.Masked()
				subnetNode = q.value
			}
		case "scheduler":
			sp, err := d.fields(p.value, "scheduler", "strategy", "seed", "pct_depth", "conflict")
			if err != nil {
				return err
			}
			for _, q := range sp {
				f := "scheduler." + q.key
				switch q.key {
				case "strategy":
					if s.Scheduler.Strategy, err = d.str(q.value, f); err != nil {
						return err
					}
					if serr := checkStrategy(s.Scheduler.Strategy); serr != nil {
						return d.errf(q.value, f, "%v", serr)
					}
				case "seed":
					if s.Scheduler.Seed, err = d.integer(q.value, f); err != nil {
						return err
					}
				case "pct_depth":
					v, err := d.integer(q.value, f)
					if err != nil {
						return err
					}
					if v < 1 || v > maxPCTDepth {
						return d.errf(q.value, f, "must be between 1 and %d, got %d", maxPCTDepth, v)
					}
					s.Scheduler.PCTDepth = int(v)
					pctNode = q.value
				case "conflict":
					if err := d.conflict(q.value, s); err != nil {
						return err
					}
				}
			}
		case "trials":
			v, err := d.integer(p.value, "trials")
			if err != nil {
				return err
			}
			if v < 1 || v > MaxTrials {
				return d.errf(p.value, "trials", "must be between 1 and %d, got %d", MaxTrials, v)
			}
			s.Trials = int(v)
		case "limits":
			lp, err := d.fields(p.value, "limits", "virtual_time", "steps", "real_time", "deadlock_grace", "livelock_steps", "node")
			if err != nil {
				return err
			}
			for _, q := range lp {
				f := "limits." + q.key
				switch q.key {
				case "virtual_time":
					if s.Limits.VirtualTime, err = d.duration(q.value, f, false, maxVirtualTime); err != nil {
						return err
					}
				case "real_time":
					if s.Limits.RealTime, err = d.duration(q.value, f, false, maxRealTime); err != nil {
						return err
					}
				case "deadlock_grace":
					if s.Limits.DeadlockGrace, err = d.duration(q.value, f, true, time.Minute); err != nil {
						return err
					}
				case "livelock_steps":
					if s.Limits.LivelockSteps, err = d.count(q.value, f, maxSteps); err != nil {
						return err
					}
				case "node":
					if s.Limits.Node, err = d.nodeLimits(q.value, f); err != nil {
						return err
					}
				case "steps":
					v, err := d.integer(q.value, f)
					if err != nil {
						return err
					}
					if v < 1 || v > maxSteps {
						return d.errf(q.value, f, "must be between 1 and %d, got %d", maxSteps, v)
					}
					s.Limits.Steps = int(v)
				}
			}
		case "checker":
			checkerNode = p.value
		case "properties":
			propertiesNode = p.value
		case "faults":
			faultsNode = p.value
		case "trace":
			tp, err := d.fields(p.value, "trace", "data")
			if err != nil {
				return err
			}
			for _, q := range tp {
				v, err := d.integer(q.value, "trace.data")
				if err != nil {
					return err
				}
				if v < 0 || v > maxTraceData {
					return d.errf(q.value, "trace.data", "must be between 0 and %d bytes, got %d", maxTraceData, v)
				}
				s.Trace.Data = int(v)
			}
		case "time":
			tp, err := d.fields(p.value, "time", "epoch", "delays", "max_delay", "tick", "skew", "from", "until", "spread")
			if err != nil {
				return err
			}
			for _, q := range tp {
				f := "time." + q.key
				switch q.key {
				case "epoch":
					v, err := d.str(q.value, f)
					if err != nil {
						return err
					}
					e, perr := time.Parse(time.RFC3339, v)
					if perr != nil {
						return d.errf(q.value, f, "invalid time %q (want RFC 3339, e.g. 2024-01-01T00:00:00Z)", v)
					}
					if e.Before(minEpoch) || e.After(maxEpoch) {
						return d.errf(q.value, f, "must be between 1970-01-01T00:00:00Z and 2200-01-01T00:00:00Z, got %s", v)
					}
					s.Time.Epoch = e
				case "delays":
					v, err := d.integer(q.value, f)
					if err != nil {
						return err
					}
					if v < 0 || v > maxDelays {
						return d.errf(q.value, f, "must be between 0 and %d, got %d", maxDelays, v)
					}
					s.Time.Delays = int(v)
				case "tick":
					if s.Time.Tick, err = d.duration(q.value, f, true, time.Second); err != nil {
						return err
					}
				case "skew":
					if s.Time.Skew, err = d.duration(q.value, f, true, time.Hour); err != nil {
						return err
					}
				case "max_delay":
					if s.Time.MaxDelay, err = d.duration(q.value, f, false, maxVirtualTime); err != nil {
						return err
					}
				case "from":
					if s.Time.From, err = d.duration(q.value, f, true, maxVirtualTime); err != nil {
						return err
					}
				case "until":
					if s.Time.Until, err = d.duration(q.value, f, false, maxVirtualTime); err != nil {
						return err
					}
					timeUntil = q.value
				case "spread":
					if timeSpread, s.Time.By, err = d.spread(q.value, f); err != nil {
						return err
					}
					timeSpreadNode = q.value
				}
			}
		}
	}
	if !haveName {
		return d.errf(root, "name", "missing")
	}
	if pctNode != nil && strings.TrimSuffix(s.Scheduler.Strategy, "+") != "pct" {
		return d.errf(pctNode, "scheduler.pct_depth", "only applies to strategy pct, not %s", s.Scheduler.Strategy)
	}
	if nodesNode == nil {
		return d.errf(root, "nodes", "missing")
	}
	if subnetNode == nil {
		// The default must not clash with the host either.
		if err := d.usableSubnet(nil, s.Network.Subnet); err != nil {
			var se *Error
			if errors.As(err, &se) {
				se.Msg = "the default " + se.Msg + " (set network.subnet)"
			}
			return err
		}
	}
	if err := d.nodes(nodesNode, s); err != nil {
		return err
	}
	if faultsNode != nil {
		if err := d.faults(faultsNode, s); err != nil {
			return err
		}
	}
	if err := d.delayWindow(timeUntil, s); err != nil {
		return err
	}
	if !timeSpread {
		if timeUntil != nil {
			return d.errf(timeSpreadNode, "time.spread", "is false, but time.until sets a delay window")
		}
		s.Time.Until = 0 // offered from time.from on, even with spread faults
	}
	if checkerNode != nil {
		if err := d.checker(checkerNode, s); err != nil {
			return err
		}
	}
	if propertiesNode != nil {
		if err := d.properties(propertiesNode, s); err != nil {
			return err
		}
	}
	return s.validateTemplates(d)
}

func (d *decoder) conflict(n ast.Node, s *Spec) error {
	cp, err := d.fields(n, "scheduler.conflict", "scheme", "mode", "weight", "history")
	if err != nil {
		return err
	}
	var weightNode ast.Node
	for _, q := range cp {
		f := "scheduler.conflict." + q.key
		switch q.key {
		case "scheme":
			v, err := d.str(q.value, f)
			if err != nil {
				return err
			}
			if err := checkScheme(v); err != nil {
				return d.errf(q.value, f, "%v", err)
			}
			s.Scheduler.Conflict.Scheme = v
		case "mode":
			v, err := d.str(q.value, f)
			if err != nil {
				return err
			}
			if v != "skip" && v != "weight" {
				return d.errf(q.value, f, "unknown mode %q (want skip or weight)", v)
			}
			s.Scheduler.Conflict.Mode = v
		case "weight":
			v, err := d.number(q.value, f)
			if err != nil {
				return err
			}
			if v <= 0 || v > maxWeight {
				return d.errf(q.value, f, "must be positive and at most %g, got %v", maxWeight, v)
			}
			s.Scheduler.Conflict.Weight = v
			weightNode = q.value
		case "history":
			v, err := d.str(q.value, f)
			if err != nil {
				return err
			}
			if v != "" && !filepath.IsAbs(v) {
				v = filepath.Join(s.Dir, v)
			}
			s.Scheduler.Conflict.History = v
		}
	}
	if weightNode != nil && s.Scheduler.Conflict.Mode != "weight" {
		return d.errf(weightNode, "scheduler.conflict.weight", "only applies with mode weight")
	}
	if s.Scheduler.Conflict.Mode == "weight" && s.Scheduler.Conflict.Weight == 0 {
		s.Scheduler.Conflict.Weight = 10
	}
	return nil
}

func (d *decoder) nodes(n ast.Node, s *Spec) error {
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		return d.errf(n, "nodes", "must be a list of nodes, got %s", describe(n))
	}
	if len(seq.Values) == 0 {
		return d.errf(n, "nodes", "must list at least one node")
	}
	if len(seq.Values) > maxNodes {
		return d.errf(n, "nodes", "at most %d nodes, got %d", maxNodes, len(seq.Values))
	}
	seen := map[string]int{}
	for i, v := range seq.Values {
		path := fmt.Sprintf("nodes[%d]", i)
		np, err := d.fields(v, path, "name", "role", "command", "env", "workdir", "start_delay", "ready", "capabilities", "image", "entrypoint", "limits")
		if err != nil {
			return err
		}
		ns := Node{Role: RoleServer, line: lineOf(unwrap(v))}
		var cmdNode ast.Node
		for _, q := range np {
			f := path + "." + q.key
			switch q.key {
			case "name":
				if ns.Name, err = d.str(q.value, f); err != nil {
					return err
				}
				if !ValidHostName(ns.Name) {
					return d.errf(q.value, f, "%q is not a valid host name (letters, digits and inner dashes, at most 63)", ns.Name)
				}
				if prev, dup := seen[ns.Name]; dup {
					return d.errf(q.value, f, "duplicate node name %q (also nodes[%d])", ns.Name, prev)
				}
				seen[ns.Name] = i
			case "role":
				r, err := d.str(q.value, f)
				if err != nil {
					return err
				}
				if r != string(RoleServer) && r != string(RoleClient) {
					return d.errf(q.value, f, "unknown role %q (want server or client)", r)
				}
				ns.Role = Role(r)
			case "command":
				if ns.Command, err = d.strings(q.value, f); err != nil {
					return err
				}
				cmdNode = q.value
				ns.cmdLine = lineOf(q.value)
				if len(ns.Command) == 0 {
					return d.errf(q.value, f, "must not be empty")
				}
			case "image":
				ref, err := d.str(q.value, f)
				if err != nil {
					return err
				}
				if ns.Image, err = d.image(ref, s.Dir); err != nil {
					return d.errf(q.value, f, "%v", err)
				}
				ns.imageLine = lineOf(q.value)
			case "entrypoint":
				if ns.Entrypoint, err = d.strings(q.value, f); err != nil {
					return err
				}
				if ns.Entrypoint == nil {
					ns.Entrypoint = []string{}
				}
			case "env":
				if ns.Env, ns.envLines, err = d.envMap(q.value, f); err != nil {
					return err
				}
			case "workdir":
				if ns.Workdir, err = d.str(q.value, f); err != nil {
					return err
				}
				if ns.Workdir == "" {
					return d.errf(q.value, f, "must not be empty (leave it out for the default)")
				}
				ns.workdirLine = lineOf(q.value)
			case "start_delay":
				if ns.StartDelay, err = d.duration(q.value, f, true, maxVirtualTime); err != nil {
					return err
				}
				ns.delayLine = lineOf(q.value)
			case "ready":
				if ns.ReadyPort, err = d.ready(q.value, f); err != nil {
					return err
				}
			case "limits":
				if ns.Limits, err = d.nodeLimits(q.value, f); err != nil {
					return err
				}
			case "capabilities":
				names, err := d.strings(q.value, f)
				if err != nil {
					return err
				}
				for _, name := range names {
					c, err := ParseCap(name)
					if err != nil {
						return d.errf(q.value, f, "%v", err)
					}
					ns.Caps = append(ns.Caps, c)
				}
			}
		}
		if ns.Name == "" {
			return d.errf(v, path+".name", "missing")
		}
		if cmdNode == nil && ns.Image == nil {
			return d.errf(v, path+".command", "missing")
		}
		if ns.Entrypoint != nil && ns.Image == nil {
			return d.errf(v, path+".entrypoint", "only an image node has an entrypoint (put it in command)")
		}
		if ns.Image != nil {
			// A replay refuses a spec whose image changed.
			s.Digest = digest([]byte(s.Digest + "\n" + path + ".image " + ns.Image.ID))
		}
		s.Nodes = append(s.Nodes, ns)
	}
	if _, err := nodeAddrs(s.Network.Subnet, len(s.Nodes)); err != nil {
		return d.errf(n, "nodes", "%v", err)
	}
	clients := 0
	for _, ns := range s.Nodes {
		if ns.Role == RoleClient {
			clients++
		}
	}
	if clients == 0 {
		return d.errf(n, "nodes", "no node has role client: a trial ends when its clients exit")
	}
	return nil
}

// envMap decodes a node's env and the line of each variable.
func (d *decoder) envMap(n ast.Node, field string) (map[string]string, map[string]int, error) {
	var pairs []*ast.MappingValueNode
	switch m := n.(type) {
	case *ast.MappingNode:
		pairs = m.Values
	case *ast.MappingValueNode:
		pairs = []*ast.MappingValueNode{m}
	default:
		return nil, nil, d.errf(n, field, "must be a mapping of names to strings, got %s", describe(n))
	}
	out := map[string]string{}
	lines := map[string]int{}
	for _, p := range pairs {
		k := keyName(p.Key)
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, nil, d.errf(p.Key, field, "invalid variable name %q", k)
		}
		if _, dup := out[k]; dup {
			return nil, nil, d.errf(p.Key, field+"."+k, "given twice")
		}
		v, err := d.word(unwrap(p.Value), field+"."+k)
		if err != nil {
			return nil, nil, err
		}
		if strings.ContainsRune(v, 0) {
			return nil, nil, d.errf(p.Value, field+"."+k, "contains a NUL byte, which no environment can hold")
		}
		out[k] = v
		lines[k] = lineOf(p.Key)
	}
	return out, lines, nil
}

func (d *decoder) checker(n ast.Node, s *Spec) error {
	cp, err := d.fields(n, "checker", "command", "timeout", "model", "history")
	if err != nil {
		return err
	}
	for _, q := range cp {
		switch q.key {
		case "command":
			if s.Checker.Command, err = d.strings(q.value, "checker.command"); err != nil {
				return err
			}
			s.checkerLine = lineOf(q.value)
			if len(s.Checker.Command) == 0 {
				return d.errf(q.value, "checker.command", "must not be empty")
			}
		case "timeout":
			if s.Checker.Timeout, err = d.duration(q.value, "checker.timeout", false, maxRealTime); err != nil {
				return err
			}
		}
	}
	if s.Checker.Model, err = d.checkerModel(n, cp); err != nil {
		return err
	}
	if len(s.Checker.Command) == 0 && s.Checker.Model == nil {
		return d.errf(n, "checker.command", "missing (or give checker.model)")
	}
	return nil
}

// usableSubnet refuses a subnet whose addresses cannot carry the cluster's
// traffic: a special-purpose range, or one of the host's own networks.
func (d *decoder) usableSubnet(n ast.Node, pfx netip.Prefix) error {
	for _, u := range unusableNets {
		if pfx.Overlaps(u.pfx) {
			return d.errf(n, "network.subnet", "%s overlaps %s addresses: choose a private range such as 10.77.0.0/24", pfx, u.what)
		}
	}
	if d.hostNets == nil {
		return nil
	}
	host, err := d.hostNets()
	if err != nil {
		return d.errf(n, "network.subnet", "%v", err)
	}
	for _, h := range host {
		if pfx.Overlaps(h) {
			return d.errf(n, "network.subnet", "%s overlaps the host's network %s: choose another", pfx, h)
		}
	}
	return nil
}

// nodeAddrs assigns node i the address base+i+1, the rule package netns
// follows too.
func nodeAddrs(subnet netip.Prefix, n int) ([]netip.Addr, error) {
	size := 1 << (32 - subnet.Bits())
	if n > size-3 { // network, bridge and broadcast addresses are taken
		return nil, fmt.Errorf("%d nodes do not fit in %s (at most %d)", n, subnet, size-3)
	}
	var out []netip.Addr
	a := subnet.Masked().Addr()
	for i := 0; i < n; i++ {
		a = a.Next()
		out = append(out, a)
	}
	return out, nil
}

// TemplateVars are the per-trial values templates may use.
type TemplateVars struct {
	TrialDir string
	NodeDir  string
	Seed     int64
	Addrs    map[string]netip.Addr
}

func (s *Spec) funcs(node string, v TemplateVars) template.FuncMap {
	names := make([]string, len(s.Nodes))
	addrs := make([]string, len(s.Nodes))
	for i, n := range s.Nodes {
		names[i] = n.Name
		addrs[i] = v.Addrs[n.Name].String()
	}
	return template.FuncMap{
		"addr": func(name string) (string, error) {
			a, ok := v.Addrs[name]
			if !ok {
				return "", fmt.Errorf("unknown node %q", name)
			}
			return a.String(), nil
		},
		"tmp":      func() string { return v.NodeDir },
		"trialdir": func() string { return v.TrialDir },
		"dir":      func() string { return s.Dir },
		"node":     func() string { return node },
		"seed":     func() int64 { return v.Seed },
		"nodes":    func() string { return strings.Join(names, ",") },
		"addrs":    func() string { return strings.Join(addrs, ",") },
	}
}

// expandAll renders the templates in, what they produce counted against
// bud (see maxTemplateOutput).
func (s *Spec) expandAll(node string, v TemplateVars, in []string, bud *budget) ([]string, error) {
	out := make([]string, len(in))
	for i, a := range in {
		if !strings.Contains(a, "{{") {
			out[i] = a
			continue
		}
		if err := bud.parse(a); err != nil {
			return nil, fmt.Errorf("template %s: %w", quoteTemplate(a), err)
		}
		t, err := template.New("arg").Option("missingkey=error").Funcs(s.funcs(node, v)).Funcs(boundedFuncs(bud)).Parse(a)
		if err != nil {
			return nil, fmt.Errorf("template %s: %v", quoteTemplate(a), cleanTemplateErr(err))
		}
		if err := checkTree(t); err != nil {
			return nil, fmt.Errorf("template %s: %w", quoteTemplate(a), err)
		}
		var b strings.Builder
		if err := t.Execute(budgetWriter{b: bud, w: &b}, nil); err != nil {
			if errors.Is(err, errTemplateOutput) {
				return nil, fmt.Errorf("template %s: %w", quoteTemplate(a), errTemplateOutput)
			}
			return nil, fmt.Errorf("template %s: %v", quoteTemplate(a), cleanTemplateErr(err))
		}
		out[i] = b.String()
	}
	return out, nil
}

func cleanTemplateErr(err error) string {
	msg := err.Error()
	// "template: arg:1:7: executing \"arg\" at <addr "x">: error calling addr: unknown node "x""
	if i := strings.LastIndex(msg, ": "); i >= 0 && strings.Contains(msg, "error calling") {
		return msg[i+2:]
	}
	return strings.TrimPrefix(msg, "template: arg:1: ")
}

// Expand renders a node's command, environment and working directory.
func (s *Spec) Expand(node string, v TemplateVars) (argv, env []string, workdir string, err error) {
	var ns *Node
	for i := range s.Nodes {
		if s.Nodes[i].Name == node {
			ns = &s.Nodes[i]
		}
	}
	if ns == nil {
		return nil, nil, "", fmt.Errorf("no node %q", node)
	}
	bud := newBudget()
	if argv, err = s.command(ns, v, bud); err != nil {
		return nil, nil, "", err
	}
	keys := make([]string, 0, len(ns.Env))
	for k := range ns.Env {
		keys = append(keys, k)
	}
	sortStrings(keys)
	for _, k := range keys {
		val, err := s.expandAll(node, v, []string{ns.Env[k]}, bud)
		if err != nil {
			return nil, nil, "", err
		}
		env = append(env, k+"="+val[0])
	}
	workdir = v.NodeDir
	if ns.Image != nil {
		env, workdir = ns.Image.imageEnv(env), ns.Image.workdir()
	}
	if ns.Workdir != "" {
		wd, err := s.expandAll(node, v, []string{ns.Workdir}, bud)
		if err != nil {
			return nil, nil, "", err
		}
		workdir = wd[0]
	}
	return argv, env, workdir, nil
}

// within reports whether path, made absolute and cleaned, lies in dir.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, filepath.Clean(path))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// ExpandChecker renders the checker's command.
func (s *Spec) ExpandChecker(v TemplateVars) ([]string, error) {
	return s.expandAll("", v, s.Checker.Command, newBudget())
}

// validateTemplates renders every template with placeholder values so that
// an unknown node or a syntax error is reported when the spec is loaded,
// under the field that holds it, and checks that every node can start: its
// program is something the kernel can execute, its workdir exists and its
// arguments fit in what execve accepts.
func (s *Spec) validateTemplates(d *decoder) error {
	addrs, _ := nodeAddrs(s.Network.Subnet, len(s.Nodes))
	vars := func(trial string) TemplateVars {
		v := TemplateVars{TrialDir: trial, NodeDir: trial + "/node", Seed: 1, Addrs: map[string]netip.Addr{}}
		for i, n := range s.Nodes {
			v.Addrs[n.Name] = addrs[i]
		}
		return v
	}
	// Two different trial directories tell a workdir that lockstep makes
	// per trial from one that must exist already.
	v, other := vars("/lockstep-trial"), vars("/lockstep-other-trial")
	// One budget for every node's templates: the spec's validation is
	// bounded whatever the number of nodes and fields.
	bud := newBudget()
	for i, n := range s.Nodes {
		serr := func(line int, field, format string, args ...any) error {
			return &Error{File: d.file, Line: line, Field: fmt.Sprintf("nodes[%d].%s", i, field), Msg: "node " + n.Name + ": " + fmt.Sprintf(format, args...)}
		}
		argv := make([]string, len(n.Command))
		for j, a := range n.Command {
			out, err := s.expandAll(n.Name, v, []string{a}, bud)
			if err != nil {
				return serr(n.cmdLine, fmt.Sprintf("command[%d]", j), "%v", err)
			}
			if strings.ContainsRune(out[0], 0) {
				return serr(n.cmdLine, fmt.Sprintf("command[%d]", j), "contains a NUL byte, which no argument can hold")
			}
			argv[j] = out[0]
		}
		env := make([]string, 0, len(n.Env))
		for _, k := range sortedKeys(n.Env) {
			out, err := s.expandAll(n.Name, v, []string{n.Env[k]}, bud)
			if err != nil {
				return serr(n.envLines[k], "env."+k, "%v", err)
			}
			if strings.ContainsRune(out[0], 0) {
				return serr(n.envLines[k], "env."+k, "contains a NUL byte, which no environment can hold")
			}
			env = append(env, k+"="+out[0])
		}
		if n.Image != nil {
			// The image's paths: nothing to find on the host.
			if err := s.checkImageNode(n, v); err != nil {
				return serr(n.imageLine, "image", "%v", err)
			}
		} else if n.Workdir != "" {
			wd, err := s.expandAll(n.Name, v, []string{n.Workdir}, bud)
			if err != nil {
				return serr(n.workdirLine, "workdir", "%v", err)
			}
			wd2, _ := s.expandAll(n.Name, other, []string{n.Workdir}, bud)
			if wd[0] == wd2[0] {
				if err := checkDir(wd[0]); err != nil {
					return serr(n.workdirLine, "workdir", "%v", err)
				}
			} else if !within(wd[0], v.TrialDir) {
				// Made per trial, it must stay in the trial's directory: a
				// node that runs elsewhere writes elsewhere.
				return serr(n.workdirLine, "workdir", "%q leaves the trial directory", n.Workdir)
			}
		}
		if n.Image == nil {
			if err := checkArgs(argv, env); err != nil {
				return serr(n.cmdLine, "command", "%v", err)
			}
			if err := checkProgram(argv[0], s.Dir); err != nil {
				return serr(n.cmdLine, "command", "%v", err)
			}
		}
		if n.StartDelay >= s.Limits.VirtualTime {
			return serr(n.delayLine, "start_delay", "%v is not before limits.virtual_time (%v): the node would never start", n.StartDelay, s.Limits.VirtualTime)
		}
	}
	if len(s.Checker.Command) > 0 {
		serr := func(format string, args ...any) error {
			return &Error{File: d.file, Line: s.checkerLine, Field: "checker.command", Msg: fmt.Sprintf(format, args...)}
		}
		argv, err := s.ExpandChecker(v)
		if err != nil {
			return serr("%v", err)
		}
		if err := checkArgs(argv, nil); err != nil {
			return serr("%v", err)
		}
		if err := checkProgram(argv[0], s.Dir); err != nil {
			return serr("%v", err)
		}
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sortStrings(keys)
	return keys
}

// checkDir says why a node could not chdir to dir.
func checkDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("directory %s does not exist", dir)
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	return nil
}

// Kernel limits on execve's arguments (linux/binfmts.h).
const (
	maxArgStrLen = 32 * 4096 // MAX_ARG_STRLEN, with the NUL
	minArgMax    = 128 << 10 // what the kernel allows whatever the stack limit
	maxArgMax    = 6 << 20   // 3/4 of _STK_LIM: the cap whatever the stack limit
	// argHeadroom is kept for what the placeholders do not show: the real
	// output directory in each {{tmp}} and lockstep's own variables.
	argHeadroom = 16 << 10
)

// checkArgs refuses a command line execve would refuse with E2BIG.
func checkArgs(argv, env []string) error {
	total := 0
	for i, a := range argv {
		if len(a)+1 > maxArgStrLen {
			return fmt.Errorf("argument %d is %d bytes, over the kernel's limit of %d for one argument", i, len(a), maxArgStrLen-1)
		}
		total += len(a) + 1 + 8 // the string and its pointer
	}
	for _, e := range env {
		if len(e)+1 > maxArgStrLen {
			k, _, _ := strings.Cut(e, "=")
			return fmt.Errorf("variable %s is %d bytes, over the kernel's limit of %d for one variable", k, len(e), maxArgStrLen-1)
		}
		total += len(e) + 1 + 8
	}
	if limit := argMax() - argHeadroom; total > limit {
		return fmt.Errorf("arguments and environment take %d bytes, over the %d the kernel accepts for a new program", total, limit)
	}
	return nil
}

// argMax is execve's limit on arguments plus environment: a quarter of
// the stack limit, within the kernel's floor and cap.
func argMax() int {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_STACK, &rl); err != nil || rl.Cur == unix.RLIM_INFINITY || rl.Cur/4 > maxArgMax {
		return maxArgMax
	}
	return max(int(rl.Cur/4), minArgMax)
}

func checkProgram(p, dir string) error {
	if !strings.Contains(p, "/") {
		lp, err := exec.LookPath(p)
		if err != nil {
			return fmt.Errorf("program %q not found in PATH", p)
		}
		return checkExecutable(lp, 0)
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	st, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("program %s does not exist (built? try `make testdata`)", p)
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return fmt.Errorf("program %s is not executable", p)
	}
	return checkExecutable(p, 0)
}

// elfMachine is the ELF machine of programs this lockstep can trace.
var elfMachine = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[runtime.GOARCH]

// maxInterpDepth is how many #! interpreters may chain (the kernel allows
// a few more; a longer chain is a mistake).
const maxInterpDepth = 4

// checkExecutable looks inside an executable file for what would make
// execve fail in every trial: an empty file, a script without #!, a
// missing interpreter, a binary for another machine.
func checkExecutable(p string, depth int) error {
	f, err := os.Open(p)
	if err != nil {
		// Unreadable but executable: only the kernel can tell.
		return nil
	}
	defer f.Close()
	// The kernel reads the first 256 bytes (BINPRM_BUF_SIZE) to decide.
	head := make([]byte, 256)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	switch {
	case n == 0:
		return fmt.Errorf("program %s is an empty file", p)
	case bytes.HasPrefix(head, []byte("#!")):
		line, _, _ := bytes.Cut(head[2:], []byte("\n"))
		fs := strings.Fields(string(line))
		if len(fs) == 0 {
			return fmt.Errorf("program %s: its #! line names no interpreter", p)
		}
		interp := fs[0]
		if !filepath.IsAbs(interp) {
			return fmt.Errorf("program %s: interpreter %s in its #! line must be an absolute path", p, interp)
		}
		st, err := os.Stat(interp)
		if err != nil {
			return fmt.Errorf("program %s: interpreter %s in its #! line does not exist", p, interp)
		}
		if st.IsDir() || st.Mode()&0o111 == 0 {
			return fmt.Errorf("program %s: interpreter %s in its #! line is not executable", p, interp)
		}
		if depth+1 >= maxInterpDepth {
			return fmt.Errorf("program %s: more than %d #! interpreters in a chain", p, maxInterpDepth)
		}
		return checkExecutable(interp, depth+1)
	case bytes.HasPrefix(head, []byte(elf.ELFMAG)):
		ef, err := elf.NewFile(f)
		if err != nil {
			return fmt.Errorf("program %s is not a valid ELF file: %v", p, err)
		}
		defer ef.Close()
		if ef.Type != elf.ET_EXEC && ef.Type != elf.ET_DYN {
			return fmt.Errorf("program %s is an ELF %s, not an executable", p, strings.TrimPrefix(ef.Type.String(), "ET_"))
		}
		if elfMachine != elf.EM_NONE && (ef.Machine != elfMachine || ef.Class != elf.ELFCLASS64) {
			return fmt.Errorf("program %s is a %s-bit %s binary; this machine runs %s", p,
				strings.TrimPrefix(ef.Class.String(), "ELFCLASS"), strings.TrimPrefix(ef.Machine.String(), "EM_"), runtime.GOARCH)
		}
		return nil
	}
	return fmt.Errorf("program %s is neither an ELF binary nor a script starting with #! (the kernel cannot run it)", p)
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// ready decodes a node's readiness condition: {listen: PORT}.
func (d *decoder) ready(n ast.Node, field string) (uint16, error) {
	rp, err := d.fields(n, field, "listen")
	if err != nil {
		return 0, err
	}
	var port uint16
	for _, q := range rp {
		v, err := d.integer(q.value, field+".listen")
		if err != nil {
			return 0, err
		}
		if v < 1 || v > 65535 {
			return 0, d.errf(q.value, field+".listen", "must be a TCP port (1 to 65535), got %d", v)
		}
		port = uint16(v)
	}
	if port == 0 {
		return 0, d.errf(n, field+".listen", "missing")
	}
	return port, nil
}
