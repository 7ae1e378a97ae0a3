package engine

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/coverage"
	"github.com/lockstep-dev/lockstep/result"
	"github.com/lockstep-dev/lockstep/spec"
)

// maxPropertyLine bounds a line the properties are matched against: a
// node printing megabytes without a newline is cut there, not buffered.
const maxPropertyLine = 64 << 10

// maxPropertyRead bounds what one scan reads of one output file.
const maxPropertyRead = 1 << 20

// properties watches the nodes' output for the spec's properties: at every
// decision it reads what each node printed since the last one (every
// thread is stopped then, so what is there is the same in a replay) and
// matches each new line. A never that matches is the trial's failure,
// at the step after which it was printed.
type properties struct {
	props []spec.Property
	files []*outputFile
	// symptom, when set, is matched against every line (run --symptom):
	// lines are the templates of the lines printed, in the order read,
	// steps the step after which each was; printing its last line is the
	// trial's failure (symptomProperty).
	symptom *coverage.Symptom
	lines   []string
	steps   []int
	// reached says, per property, whether a line matched it.
	reached []bool
	// goals are, per property, a sometimes' pattern's words
	// (coverage.GoalWords), near how close the trial's lines came to it
	// while none matched it: explore's goals, and the summary's closest.
	goals [][]string
	near  []nearLine
	// keep, when set, keeps every line with its node and step (replay
	// --lines): the nodes' lines in the one order they were read.
	keep bool
	log  []result.Line
	// counts are the nodes' activity counts (bpf.Activity), by node; a
	// node without one has its files read at every scan (ranSince).
	counts map[string]func() uint64
	// claims are, per unique property, the node that first printed each
	// value and where (claim); nil for the other kinds.
	claims []map[string]claim
	// broke is the first never that matched (or unique that a second
	// node's line broke), with the line.
	broke *brokenProperty
}

// claim is the first line that printed a unique property's value.
type claim struct {
	node, line string
	step       int
}

// maxClaims bounds the values a unique property remembers in a trial: a
// pattern that captures a new value on every line (a timestamp) is cut
// there rather than growing without bound. A value first printed past it
// is not checked.
const maxClaims = 1 << 16

// nearLine is the first line that came closest to a sometimes: the
// words of its pattern it held in order, the step after which it was
// printed, and the line as an outcome quotes it.
type nearLine struct {
	words, step int
	line        string
}

type brokenProperty struct {
	prop *spec.Property
	node string
	line string
	step int
	// first and value, for a unique: the other node's line with the same
	// value, and the value.
	first *claim
	value string
}

// String is the broken property as the trial's outcome says it.
func (br *brokenProperty) String() string {
	if br.first != nil {
		return fmt.Sprintf("%s printed %s after step %d, and %s printed %s after step %d (unique %q: value %s)",
			br.node, quoteLine(br.line), br.step, br.first.node, quoteLine(br.first.line), br.first.step, br.prop.Name, quoteLine(br.value))
	}
	return fmt.Sprintf("%s printed %s after step %d (never %q)", br.node, quoteLine(br.line), br.step, br.prop.Name)
}

// outputFile is one node output file being read.
type outputFile struct {
	node, name string
	f          *os.File
	off        int64
	partial    []byte
	buf        []byte
	// count is the node's activity count (properties.counts) when the
	// file was last read; counted says there was one.
	count   uint64
	counted bool
}

// newProperties watches the nodes' output files, lockstep's own open
// files (Trial.outputs); nil when the spec has no properties. Each is read
// through a descriptor of its own on the same file, never by its path: a
// node may put a link or a FIFO where its output file was.
func newProperties(sp *spec.Spec, outputs map[string][2]*os.File, symptom *coverage.Symptom, keep bool) (*properties, error) {
	if len(sp.Properties) == 0 && symptom == nil && !keep {
		return nil, nil
	}
	p := &properties{props: sp.Properties, reached: make([]bool, len(sp.Properties)), symptom: symptom,
		goals: make([][]string, len(sp.Properties)), near: make([]nearLine, len(sp.Properties)), keep: keep,
		claims: make([]map[string]claim, len(sp.Properties))}
	for i, pr := range sp.Properties {
		switch pr.Kind {
		case spec.Sometimes:
			p.goals[i] = coverage.GoalWords(pr.Pattern.String())
		case spec.Unique:
			p.claims[i] = map[string]claim{}
		}
	}
	for _, n := range sp.Nodes {
		for i, ext := range []string{".out", ".err"} {
			w := outputs[n.Name][i]
			if w == nil {
				continue
			}
			f, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(int(w.Fd())), os.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				p.close()
				return nil, fmt.Errorf("properties: reading %s%s: %w", n.Name, ext, err)
			}
			p.files = append(p.files, &outputFile{node: n.Name, name: n.Name + ext, f: f})
		}
	}
	return p, nil
}

