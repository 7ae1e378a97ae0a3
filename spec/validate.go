package spec

import (
	"fmt"
	"net/netip"
	"os"
	"strings"
)

// placeholderVars are the template values validation renders with, for a
// trial in the directory trial.
func (s *Spec) placeholderVars(trial string) TemplateVars {
	addrs, _ := nodeAddrs(s.Network.Subnet, len(s.Nodes))
	v := TemplateVars{TrialDir: trial, NodeDir: trial + "/node", Seed: 1, Addrs: map[string]netip.Addr{}}
	for i, n := range s.Nodes {
		v.Addrs[n.Name] = addrs[i]
	}
	return v
}

// validateTemplates renders every template with placeholder values so that
// an unknown node or a syntax error is reported when the spec is loaded,
// under the field that holds it, and checks that every node can start: its
// program is something the kernel can execute, its workdir exists and its
// arguments fit in what execve accepts.
func (s *Spec) validateTemplates(d *decoder) error {
	// Two different trial directories tell a workdir that lockstep makes
	// per trial from one that must exist already.
	v, other := s.placeholderVars("/lockstep-trial"), s.placeholderVars("/lockstep-other-trial")
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
		// An image node's paths are the image's, checked by ResolveImages
		// once it is unpacked: nothing to find on the host.
		if n.Image == nil && n.Workdir != "" {
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
