package spec

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"text/template"
)

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
