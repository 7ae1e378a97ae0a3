package coverage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lockstep-dev/lockstep/internal/safefs"
	"github.com/lockstep-dev/lockstep/sched"
)

// Trial is what a trial left that features are read from: its trace and
// the lines its nodes printed.
type Trial struct {
	Trace *sched.Trace
	// Logs are the nodes' outputs, each a node's stdout or stderr, in the
	// order of the nodes' names then out before err.
	Logs []Log
}

// Log is the lines one node printed on one stream.
type Log struct {
	Node   string
	Stream string // "out" or "err"
	Lines  []string
}

// ReadTrial reads a trial's directory: trace.jsonl, and the
// <node>.out and <node>.err of each node the trace names.
func ReadTrial(dir string) (*Trial, error) {
	tr, err := ReadTrace(filepath.Join(dir, "trace.jsonl"))
	if err != nil {
		return nil, err
	}
	logs, err := ReadLogs(dir, nodes(tr))
	if err != nil {
		return nil, err
	}
	return &Trial{Trace: tr, Logs: logs}, nil
}

// maxLogRead bounds what is read of one output file for its templates: a
// node that printed gigabytes is read for its first lines only.
const maxLogRead = 16 << 20

// ReadLogs reads the <node>.out and <node>.err of each node in a trial's
// directory, in the order given, out before err; a file not there is
// left out.
func ReadLogs(dir string, nodes []string) ([]Log, error) {
	// A trial's directory is the nodes' to write: their output is read
	// through no link (a node may leave one to a host file there).
	d, err := safefs.OpenDir(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	var logs []Log
	for _, node := range nodes {
		for _, stream := range []string{"out", "err"} {
			f, err := d.Open(node + "." + stream)
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", filepath.Join(dir, node+"."+stream), err)
			}
			b, err := io.ReadAll(io.LimitReader(f, maxLogRead))
			f.Close()
			if err != nil {
				return nil, err
			}
			logs = append(logs, Log{Node: node, Stream: stream, Lines: lines(b)})
		}
	}
	return logs, nil
}

// Classes counts the features seen by class: kinds, templates and
// orderings.
func (c *Coverage) Classes() (kinds, templates, orderings int) {
	for _, f := range c.list {
		switch f.Class {
		case ClassKind:
			kinds++
		case ClassTemplate:
			templates++
		case ClassOrdering:
			orderings++
		}
	}
	return kinds, templates, orderings
}

