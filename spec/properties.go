package spec

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/goccy/go-yaml/ast"
)

// PropertyKind says when a property's pattern must, or must not, match a
// line a node prints.
type PropertyKind string

const (
	// Never: a matching line fails the trial (property-violated).
	Never PropertyKind = "never"
	// Eventually: a trial that ends without a matching line fails.
	Eventually PropertyKind = "eventually"
	// Sometimes: some trial of the campaign must print a matching line;
	// the summary lists those no trial reached.
	Sometimes PropertyKind = "sometimes"
	// Unique: what a matching line's groups capture (the whole match
	// without groups) is printed by one node at most in a trial: a second
	// node printing the same value fails it (property-violated), as two
	// leaders of one term would.
	Unique PropertyKind = "unique"
)

// Property is a regular expression (RE2) over the lines of the nodes'
// output (properties: in a spec): what the servers themselves say,
// checked without touching them.
type Property struct {
	Kind PropertyKind
	// Name labels it in outcomes and summaries: the spec's name, else the
	// pattern as written.
	Name    string
	Pattern *regexp.Regexp
	// Nodes limits it to these nodes' lines; nil: every node's.
	Nodes []string
	// Required: a campaign in which no trial reached this sometimes fails.
	Required bool
}

// Applies says whether the property watches node's lines.
func (p *Property) Applies(node string) bool {
	return p.Nodes == nil || slices.Contains(p.Nodes, node)
}

// defaultNever are the lines `never: default` watches for: what runtimes
// and sanitizers print when a program broke its own assumptions, whether
// or not it went on (a server that recovers a panic and keeps serving
// still printed it).
func defaultNever() []Property {
	mk := func(name, re string) Property {
		return Property{Kind: Never, Name: name, Pattern: regexp.MustCompile(re)}
	}
	return []Property{
		mk("go panic", `^panic: `),
		mk("go fatal error", `^fatal error: `),
		mk("rust panic", `^thread '.*' panicked at `),
		mk("jvm uncaught exception", `^Exception in thread "`),
		mk("sanitizer report", `^==\d+==ERROR: (Address|Leak|Thread|Memory|UndefinedBehavior)Sanitizer`),
		mk("failed assertion", `[Aa]ssertion .*failed|assertion failed|AssertionError`),
	}
}

// Counted says the summary counts, by name, the trials in which a
// property of this kind matched a line (sometimes and unique): so their
// names must differ.
func (k PropertyKind) Counted() bool { return k == Sometimes || k == Unique }

// DefaultNever is the set `properties: {never: default}` stands for.
func DefaultNever() []Property { return defaultNever() }

// Bounds of properties:, so that a spec cannot make lockstep match a
// thousand patterns against every line.
const (
	maxProperties      = 100
	maxPropertyPattern = 1024
)

// properties decodes properties: never, eventually, sometimes and unique,
// each a list of patterns (a string, or {match, nodes, name, required}); never
// may be the word default, or hold it, for DefaultNever.
func (d *decoder) properties(n ast.Node, s *Spec) error {
	pairs, err := d.fields(n, "properties", "never", "eventually", "sometimes", "unique")
	if err != nil {
		return err
	}
	for _, p := range pairs {
		kind := PropertyKind(p.key)
		f := "properties." + p.key
		var items []ast.Node
		switch v := unwrap(p.value).(type) {
		case *ast.SequenceNode:
			items = v.Values
		case *ast.StringNode:
			items = []ast.Node{v}
		default:
			return d.errf(p.value, f, "must be a list of patterns, got %s", describe(p.value))
		}
		if len(items) == 0 {
			return d.errf(p.value, f, "is empty")
		}
		for i, it := range items {
			pf := fmt.Sprintf("%s[%d]", f, i)
			if len(items) == 1 && unwrap(p.value) == unwrap(it) {
				pf = f
			}
			it = unwrap(it)
			if str, ok := it.(*ast.StringNode); ok && str.Value == "default" {
				if kind != Never {
					return d.errf(it, pf, "default is a set of never properties only")
				}
				s.Properties = append(s.Properties, defaultNever()...)
				continue
			}
			prop, err := d.property(it, pf, kind, s)
			if err != nil {
				return err
			}
			if kind.Counted() && slices.ContainsFunc(s.Properties, func(q Property) bool { return q.Kind.Counted() && q.Name == prop.Name }) {
				return d.errf(it, pf, "a sometimes or unique named %q is already listed: give it another name", prop.Name)
			}
			s.Properties = append(s.Properties, prop)
		}
	}
	if len(s.Properties) > maxProperties {
		return d.errf(n, "properties", "lists %d patterns, at most %d", len(s.Properties), maxProperties)
	}
	return nil
}

// property decodes one pattern of properties.<kind>.
func (d *decoder) property(n ast.Node, f string, kind PropertyKind, s *Spec) (Property, error) {
	prop := Property{Kind: kind}
	var re ast.Node
	switch v := n.(type) {
	case *ast.StringNode, *ast.LiteralNode:
		re = v
	default:
		keys := []string{"match", "nodes", "name"}
		if kind == Sometimes {
			keys = append(keys, "required")
		}
		pairs, err := d.fields(n, f, keys...)
		if err != nil {
			return prop, err
		}
		for _, q := range pairs {
			qf := f + "." + q.key
			switch q.key {
			case "match":
				re = q.value
			case "name":
				if prop.Name, err = d.str(q.value, qf); err != nil {
					return prop, err
				}
				if prop.Name == "" {
					return prop, d.errf(q.value, qf, "is empty")
				}
			case "required":
				if prop.Required, err = d.boolean(q.value, qf); err != nil {
					return prop, err
				}
			case "nodes":
				if prop.Nodes, err = d.strings(q.value, qf); err != nil {
					return prop, err
				}
				if len(prop.Nodes) == 0 {
					return prop, d.errf(q.value, qf, "is empty (leave it out for every node)")
				}
				for _, name := range prop.Nodes {
					if s.Node(name) == nil {
						return prop, d.errf(q.value, qf, "unknown node %q", name)
					}
				}
			}
		}
		if re == nil {
			return prop, d.errf(n, f+".match", "missing")
		}
		f += ".match"
	}
	text, err := d.str(re, f)
	if err != nil {
		return prop, err
	}
	if text == "" {
		return prop, d.errf(re, f, "is empty: it would match every line")
	}
	if len(text) > maxPropertyPattern {
		return prop, d.errf(re, f, "is %d bytes, at most %d", len(text), maxPropertyPattern)
	}
	if prop.Pattern, err = regexp.Compile(text); err != nil {
		return prop, d.errf(re, f, "not a regular expression: %v", err)
	}
	if prop.Name == "" {
		prop.Name = text
	}
	return prop, nil
}
