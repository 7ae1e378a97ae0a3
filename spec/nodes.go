package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
	// PrivateDirs are host directories the node sees as its own (spec:
	// private_dirs: [/var/lib/redis]): an overlay on the host's whose
	// writes stay in the node's {{tmp}}, across its restarts in a trial.
	PrivateDirs []string
	// Init runs lockstep's init as the node's pid 1 and the command as
	// its child (spec: init: true), for a command that starts its server
	// in the background and returns (docs/spec.md, "Daemons").
	Init bool
	// Lines of the node and of its fields, for errors found after decoding.
	line, cmdLine, workdirLine, delayLine, imageLine int
	envLines                                         map[string]int
}

// nodeDraft is a node being decoded.
type nodeDraft struct {
	n   *Node
	idx int
	// names are the nodes before this one, by name: a name is taken once.
	names map[string]int
	// command is where command is, when given; init and private_dirs
	// where they are.
	command, init, private ast.Node
}

// nodeFields are a node's (nodes[i]).
var nodeFields = []field[*nodeDraft]{
	{"name", decodeNodeName},
	{"role", func(d *decoder, v ast.Node, path string, nd *nodeDraft) error {
		r, err := d.str(v, path)
		if err != nil {
			return err
		}
		if r != string(RoleServer) && r != string(RoleClient) {
			return d.errf(v, path, "unknown role %q (want server or client)", r)
		}
		nd.n.Role = Role(r)
		return nil
	}},
	{"command", func(d *decoder, v ast.Node, path string, nd *nodeDraft) (err error) {
		if nd.n.Command, err = d.strings(v, path); err != nil {
			return err
		}
		nd.command, nd.n.cmdLine = v, lineOf(v)
		if len(nd.n.Command) == 0 {
			return d.errf(v, path, "must not be empty")
		}
		return nil
	}},
	{"env", func(d *decoder, v ast.Node, path string, nd *nodeDraft) (err error) {
		nd.n.Env, nd.n.envLines, err = d.envMap(v, path)
		return err
	}},
	{"workdir", func(d *decoder, v ast.Node, path string, nd *nodeDraft) (err error) {
		if nd.n.Workdir, err = d.str(v, path); err != nil {
			return err
		}
		if nd.n.Workdir == "" {
			return d.errf(v, path, "must not be empty (leave it out for the default)")
		}
		nd.n.workdirLine = lineOf(v)
		return nil
	}},
	{"start_delay", func(d *decoder, v ast.Node, path string, nd *nodeDraft) (err error) {
		nd.n.StartDelay, err = d.duration(v, path, true, maxVirtualTime)
		nd.n.delayLine = lineOf(v)
		return err
	}},
	{"ready", func(d *decoder, v ast.Node, path string, nd *nodeDraft) (err error) {
		nd.n.ReadyPort, err = d.ready(v, path)
		return err
	}},
	{"capabilities", func(d *decoder, v ast.Node, path string, nd *nodeDraft) error {
		names, err := d.strings(v, path)
		if err != nil {
			return err
		}
		for _, name := range names {
			c, err := ParseCap(name)
			if err != nil {
				return d.errf(v, path, "%v", err)
			}
			nd.n.Caps = append(nd.n.Caps, c)
		}
		return nil
	}},
	{"image", func(d *decoder, v ast.Node, path string, nd *nodeDraft) error {
		ref, err := d.str(v, path)
		if err != nil {
			return err
		}
		nd.n.Image, nd.n.imageLine = d.image(ref), lineOf(v)
		return nil
	}},
	{"entrypoint", func(d *decoder, v ast.Node, path string, nd *nodeDraft) (err error) {
		if nd.n.Entrypoint, err = d.strings(v, path); err != nil {
			return err
		}
		if nd.n.Entrypoint == nil {
			nd.n.Entrypoint = []string{} // given empty: the image's is dropped
		}
		return nil
	}},
	{"limits", func(d *decoder, v ast.Node, path string, nd *nodeDraft) (err error) {
		nd.n.Limits, err = d.nodeLimits(v, path)
		return err
	}},
	{"private_dirs", func(d *decoder, v ast.Node, path string, nd *nodeDraft) (err error) {
		if nd.n.PrivateDirs, err = d.strings(v, path); err != nil {
			return err
		}
		nd.private = v
		return checkPrivateDirs(nd.n.PrivateDirs, func(format string, a ...any) error { return d.errf(v, path, format, a...) })
	}},
	{"init", func(d *decoder, v ast.Node, path string, nd *nodeDraft) (err error) {
		nd.n.Init, err = d.boolean(v, path)
		nd.init = v
		return err
	}},
}

