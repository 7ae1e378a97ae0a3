package spec

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/template"
	tparse "text/template/parse"
	"unicode/utf8"
)

// maxTemplateOutput bounds what a spec's templates produce in one
// expansion (a spec's validation, or one node's command, environment and
// workdir for a trial): their output and the strings their functions
// return. A node's command line can hold at most 6 MiB (maxArgMax), so no
// spec that can start comes near it; without a bound,
// {{range 1000000}}{{printf "%01000000d" 0}}{{end}} took 5 GB.
const maxTemplateOutput = 16 << 20

// errTemplateOutput: an expansion passed maxTemplateOutput.
var errTemplateOutput = fmt.Errorf("templates produce more than %s, the most a spec's may (a command line holds at most %s)",
	FormatSize(maxTemplateOutput), FormatSize(maxArgMax))

// maxTemplateActions bounds the actions ({{...}}), pipeline stages (|)
// and parenthesized pipelines an expansion parses and runs: text/template
// takes about 10 µs and a few hundred bytes for each, and a spec of
// MaxSize bytes can hold 200,000 of them (4 s to parse); a spec needs a
// few dozen.
const maxTemplateActions = 10_000

// errTemplateActions: an expansion passed maxTemplateActions.
var errTemplateActions = fmt.Errorf("templates hold more than %d actions, pipes and parentheses, the most a spec's may", maxTemplateActions)

// budget is what an expansion's templates may still produce, and how many
// more actions they may hold.
type budget struct{ left, actions int }

func newBudget() *budget { return &budget{left: maxTemplateOutput, actions: maxTemplateActions} }

// parse counts the actions, pipes and parentheses of template s (those
// in its text too: over-counting is safe), before it is parsed.
func (b *budget) parse(s string) error {
	n := strings.Count(s, "{{") + strings.Count(s, "|") + strings.Count(s, "(")
	if n > b.actions {
		b.actions = 0
		return errTemplateActions
	}
	b.actions -= n
	return nil
}

func (b *budget) take(n int) error {
	if n > b.left {
		b.left = 0
		return errTemplateOutput
	}
	b.left -= n
	return nil
}

// Write lets a template write to the budget's account (see budgetWriter).
type budgetWriter struct {
	b *budget
	w io.Writer
}

func (bw budgetWriter) Write(p []byte) (int, error) {
	if err := bw.b.take(len(p)); err != nil {
		return 0, err
	}
	return bw.w.Write(p)
}

// boundedFuncs replaces text/template's builtins that make strings
// (printf, print, println and the escapers) with ones that count what they
// return against b: a result that is tested or measured rather than
// written would otherwise escape the budget ({{if printf "%01000000d" 0}}
// costs a megabyte and writes nothing).
func boundedFuncs(b *budget) template.FuncMap {
	wrap := func(f func(...any) string) func(...any) (string, error) {
		return func(args ...any) (string, error) {
			s := f(args...)
			return s, b.take(len(s))
		}
	}
	return template.FuncMap{
		"printf": func(format string, args ...any) (string, error) {
			s := fmt.Sprintf(format, args...)
			return s, b.take(len(s))
		},
		"print":    wrap(fmt.Sprint),
		"println":  wrap(fmt.Sprintln),
		"html":     wrap(template.HTMLEscaper),
		"js":       wrap(template.JSEscaper),
		"urlquery": wrap(template.URLQueryEscaper),
	}
}

// errTemplateLoop: a template repeats or calls templates; a spec's are
// values with a few variables, and a loop's cost has no bound the output
// budget can see ({{range 1000000000}}{{end}} writes nothing).
var errTemplateLoop = errors.New("loops and template calls ({{range}}, {{template}}, {{define}}, {{block}}) are not allowed in a spec's templates")

// checkTree refuses the actions whose cost is not bounded by the
// template's size (errTemplateLoop).
func checkTree(t *template.Template) error {
	if len(t.Templates()) > 1 {
		return errTemplateLoop
	}
	var walk func(n tparse.Node) error
	walk = func(n tparse.Node) error {
		switch n := n.(type) {
		case nil:
			return nil
		case *tparse.ListNode:
			if n == nil {
				return nil
			}
			for _, c := range n.Nodes {
				if err := walk(c); err != nil {
					return err
				}
			}
		case *tparse.RangeNode, *tparse.TemplateNode, *tparse.BreakNode, *tparse.ContinueNode:
			return errTemplateLoop
		case *tparse.IfNode:
			return walkBranch(walk, &n.BranchNode)
		case *tparse.WithNode:
			return walkBranch(walk, &n.BranchNode)
		}
		return nil
	}
	if t.Tree == nil {
		return nil
	}
	return walk(t.Tree.Root)
}

func walkBranch(walk func(tparse.Node) error, b *tparse.BranchNode) error {
	if err := walk(b.List); err != nil {
		return err
	}
	if b.ElseList != nil {
		return walk(b.ElseList)
	}
	return nil
}

// quoteTemplate quotes a template for an error message, shortened: the
// message is one line, and a template may be a megabyte.
func quoteTemplate(s string) string {
	const most = 80
	if len(s) <= most {
		return fmt.Sprintf("%q", s)
	}
	cut := most
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%q… (%d bytes)", s[:cut], len(s))
}