// scan reads what the nodes printed since the last scan; step is the
// number of the last op released. It reports the first never broken.
func (p *properties) scan(step int) (*brokenProperty, error) {
	if p == nil {
		return nil, nil
	}
	for _, of := range p.files {
		if !p.ranSince(of) {
			continue
		}
		if err := p.read(of, step); err != nil {
			return nil, err
		}
		if p.broke != nil {
			return p.broke, nil
		}
	}
	return nil, nil
}

// ranSince reports whether of's node may have written since the file was
// last read: a node writes only by running, and a node whose activity
// count (bpf.Activity) did not move since then did not run. It notes the
// count for the next scan; without one, every scan reads every file.
func (p *properties) ranSince(of *outputFile) bool {
	count := p.counts[of.node]
	if count == nil {
		return true
	}
	c := count()
	if of.counted && c == of.count {
		return false
	}
	of.count, of.counted = c, true
	return true
}

// uncount makes the next scan read every file (the nodes are gone, and
// what they wrote last must be read whatever the counts say).
func (p *properties) uncount() {
	for _, of := range p.files {
		of.counted = false
	}
}

// read matches the complete lines of of written since the last read.
func (p *properties) read(of *outputFile, step int) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(of.f.Fd()), &st); err != nil {
		return fmt.Errorf("properties: %s: %w", of.name, err)
	}
	if st.Size <= of.off {
		return nil
	}
	want := min(st.Size-of.off, maxPropertyRead)
	if int64(cap(of.buf)) < want {
		of.buf = make([]byte, want)
	}
	b := of.buf[:want]
	n, err := of.f.ReadAt(b, of.off)
	if int64(n) < st.Size-of.off {
		// The rest is for the next scan, whether the node runs or not.
		of.counted = false
	}
	if n == 0 && err != nil {
		return nil // truncated under us (an output limit's cut): read on from the next scan
	}
	of.off += int64(n)
	b = b[:n]
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break
		}
		line := b[:i]
		if len(of.partial) > 0 {
			line = append(of.partial, line...)
			of.partial = of.partial[:0]
		}
		p.match(of.node, line, step)
		if p.broke != nil {
			return nil
		}
		b = b[i+1:]
	}
	if len(of.partial)+len(b) <= maxPropertyLine {
		of.partial = append(of.partial, b...)
	}
	return nil
}

// flush matches the last lines that did not end in a newline: at the end
// of a trial, the node's output is final.
func (p *properties) flush(step int) {
	if p == nil {
		return
	}
	for _, of := range p.files {
		if len(of.partial) > 0 && p.broke == nil {
			p.match(of.node, of.partial, step)
			of.partial = of.partial[:0]
		}
	}
}

func (p *properties) match(node string, line []byte, step int) {
	line = bytes.TrimRight(line, "\r")
	if p.keep && len(p.log) < maxSymptomLines {
		p.log = append(p.log, result.Line{Node: node, Text: string(line), Step: step})
	}
	if p.symptom != nil {
		p.matchSymptom(node, line, step)
	}
	for i := range p.props {
		pr := &p.props[i]
		if !pr.Applies(node) {
			continue
		}
		if pr.Kind == spec.Unique {
			p.claim(i, node, line, step)
			continue
		}
		if !pr.Pattern.Match(line) {
			p.approach(i, line, step)
			continue
		}
		p.reached[i] = true
		if pr.Kind == spec.Never && p.broke == nil {
			p.broke = &brokenProperty{prop: pr, node: node, line: string(line), step: step}
		}
	}
}

// claim matches a line against unique property i: the first node to
// print a value holds it, and another node printing it breaks the
// property. The same node may print it again (a leader that logs its term
// twice is still one leader).
func (p *properties) claim(i int, node string, line []byte, step int) {
	pr := &p.props[i]
	m := pr.Pattern.FindSubmatch(line)
	if m == nil {
		return
	}
	p.reached[i] = true
	// The groups are kept apart in the key (groups "1 2" and "" are not
	// "1" and "2 "), and joined by a space when shown.
	groups := []string{string(m[0])}
	if len(m) > 1 {
		groups = groups[:0]
		for _, g := range m[1:] {
			groups = append(groups, string(g))
		}
	}
	key := strings.Join(groups, "\x00")
	first, ok := p.claims[i][key]
	switch {
	case !ok && len(p.claims[i]) < maxClaims:
		p.claims[i][key] = claim{node: node, line: string(line), step: step}
	case ok && first.node != node && p.broke == nil:
		p.broke = &brokenProperty{prop: pr, node: node, line: string(line), step: step, first: &first, value: strings.Join(groups, " ")}
	}
}

