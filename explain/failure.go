package explain

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/lockstep-dev/lockstep/coverage"
	"github.com/lockstep-dev/lockstep/engine"
	"github.com/lockstep-dev/lockstep/sched"
)

// failure is what identifies a failure across runs: its kind, and for a
// crashed node or a failed client which one and what it said. Runs of one
// schedule differ in what a program prints of its addresses, ids, counts
// and goroutine or thread numbers (a JVM that wrote "wrote 2.3" where the
// trace has "wrote 2.4", a Go panic's goroutine id and argument words), so
// detail and msg are kept masked: they are what is compared (is); shown
// is the last line as printed, for humans.
type failure struct {
	kind   sched.OutcomeKind
	node   string
	detail string // the outcome's detail, thread indices left out
	msg    string // the panic's message and top frame, or the last line, masked
	shown  string // the failing node's last line of output (or its panic's)
}

func (f failure) String() string {
	s := string(f.kind)
	if f.node != "" {
		s += " of " + f.node
	}
	if f.detail != "" {
		s += ": " + f.detail
	}
	if f.shown != "" {
		s += fmt.Sprintf(" (last output %q)", f.shown)
	}
	return s
}

// is says whether f is the failure want: the same kind, node and detail,
// and the same output once masked. A violated property is the same
// whichever node printed it: a split brain is reported by one side in one
// run and by the other in the next, and a user names the property, not
// the node, as the bug.
func (f failure) is(want failure) bool {
	sameNode := f.node == want.node || f.kind == sched.PropertyViolated
	return f.kind == want.kind && sameNode && f.detail == want.detail && f.msg == want.msg
}

// undoes says a run that ended f shows the failure want gone: it ended
// otherwise, and not because lockstep could not run it (a diverged or
// erroneous run says nothing about the system).
func (f failure) undoes(want failure) bool {
	return !f.is(want) && f.kind != sched.Diverged && f.kind != sched.Error
}

func failureOf(res *engine.TrialResult) failure {
	o := res.Outcome
	f := failure{kind: o.Kind}
	switch o.Kind {
	case sched.PropertyViolated:
		// The property and the node that broke it; the line's numbers may
		// differ between runs of the same failure.
		f.node, f.detail = o.Node, o.Property
	case sched.ClientFailed, sched.NodeCrashed:
		f.node, f.detail = o.Node, threadless(o.Detail)
		for _, ext := range []string{".err", ".out"} {
			if f.msg, f.shown = outputIdentity(tail(filepath.Join(res.Dir, o.Node+ext))); f.msg != "" {
				break
			}
		}
	}
	return f
}

// lpidThread is the thread part of an LPID ("/t3" of "s1/0/t3"): which
// thread of a Go or JVM process exited or was killed is the runtime's
// choice, not the schedule's.
var lpidThread = regexp.MustCompile(`\b([A-Za-z0-9_.-]+(?:/[0-9.]+)+)/t[0-9]+(?:\.[0-9]+)*\b`)

// threadless is an outcome's detail with the thread indices of its LPIDs
// left out: "node s1/0/t3 was killed by SIGSEGV" is "node s1/0 was
// killed by SIGSEGV".
func threadless(detail string) string { return lpidThread.ReplaceAllString(detail, "$1") }

// tailBytes bounds what is read of a node's output: a Go fatal error
// lists every goroutine after its message (hundreds of kilobytes in a
// real server), and a node that printed gigabytes is not read whole at
// every forced run.
const tailBytes = 1 << 20

// tail is the last tailBytes of a file's content, nil when it cannot be
// read.
func tail(path string) []byte { return engine.OutputTail(path, tailBytes) }

// outputIdentity is what identifies a failure in a node's output: a
// panic or an uncaught exception by its message and the program's top
// frame (the lines after it are a stack full of addresses, goroutine ids
// and argument words that change from run to run, and its last line is
// one of them), anything else by its last non-empty line. id is masked
// with coverage.TemplateOf, as log lines are for coverage; shown is the
// line as printed. Both are "" for no output.
func outputIdentity(out []byte) (id, shown string) {
	lines := strings.Split(string(bytes.ReplaceAll(out, []byte("\r\n"), []byte("\n"))), "\n")
	if msg, frame, ok := lastPanic(lines); ok {
		id = coverage.TemplateOf(msg)
		if frame != "" {
			id += " at " + frame
		}
		return id, msg
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if t := strings.TrimSpace(lines[i]); t != "" {
			return coverage.TemplateOf(t), t
		}
	}
	return "", ""
}

// panicForm is how one runtime reports a panic: the line that starts
// it, and how the message and the program's top frame are read from
// there (lines[0] is that line).
type panicForm struct {
	start *regexp.Regexp
	parse func(lines []string) (msg, frame string)
	// trail matches what the runtime prints after the message while it
	// dies (stacks, notes): a panic followed by anything else did not end
	// the program (a JVM thread's uncaught exception, a Go panic a
	// handler logged), and the output's end says more.
	trail *regexp.Regexp
}