func decodeNodeName(d *decoder, v ast.Node, path string, nd *nodeDraft) (err error) {
	if nd.n.Name, err = d.str(v, path); err != nil {
		return err
	}
	if !ValidHostName(nd.n.Name) {
		return d.errf(v, path, "%q is not a valid host name (letters, digits and inner dashes, at most 63)", nd.n.Name)
	}
	if prev, dup := nd.names[nd.n.Name]; dup {
		return d.errf(v, path, "duplicate node name %q (also nodes[%d])", nd.n.Name, prev)
	}
	nd.names[nd.n.Name] = nd.idx
	return nil
}

// nodes decodes the nodes section into s.Nodes.
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
	names := map[string]int{}
	for i, v := range seq.Values {
		if err := d.node(v, i, names, s); err != nil {
			return err
		}
	}
	if _, err := nodeAddrs(s.Network.Subnet, len(s.Nodes)); err != nil {
		return d.errf(n, "nodes", "%v", err)
	}
	if !slices.ContainsFunc(s.Nodes, func(ns Node) bool { return ns.Role == RoleClient }) {
		return d.errf(n, "nodes", "no node has role client: a trial ends when its clients exit")
	}
	return nil
}

// node decodes nodes[i], v, and appends it to s.Nodes.
func (d *decoder) node(v ast.Node, i int, names map[string]int, s *Spec) error {
	path := fmt.Sprintf("nodes[%d]", i)
	nd := &nodeDraft{n: &Node{Role: RoleServer, line: lineOf(unwrap(v))}, idx: i, names: names}
	if err := decodeMap(d, v, path, nodeFields, nd); err != nil {
		return err
	}
	ns := nd.n
	if ns.Name == "" {
		return d.errf(v, path+".name", "missing")
	}
	if nd.command == nil && ns.Image == nil {
		return d.errf(v, path+".command", "missing")
	}
	if ns.Entrypoint != nil && ns.Image == nil {
		return d.errf(v, path+".entrypoint", "only an image node has an entrypoint (put it in command)")
	}
	if ns.PrivateDirs != nil && ns.Image != nil {
		return d.errf(nd.private, path+".private_dirs", "an image node's filesystem is its own already (its writes go to its layer)")
	}
	if ns.Init && ns.Role == RoleClient {
		return d.errf(nd.init, path+".init", "is for servers: a trial ends when its clients exit, and a client under an init would not until every process it started had")
	}
	s.Nodes = append(s.Nodes, *ns)
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

// sharedRoots are where a private directory may not be: the node has its
// own of them already, or they are the kernel's.
var sharedRoots = []string{"/proc", "/sys", "/dev", "/tmp", "/var/tmp", "/run/lockstep"}

// checkPrivateDirs checks private_dirs: absolute, clean paths of existing
// host directories, none the root, below another, or in sharedRoots.
func checkPrivateDirs(dirs []string, errf func(string, ...any) error) error {
	for i, p := range dirs {
		switch {
		case !filepath.IsAbs(p) || filepath.Clean(p) != p:
			return errf("%q is not an absolute, clean path", p)
		case p == "/":
			return errf("/ cannot be private (give the directories the server writes)")
		case strings.ContainsAny(p, ",:\\"):
			return errf("%q cannot be an overlay's lower layer (a ',', ':' or '\\' in its path)", p)
		}
		for _, r := range sharedRoots {
			if within(p, r) {
				return errf("%s is below %s, which a node has of its own or is the kernel's", p, r)
			}
		}
		for _, q := range dirs[:i] {
			if within(p, q) || within(q, p) {
				return errf("%s and %s overlap", q, p)
			}
		}
		if st, err := os.Stat(p); err != nil || !st.IsDir() {
			return errf("%s is not a directory on this host (a private directory is an overlay on the host's)", p)
		}
	}
	return nil
}