// approach notes how close a line that did not match property i came to
// it, for a sometimes no line of the trial matched yet.
func (p *properties) approach(i int, line []byte, step int) {
	if len(p.goals[i]) == 0 || p.reached[i] {
		return
	}
	if n := coverage.Near(p.goals[i], string(line)); n > p.near[i].words {
		p.near[i] = nearLine{words: n, step: step, line: quoteLine(string(line))}
	}
}

// nears are how close the trial came to each sometimes it did not reach,
// those of which a line held a word.
func (p *properties) nears() []result.Near {
	if p == nil {
		return nil
	}
	var out []result.Near
	for i, n := range p.near {
		if n.words > 0 && !p.reached[i] {
			out = append(out, result.Near{Name: p.props[i].Name, Words: n.words, Of: len(p.goals[i]), Step: n.step, Line: n.line})
		}
	}
	return out
}

// symptomProperty is the never a symptom's last line stands for: a trial
// that prints it has reproduced the symptom, a failing trace.
var symptomProperty = spec.Property{Kind: spec.Never, Name: "symptom"}

// maxSymptomLines bounds the lines a trial keeps for its symptom match,
// or for replay --lines.
const maxSymptomLines = 1 << 17

// matchSymptom notes a line's template for the symptom match, and ends
// the trial when it is the symptom's last line.
func (p *properties) matchSymptom(node string, line []byte, step int) {
	t := coverage.TemplateOf(string(line))
	if len(p.lines) < maxSymptomLines {
		p.lines, p.steps = append(p.lines, t), append(p.steps, step)
	}
	if p.broke == nil && p.symptom.Last(t) {
		p.broke = &brokenProperty{prop: &symptomProperty, node: node, line: string(line), step: step}
	}
}

// symptomMatch is how much of the symptom the trial's lines reproduced
// (coverage.Symptom.Match), and the step after which the last line of
// that match was printed (0 with none).
func (p *properties) symptomMatch() (n, step int) {
	if p == nil || p.symptom == nil {
		return 0, 0
	}
	n, last := p.symptom.Match(p.lines)
	if last >= 0 {
		step = p.steps[last]
	}
	return n, step
}

// symptomHits are the trial's lines that are the symptom's
// (coverage.Symptom.Hits), each with the step after which it was printed.
func (p *properties) symptomHits() [][2]int {
	if p == nil || p.symptom == nil {
		return nil
	}
	hits := p.symptom.Hits(p.lines)
	for i := range hits {
		hits[i][1] = p.steps[hits[i][1]]
	}
	return hits
}

// missed is the first eventually no line matched.
func (p *properties) missed() *spec.Property {
	if p == nil {
		return nil
	}
	for i := range p.props {
		if p.props[i].Kind == spec.Eventually && !p.reached[i] {
			return &p.props[i]
		}
	}
	return nil
}

// matched are the names of the sometimes and unique properties a line
// matched: the summary counts the trials that reached each.
func (p *properties) matched() []string {
	if p == nil {
		return nil
	}
	var out []string
	for i := range p.props {
		if p.props[i].Kind.Counted() && p.reached[i] {
			out = append(out, p.props[i].Name)
		}
	}
	return out
}

func (p *properties) close() {
	if p == nil {
		return
	}
	for _, of := range p.files {
		if of.f != nil {
			of.f.Close()
		}
	}
}

// quoteLine is a node's line as an outcome quotes it, cut to a readable
// length.
func quoteLine(line string) string {
	const most = 200
	if len(line) > most {
		return strconv.Quote(line[:most]) + "…"
	}
	return strconv.Quote(line)
}

// finalProperties reads the nodes' last lines once they are gone: a never
// they printed after the last decision fails a passing trial too, an
// eventually none printed fails it, and the sometimes reached are kept.
func (t *Trial) finalProperties(res *TrialResult) error {
	if t.props == nil {
		return nil
	}
	step := len(res.Records)
	t.props.uncount()
	br, err := t.props.scan(step)
	if err != nil {
		return err
	}
	if br == nil {
		t.props.flush(step)
		br = t.props.broke
	}
	res.Reached, res.Near = t.props.matched(), t.props.nears()
	res.Lines = t.props.log
	res.Symptom, res.SymptomStep = t.props.symptomMatch()
	res.SymptomHits = t.props.symptomHits()
	if res.Outcome.Kind != Pass {
		return nil
	}
	if br != nil {
		res.Outcome.Kind, res.Outcome.Node, res.Outcome.Property = PropertyViolated, br.node, br.prop.Name
		res.Outcome.Detail = br.String()
		return nil
	}
	if m := t.props.missed(); m != nil {
		res.Outcome.Kind, res.Outcome.Property = PropertyViolated, m.Name
		res.Outcome.Detail = fmt.Sprintf("no node printed a line matching %q by the end of the trial (eventually %q)", m.Pattern, m.Name)
		if len(m.Nodes) > 0 {
			res.Outcome.Detail += fmt.Sprintf(" (watched %v)", m.Nodes)
		}
	}
	return nil
}