var panicForms = []panicForm{
	{ // Go: "panic: …" or "fatal error: …", then a goroutine's stack.
		start: regexp.MustCompile(`^(panic: |fatal error: )`),
		parse: func(lines []string) (string, string) { return strings.TrimSpace(lines[0]), goFrame(lines[1:]) },
		trail: regexp.MustCompile(`^(\t|goroutine |created by |exit status |signal |\[|panic: |fatal error: |runtime stack:|\.\.\.|[\w.*/()$\[\]{}-]+\(.*\)$)`),
	},
	{ // Rust: "thread 'main' (3) panicked at src/main.rs:9:5:", the message
		// on the next line (since 1.73), or "… panicked at 'msg', src/main.rs:9:5".
		start: rustPanic,
		parse: rustParse,
		trail: regexp.MustCompile(`^(note: |stack backtrace:|\s+\d+: |\s+at )`),
	},
	{ // The JVM: `Exception in thread "main" java.lang.X: msg`, then "\tat" frames.
		start: javaException,
		parse: func(lines []string) (string, string) {
			return javaException.ReplaceAllString(strings.TrimSpace(lines[0]), ""), javaFrame(lines[1:])
		},
		trail: regexp.MustCompile(`^(\s+at |\s*\.\.\. \d+ more|\s*Caused by: |\s*Suppressed: )`),
	},
}

// The threads' names are left out of the message: which thread of a pool
// panicked is the runtime's choice.
var (
	rustPanic     = regexp.MustCompile(`^thread '[^']*'(?: \(\d+\))? panicked at `) // newer Rusts add the thread's id
	javaException = regexp.MustCompile(`^Exception in thread "[^"]*" `)
)

// rustParse reads a Rust panic: its location is its top frame, kept
// whole (a line number is the same in every run of one binary).
func rustParse(lines []string) (msg, frame string) {
	rest := strings.TrimSpace(rustPanic.ReplaceAllString(lines[0], ""))
	if loc, ok := strings.CutSuffix(rest, ":"); ok {
		if len(lines) > 1 {
			msg = strings.TrimSpace(lines[1])
		}
		return msg, loc
	}
	if i := strings.LastIndex(rest, ", "); i >= 0 {
		return strings.Trim(rest[:i], "'"), rest[i+2:]
	}
	return rest, ""
}

// lastPanic finds the panic that ended the output in lines: its message
// and the program's top frame, when the runtime prints one. A rust
// panic's message line follows its start.
func lastPanic(lines []string) (msg, frame string, ok bool) {
	for i := len(lines) - 1; i >= 0; i-- {
		for _, pf := range panicForms {
			if !pf.start.MatchString(lines[i]) {
				continue
			}
			if !trailsOnly(pf, lines[i+1:]) {
				return "", "", false
			}
			msg, frame = pf.parse(lines[i:])
			return msg, frame, true
		}
	}
	return "", "", false
}

// trailsOnly says whether every non-empty line after a panic's first
// is what its runtime prints while it dies (the first may be a Rust
// panic's message).
func trailsOnly(pf panicForm, after []string) bool {
	for j, l := range after {
		if strings.TrimSpace(l) == "" || j == 0 && pf.start == rustPanic || pf.trail.MatchString(l) {
			continue
		}
		return false
	}
	return true
}

// goFrame is the first function of the panicking goroutine's stack that
// is the program's own: not the runtime's (runtime.gopanic, panic(…)).
// A frame is "pkg.(*T).f(0xc000012345, …)", its file on the next line.
func goFrame(lines []string) string {
	in := false
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "goroutine "):
			if in {
				return "" // the next goroutine: the panicking one had none of the program's
			}
			in = true
		case !in || l == "" || strings.HasPrefix(l, "\t") || strings.HasPrefix(l, "created by "):
		default:
			fn := l
			if i := strings.LastIndexByte(fn, '('); i > 0 {
				fn = fn[:i]
			}
			if fn == "panic" || strings.HasPrefix(fn, "runtime.") {
				continue
			}
			return fn
		}
	}
	return ""
}

// javaFrame is the first "at" frame's method that is not the JDK's own
// (java.util.… under the program's call), without its file and line.
func javaFrame(lines []string) string {
	for _, l := range lines {
		t := strings.TrimSpace(l)
		m, ok := strings.CutPrefix(t, "at ")
		if !ok {
			if strings.HasPrefix(t, "...") || strings.HasPrefix(t, "Caused by:") {
				return ""
			}
			continue
		}
		if i := strings.IndexByte(m, '('); i > 0 {
			m = m[:i]
		}
		if i := strings.LastIndexByte(m, '/'); i >= 0 {
			m = m[i+1:] // a module's name ("java.base/")
		}
		if jdk(m) {
			continue
		}
		return m
	}
	return ""
}

func jdk(method string) bool {
	for _, p := range []string{"java.", "javax.", "jdk.", "sun.", "com.sun."} {
		if strings.HasPrefix(method, p) {
			return true
		}
	}
	return false
}
