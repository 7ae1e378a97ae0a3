package spec

import (
	"fmt"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"
)

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