// ReadTrace reads a trace file.
func ReadTrace(path string) (*sched.Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr, err := sched.ReadTrace(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return tr, nil
}

// nodes are the nodes a trace's ops name, sorted.
func nodes(tr *sched.Trace) []string {
	var out []string
	for _, r := range tr.Records {
		if r.Op.LPID != "fault" && r.Op.Node != "" {
			out = append(out, r.Op.Node)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Class is what a feature is of.
type Class uint8

const (
	ClassKind     Class = iota + 1 // a message kind
	ClassTemplate                  // a log template
	ClassOrdering                  // one feature before another at a node
)

func (c Class) String() string {
	switch c {
	case ClassKind:
		return "kind"
	case ClassTemplate:
		return "template"
	case ClassOrdering:
		return "ordering"
	}
	return "invalid"
}

// Feature is one thing a trial can show: a message kind (Key: its protocol
// and shape, ":7000 PUT"), a log template (Key: the template), or an
// ordering (Key: two elements and the faults in force, "<:7000 PUT ⇒
// >:7000 OK | partition", an element a message received "<", sent ">" or
// a line printed "@"). Keys say what a feature is, not when it was first
// seen: campaigns, shards and runs agree on them.
type Feature struct {
	Class Class
	Key   string
}

func (f Feature) String() string { return f.Class.String() + " " + f.Key }

// Features are the features of one trial, each once, in the order first
// seen.
type Features []Feature

// Coverage is a campaign's coverage: the features its trials showed, in the
// order first seen, with how many trials showed each, and the kinds and
// templates learned on the way. Adding the same trials in the same order
// gives the same IDs and counts.
type Coverage struct {
	replays   sched.FaultReplays
	kinds     *Kinds
	templates *Templates
	ids       map[Feature]int // 1, 2, … in order first seen
	list      []Feature
	counts    []int // by ID-1: trials that showed the feature
	names     map[string]string
}

// New returns an empty coverage. fr says which fault kinds are recoveries
// (faults.ReplayOf, handed in as the engine hands it to a replay: this
// package does not import faults), for the faults in force at each
// message.
func New(fr sched.FaultReplays) *Coverage {
	return &Coverage{replays: fr, kinds: NewKinds(), templates: NewTemplates(), ids: map[Feature]int{}, names: map[string]string{}}
}

// Kinds are the message kinds learned so far.
func (c *Coverage) Kinds() *Kinds { return c.kinds }

// Templates are the log templates learned so far.
func (c *Coverage) Templates() *Templates { return c.templates }

// Features reads a trial's features, learning its kinds and templates:
// each message's kind, each line's template, and at each node the
// orderings of the messages it received and sent (with the faults in
// force) and of the lines of each of its streams. Lines carry no step, so
// their orderings are with each other and under no fault.
func (c *Coverage) Features(t *Trial) Features {
	fs, _ := c.FeaturesAt(t)
	return fs
}

// FeaturesAt is Features with, for each, the index of the trace record at
// which the trial first showed it: a message kind's send or delivery, an
// ordering's later message; -1 for what lines show (a line carries no
// step).
func (c *Coverage) FeaturesAt(t *Trial) (Features, []int) {
	rd := c.Read(t)
	return rd.Features, rd.Where
}

// TrialRead is what Read takes from a trial.
type TrialRead struct {
	// Features and Where are FeaturesAt's.
	Features Features
	Where    []int
	// Messages are the trial's messages with their kinds
	// (Kinds.Messages): what an exploring campaign aims a hold at
	// (package explore).
	Messages []Message
	// Repeats are, by template text, the most lines of that template one
	// node printed: a livelock shows as a line repeated hundreds of times
	// that a passing trial prints a few times at most.
	Repeats map[string]int
}

// Read is FeaturesAt with the trial's messages and how often its nodes
// printed each template, all read once.
func (c *Coverage) Read(t *Trial) TrialRead {
	var fs Features
	var where []int
	repeats := map[string]int{}
	seen := map[Feature]bool{}
	add := func(f Feature, rec int) {
		if !seen[f] {
			seen[f] = true
			fs = append(fs, f)
			where = append(where, rec)
		}
	}
	addOrdering := func(a, b event) {
		add(Feature{ClassOrdering, a.elem + " ⇒ " + b.elem + " | " + b.fault}, b.rec)
	}

	tr := t.Trace
	msgs, sendKinds := c.kinds.Messages(tr)
	inForce := faultsInForce(tr, c.replays)
	timelines := map[string][]event{}
	var order []string // nodes, in order first seen
	at := func(node string, e event) {
		if node == "" {
			return
		}
		if _, ok := timelines[node]; !ok {
			order = append(order, node)
		}
		timelines[node] = append(timelines[node], e)
	}
	// Messages and sends in step order: a message is received at its
	// delivery (or, lost, not at all), sent at its send.
	next := 0
	for i := range tr.Records {
		r := &tr.Records[i]
		if r.Op.Kind == sched.Send {
			if k := sendKinds[r.Op.ID]; k != nil {
				add(Feature{ClassKind, k.key()}, i)
				at(r.Op.Node, c.event(">", k, inForce[i], i))
			}
		}
		for next < len(msgs) && msgs[next].Record == i {
			m := msgs[next]
			next++
			add(Feature{ClassKind, m.Kind.key()}, i)
			if r.Op.Kind == sched.Deliver {
				at(m.To, c.event("<", m.Kind, inForce[i], i))
			}
		}
	}
	for _, node := range order {
		orderings(timelines[node], Window, addOrdering)
	}
	byNode := map[string]map[string]int{}
	for _, l := range t.Logs {
		var timeline []event
		counts := byNode[l.Node]
		if counts == nil {
			counts = map[string]int{}
			byNode[l.Node] = counts
		}
		for _, line := range l.Lines {
			e := c.templates.Classify(line)
			if e == nil {
				continue
			}
			counts[e.Text]++
			repeats[e.Text] = max(repeats[e.Text], counts[e.Text])
			add(Feature{ClassTemplate, e.Text}, -1)
			elem := "@" + e.Text
			c.names[elem] = e.Name()
			timeline = append(timeline, event{elem: elem, rec: -1})
		}
		orderings(timeline, Window, addOrdering)
	}
	return TrialRead{Features: fs, Where: where, Messages: msgs, Repeats: repeats}
}

// event is a message's element at a node, remembering its short name.
func (c *Coverage) event(dir string, k *Kind, fault string, rec int) event {
	elem := dir + k.key()
	c.names[elem] = dir + k.Name()
	return event{elem: elem, fault: fault, rec: rec}
}

// Add reads a trial's features into the coverage and returns those it
// showed first: its novelty.
func (c *Coverage) Add(t *Trial) (novel []Feature) { return c.Merge(c.Features(t)) }

// Merge adds one trial's features (each counted once) and returns those
// new to the coverage.
func (c *Coverage) Merge(fs Features) (novel []Feature) {
	for _, f := range fs {
		id, ok := c.ids[f]
		if !ok {
			c.list = append(c.list, f)
			c.counts = append(c.counts, 0)
			id = len(c.list)
			c.ids[f] = id
			novel = append(novel, f)
		}
		c.counts[id-1]++
	}
	return novel
}

// Len is how many features the campaign has seen.
func (c *Coverage) Len() int { return len(c.list) }

// List is every feature seen, in the order first seen.
func (c *Coverage) List() []Feature { return c.list }

// ID is a feature's number in the campaign (1 for the first seen), 0 if
// never seen.
func (c *Coverage) ID(f Feature) int { return c.ids[f] }

// Count is how many trials showed a feature.
func (c *Coverage) Count(f Feature) int {
	if id := c.ids[f]; id > 0 {
		return c.counts[id-1]
	}
	return 0
}

// CountOf is how many trials showed the feature with this ID (0 if none).
func (c *Coverage) CountOf(id int) int {
	if id < 1 || id > len(c.counts) {
		return 0
	}
	return c.counts[id-1]
}

// ClassOf is the class of the feature with this ID (0 if none).
func (c *Coverage) ClassOf(id int) Class {
	if id < 1 || id > len(c.list) {
		return 0
	}
	return c.list[id-1].Class
}

// Rarity is how rare a feature is, for a search to spend its energy on:
// 1 over the trials that showed it (1 for a feature seen once or never),
// so a trial reaching rare features can be preferred as AFL's rare-branch
// schedules do.
func (c *Coverage) Rarity(f Feature) float64 { return 1 / float64(max(1, c.Count(f))) }

// Describe says what a feature is with the campaign's short names: a
// kind's label, a template's name and text, an ordering of short names
// ("<k3 ⇒ >k5 | partition").
func (c *Coverage) Describe(f Feature) string {
	switch f.Class {
	case ClassKind:
		if k := c.kinds.byKey[f.Key]; k != nil {
			return k.Proto + " " + k.Label()
		}
	case ClassTemplate:
		if t := c.templates.byText[f.Key]; t != nil {
			return t.Name() + " " + f.Key
		}
	case ClassOrdering:
		// The fault kinds hold no " | ", a template may.
		i := strings.LastIndex(f.Key, " | ")
		if i < 0 {
			break
		}
		pair, fault := f.Key[:i], f.Key[i+len(" | "):]
		a, b, _ := strings.Cut(pair, " ⇒ ")
		s := c.short(a) + " ⇒ " + c.short(b)
		if fault != "" {
			s += " | " + fault
		}
		return s
	}
	return f.String()
}

func (c *Coverage) short(elem string) string {
	if n, ok := c.names[elem]; ok {
		return n
	}
	return elem
}
