package compose

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
)

// Error is a compose file that cannot become a spec; Field is a path such
// as services.web.command.
type Error struct {
	File, Field, Msg string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return e.File + ": " + e.Msg
	}
	return e.File + ": " + e.Field + ": " + e.Msg
}

// Names compose tools look for, in their order.
var fileNames = []string{"compose.yaml", "compose.yml", "docker-compose.yaml", "docker-compose.yml"}

// Is reports whether data is a compose file rather than a spec: named as
// compose tools name them, or holding services: and no nodes:.
func Is(path string, data []byte) bool {
	if slices.Contains(fileNames, filepath.Base(path)) {
		return true
	}
	var top map[string]any
	if yaml.Unmarshal(data, &top) != nil {
		return false
	}
	_, services := top["services"]
	_, nodes := top["nodes"]
	return services && !nodes
}

// service is what Import reads of a service; the rest of its keys are
// named in comments.
type service struct {
	Image       string      `yaml:"image"`
	Command     stringList  `yaml:"command"`
	Entrypoint  stringList  `yaml:"entrypoint"`
	Environment environment `yaml:"environment"`
	WorkingDir  string      `yaml:"working_dir"`
	Hostname    string      `yaml:"hostname"`
	DependsOn   dependsOn   `yaml:"depends_on"`
	Healthcheck *struct {
		Test    stringList `yaml:"test"`
		Disable bool       `yaml:"disable"`
	} `yaml:"healthcheck"`
	Ports  []any    `yaml:"ports"`
	Expose []any    `yaml:"expose"`
	CapAdd []string `yaml:"cap_add"`
	Init   bool     `yaml:"init"`
	// X-lockstep is this package's extension: what a compose file cannot
	// say about a node under lockstep.
	Lockstep struct {
		Role  string `yaml:"role"`
		Image string `yaml:"image"`
		Ready int    `yaml:"ready"`
	} `yaml:"x-lockstep"`
}

// handled are the service keys Import carries over.
var handled = []string{"image", "command", "entrypoint", "environment", "working_dir", "hostname", "depends_on", "healthcheck", "ports", "expose", "cap_add", "init", "x-lockstep"}

// notes say why a key is dropped, where there is more to say than its name.
var notes = map[string]string{
	"build":          "lockstep runs built images only: build it (podman build) and name it in image",
	"volumes":        "a node's files are its image's and its writable layer's, fresh each trial",
	"networks":       "every node is on the cluster's one network",
	"restart":        "lockstep's crash faults restart nodes",
	"deploy":         "one instance per node",
	"user":           "nodes run as root with few capabilities",
	"env_file":       "put the variables in env",
	"privileged":     "grant capabilities one by one (capabilities)",
	"tmpfs":          "a node's /tmp is in its writable layer",
	"extra_hosts":    "node names resolve through lockstep's hosts file",
	"dns":            "node names resolve through lockstep's hosts file",
	"secrets":        "put them in the image or env",
	"configs":        "put them in the image or env",
	"container_name": "a node's name is its service's",
}

// stringList is a compose string-or-list; a string is split into words as
// compose splits command: strings (shell quoting, no expansion).
type stringList struct {
	set    bool
	words  []string
	err    error
	interp bool // a word names a variable compose would substitute
}

func (s *stringList) UnmarshalYAML(b []byte) error {
	s.set = true
	var one string
	if err := yaml.Unmarshal(b, &one); err == nil {
		s.interp = interpolated(one)
		s.words, s.err = splitWords(unescape(one))
		return nil
	}
	err := yaml.Unmarshal(b, &s.words)
	for i, w := range s.words {
		s.interp = s.interp || interpolated(w)
		s.words[i] = unescape(w)
	}
	return err
}

// environment is a compose map or KEY=VALUE list; a KEY alone takes the
// host's value in compose, which a reproducible spec cannot.
type environment struct {
	vars   map[string]string
	interp map[string]bool // compose would substitute a variable in it
	keys   []string        // file order
	bare   []string        // KEY without a value
	isSet  bool
}

func (e *environment) UnmarshalYAML(b []byte) error {
	e.isSet, e.vars, e.interp = true, map[string]string{}, map[string]bool{}
	var list []string
	if err := yaml.Unmarshal(b, &list); err == nil {
		for _, kv := range list {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				e.bare = append(e.bare, k)
				continue
			}
			e.vars[k], e.interp[k] = unescape(v), interpolated(v)
			e.keys = append(e.keys, k)
		}
		return nil
	}
	var m yaml.MapSlice
	if err := yaml.Unmarshal(b, &m); err != nil {
		return err
	}
	for _, it := range m {
		k := fmt.Sprint(it.Key)
		if it.Value == nil {
			e.bare = append(e.bare, k)
			continue
		}
		v := fmt.Sprint(it.Value)
		e.vars[k], e.interp[k] = unescape(v), interpolated(v)
		e.keys = append(e.keys, k)
	}
	return nil
}

// dependsOn is a compose list of services or a map of service to
// condition.
type dependsOn struct {
	names     []string
	condition map[string]string
}

func (d *dependsOn) UnmarshalYAML(b []byte) error {
	d.condition = map[string]string{}
	if err := yaml.Unmarshal(b, &d.names); err == nil {
		return nil
	}
	var m yaml.MapSlice
	if err := yaml.Unmarshal(b, &m); err != nil {
		return err
	}
	for _, it := range m {
		name := fmt.Sprint(it.Key)
		d.names = append(d.names, name)
		if c, ok := it.Value.(map[string]any); ok {
			d.condition[name] = fmt.Sprint(c["condition"])
		}
	}
	return nil
}

// unescape undoes compose's escape of a literal $ ($$). Variables
// ($VAR, ${VAR}) compose would take from the host's environment are left
// as they are: a reproducible spec does not read the host's.
func unescape(s string) string { return strings.ReplaceAll(s, "$$", "$") }

// interpolated reports whether compose would substitute a variable in
// s, before unescape.
func interpolated(s string) bool {
	s = strings.ReplaceAll(s, "$$", "")
	i := strings.IndexByte(s, '$')
	return i >= 0 && i+1 < len(s) && (s[i+1] == '{' || s[i+1] == '_' || s[i+1] >= 'A' && s[i+1] <= 'Z' || s[i+1] >= 'a' && s[i+1] <= 'z')
}

// splitWords splits a command string as a POSIX shell would split words:
// quotes and backslashes, no expansion.
func splitWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated ' quote")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, errors.New(`unterminated " quote`)
			}
			inWord = true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

var hostLabel = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$`)

// node is one service on its way to the spec.
type node struct {
	name     string
	svc      service
	keys     []string // the service's keys, in file order
	role     string
	roleWhy  string
	ready    int
	comments []string
}

// Import writes the spec for the compose file at path (read as data).
func Import(path string, data []byte) ([]byte, error) {
	top, err := readTop(path, data)
	if err != nil {
		return nil, err
	}
	nodes, byName, err := readServices(path, top.services)
	if err != nil {
		return nil, err
	}
	ordered, err := order(nodes, byName)
	if err != nil {
		return nil, fail(path, "services", "%v", err)
	}
	if err := roles(ordered); err != nil {
		return nil, fail(path, "services", "%v", err)
	}
	readiness(ordered, byName)
	out := write(path, specName(top.name), ordered, top.dropped)
	if !bytes.Contains(top.extra, []byte("faults:")) {
		out = append(out, "# No faults: add them under x-lockstep in the compose file, or here\n# (docs/spec.md, \"Faults\").\n"...)
	}
	if len(top.extra) > 0 {
		out = append(append(out, "# from x-lockstep:\n"...), top.extra...)
	}
	return out, nil
}

// fail is the Error for field of the compose file at path.
func fail(path, field, format string, args ...any) error {
	return &Error{File: path, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// composeTop is what Import reads of a compose file's top level.
type composeTop struct {
	name     string // the project's, else its directory's
	services yaml.MapSlice
	dropped  []string // top-level keys a spec has no place for
	extra    []byte   // x-lockstep: spec fields, as YAML
}

// readTop reads the top level of the compose file at path: its name, its
// services (at least one), and its x-lockstep spec fields.
func readTop(path string, data []byte) (composeTop, error) {
	var top composeTop
	var items yaml.MapSlice
	if err := yaml.Unmarshal(data, &items); err != nil {
		return top, fail(path, "", "invalid YAML: %s", firstLine(err.Error()))
	}
	for _, it := range items {
		switch k := fmt.Sprint(it.Key); k {
		case "name":
			top.name = fmt.Sprint(it.Value)
		case "services":
			b, _ := yaml.Marshal(it.Value)
			if err := yaml.Unmarshal(b, &top.services); err != nil {
				return top, fail(path, "services", "must map service names to services")
			}
		case "version":
		case "x-lockstep":
			extra, err := specFields(path, it.Value)
			if err != nil {
				return top, err
			}
			top.extra = extra
		default:
			if !strings.HasPrefix(k, "x-") {
				top.dropped = append(top.dropped, k)
			}
		}
	}
	if len(top.services) == 0 {
		return top, fail(path, "services", "no services")
	}
	if top.name == "" {
		top.name = filepath.Base(filepath.Dir(mustAbs(path)))
	}
	return top, nil
}

// specFields checks the top-level x-lockstep of the compose file at path
// and returns it as YAML: spec fields a compose file has no words for
// (faults, trials, limits, time, scheduler), but the nodes and the name,
// which come from the services.
func specFields(path string, v any) ([]byte, error) {
	if _, ok := v.(map[string]any); !ok {
		return nil, fail(path, "x-lockstep", "must map spec fields to their values")
	}
	b, _ := yaml.Marshal(v)
	var ms yaml.MapSlice
	yaml.Unmarshal(b, &ms)
	for _, kv := range ms {
		if k := fmt.Sprint(kv.Key); k == "nodes" || k == "name" {
			return nil, fail(path, "x-lockstep."+k, "comes from the services")
		}
	}
	return b, nil
}

// readServices reads the services of the compose file at path, in file
// order and by name, and checks that each one they depend on is there.
func readServices(path string, services yaml.MapSlice) ([]*node, map[string]*node, error) {
	nodes := make([]*node, 0, len(services))
	byName := map[string]*node{}
	for _, it := range services {
		n, err := readService(path, fmt.Sprint(it.Key), it.Value)
		if err != nil {
			return nil, nil, err
		}
		nodes = append(nodes, n)
		byName[n.name] = n
	}
	for _, n := range nodes {
		for _, d := range n.svc.DependsOn.names {
			if byName[d] == nil {
				return nil, nil, fail(path, "services."+n.name+".depends_on", "no service %q", d)
			}
		}
	}
	return nodes, byName, nil
}

// readService reads service sname (its value v) of the compose file at
// path into a node, with the keys it has, and checks what a node needs:
// a name that is a host name, words that split, an image, a known role.
func readService(path, sname string, v any) (*node, error) {
	field := "services." + sname
	if !hostLabel.MatchString(sname) {
		return nil, fail(path, field, "%q cannot be a node's host name (letters, digits and inner dashes, at most 63)", sname)
	}
	b, err := yaml.Marshal(v)
	if err != nil {
		return nil, fail(path, field, "%v", err)
	}
	n := &node{name: sname}
	if err := yaml.Unmarshal(b, &n.svc); err != nil {
		return nil, fail(path, field, "%s", firstLine(err.Error()))
	}
	var raw yaml.MapSlice
	yaml.Unmarshal(b, &raw)
	for _, kv := range raw {
		n.keys = append(n.keys, fmt.Sprint(kv.Key))
	}
	for _, l := range []struct {
		f string
		s stringList
	}{{"command", n.svc.Command}, {"entrypoint", n.svc.Entrypoint}} {
		if l.s.err != nil {
			return nil, fail(path, field+"."+l.f, "%v", l.s.err)
		}
	}
	if n.svc.Image == "" && n.svc.Lockstep.Image == "" {
		return nil, fail(path, field+".image", "missing: lockstep runs images only (build: is not run; build the image, then name it here or in x-lockstep.image)")
	}
	switch n.svc.Lockstep.Role {
	case "", "server", "client":
	default:
		return nil, fail(path, field+".x-lockstep.role", "unknown role %q (want server or client)", n.svc.Lockstep.Role)
	}
	return n, nil
}

func mustAbs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// specName makes a compose project name a spec name (lowercase letters,
// digits and dashes).
func specName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), "-")
	if out == "" {
		return "compose"
	}
	return out
}

// order sorts services so that each comes after those it depends on,
// otherwise in file order.
func order(nodes []*node, byName map[string]*node) ([]*node, error) {
	var out []*node
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(n *node, path []string) error
	visit = func(n *node, path []string) error {
		switch state[n.name] {
		case 1:
			return fmt.Errorf("depends_on cycle: %s", strings.Join(append(path, n.name), " -> "))
		case 2:
			return nil
		}
		state[n.name] = 1
		for _, d := range n.svc.DependsOn.names {
			if err := visit(byName[d], append(path, n.name)); err != nil {
				return err
			}
		}
		state[n.name] = 2
		out = append(out, n)
		return nil
	}
	for _, n := range nodes {
		if err := visit(n, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// roles marks the clients, whose exit ends a trial: those x-lockstep names
// so, or else the services no other depends on that depend on others
// themselves (a workload started last).
func roles(nodes []*node) error {
	marked := false
	for _, n := range nodes {
		if n.svc.Lockstep.Role != "" {
			n.role, marked = n.svc.Lockstep.Role, true
		}
	}
	if marked {
		for _, n := range nodes {
			if n.role == "" {
				n.role = "server"
			}
		}
	} else {
		needed := map[string]bool{}
		for _, n := range nodes {
			for _, d := range n.svc.DependsOn.names {
				needed[d] = true
			}
		}
		for _, n := range nodes {
			n.role = "server"
			if !needed[n.name] && len(n.svc.DependsOn.names) > 0 {
				n.role, n.roleWhy = "client", "no service depends on it, and it depends on others: the workload"
			}
		}
	}
	for _, n := range nodes {
		if n.role == "client" {
			return nil
		}
	}
	return errors.New("no client: a trial ends when its clients exit; mark the workload with x-lockstep: {role: client}")
}

// containerPort is the port inside the container of a ports: entry
// ("8080:80", "127.0.0.1:8080:80/tcp", 80, {target: 80}).
func containerPort(p any) (int, bool) {
	switch v := p.(type) {
	case map[string]any:
		return containerPort(v["target"])
	case uint64:
		return int(v), true
	case int64:
		return int(v), true
	case int:
		return v, true
	case string:
		s, proto, _ := strings.Cut(v, "/")
		if proto != "" && proto != "tcp" {
			return 0, false
		}
		if i := strings.LastIndexByte(s, ':'); i >= 0 {
			s = s[i+1:]
		}
		s, _, _ = strings.Cut(s, "-") // a range: its first port
		n, err := strconv.Atoi(s)
		return n, err == nil && n > 0 && n < 65536
	}
	return 0, false
}

// readiness gives each service others depend on a ready port: x-lockstep's,
// else the first it exposes or publishes.
func readiness(nodes []*node, byName map[string]*node) {
	waited := map[string][]string{}
	for _, n := range nodes {
		for _, d := range n.svc.DependsOn.names {
			waited[d] = append(waited[d], n.name+" ("+cond(n.svc.DependsOn.condition[d])+")")
		}
	}
	for _, n := range nodes {
		if len(waited[n.name]) == 0 {
			if n.svc.Healthcheck != nil && !n.svc.Healthcheck.Disable {
				n.comments = append(n.comments, "not carried over: healthcheck (no service waits for this one)")
			}
			continue
		}
		port := n.svc.Lockstep.Ready
		for _, p := range append(slices.Clone(n.svc.Expose), n.svc.Ports...) {
			if port != 0 {
				break
			}
			if c, ok := containerPort(p); ok {
				port = c
			}
		}
		n.ready = port
		if port == 0 {
			n.comments = append(n.comments, fmt.Sprintf("depends_on: waited for by %s, but it exposes no TCP port: it only starts first (set x-lockstep.ready: PORT)", strings.Join(waited[n.name], ", ")))
		} else if n.svc.Healthcheck != nil && !n.svc.Healthcheck.Disable {
			n.comments = append(n.comments, fmt.Sprintf("healthcheck: not run; ready when it listens on %d", port))
		}
	}
}

func cond(c string) string {
	if c == "" {
		return "service_started"
	}
	return c
}

// quote writes s as a YAML double-quoted scalar (JSON's escapes).
func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// key writes an environment variable's name, quoted unless it is a plain
// identifier.
func key(k string) string {
	if plainKey.MatchString(k) {
		return k
	}
	return quote(k)
}

func list(ws []string) string {
	q := make([]string, len(ws))
	for i, w := range ws {
		q[i] = quote(w)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// write renders the spec.
func write(path, name string, nodes []*node, dropped []string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Imported by lockstep import from %s: review the comments.\n", filepath.Base(path))
	fmt.Fprintf(&b, "name: %s\n", quote(name))
	for _, k := range dropped {
		fmt.Fprintf(&b, "# not carried over: top-level %s", k)
		if why := notes[k]; why != "" {
			b.WriteString(" (" + why + ")")
		}
		b.WriteString("\n")
	}
	b.WriteString("nodes:\n")
	for _, n := range nodes {
		s := n.svc
		fmt.Fprintf(&b, "  - name: %s\n", n.name)
		if n.roleWhy != "" {
			fmt.Fprintf(&b, "    # role: %s: %s\n", n.role, n.roleWhy)
		}
		fmt.Fprintf(&b, "    role: %s\n", n.role)
		img := s.Lockstep.Image
		if img == "" {
			// Compose names an image to pull; lockstep reads podman's
			// local store and never pulls.
			img = "containers-storage:" + s.Image
		}
		fmt.Fprintf(&b, "    image: %s\n", quote(img))
		if s.Entrypoint.interp || s.Command.interp {
			b.WriteString("    # command: compose would substitute variables from the host's environment; taken literally\n")
		}
		if s.Entrypoint.set {
			fmt.Fprintf(&b, "    entrypoint: %s\n", list(s.Entrypoint.words))
		}
		if s.Command.set && len(s.Command.words) > 0 {
			fmt.Fprintf(&b, "    command: %s\n", list(s.Command.words))
		}
		if len(s.Environment.keys) > 0 {
			b.WriteString("    env:\n")
			keys := slices.Clone(s.Environment.keys)
			sort.Strings(keys)
			for _, k := range slices.Compact(keys) {
				v := s.Environment.vars[k]
				if s.Environment.interp[k] {
					fmt.Fprintf(&b, "      # %s: compose would interpolate this from the host's environment; taken literally\n", k)
				}
				fmt.Fprintf(&b, "      %s: %s\n", key(k), quote(v))
			}
		}
		for _, k := range s.Environment.bare {
			fmt.Fprintf(&b, "    # not carried over: environment %s (takes the host's value in compose; set it in env)\n", k)
		}
		if s.WorkingDir != "" {
			fmt.Fprintf(&b, "    workdir: %s\n", quote(s.WorkingDir))
		}
		if n.ready != 0 {
			fmt.Fprintf(&b, "    ready: {listen: %d}\n", n.ready)
		}
		writeProcess(&b, &s, n.role)
		if s.Hostname != "" && s.Hostname != n.name {
			fmt.Fprintf(&b, "    # not carried over: hostname %s (a node's host name is its name)\n", s.Hostname)
		}
		for _, c := range n.comments {
			fmt.Fprintf(&b, "    # %s\n", c)
		}
		if len(s.Ports) > 0 {
			fmt.Fprintf(&b, "    # not carried over: ports (nodes reach each other's ports on the cluster network; nothing is published on the host)\n")
		}
		for _, k := range n.keys {
			if slices.Contains(handled, k) || strings.HasPrefix(k, "x-") {
				continue
			}
			fmt.Fprintf(&b, "    # not carried over: %s", k)
			if why := notes[k]; why != "" {
				b.WriteString(" (" + why + ")")
			}
			b.WriteString("\n")
		}
	}
	return []byte(b.String())
}

// writeProcess writes what a service says of its process beside its
// command: the capabilities it adds, and an init.
func writeProcess(b *strings.Builder, s *service, role string) {
	if len(s.CapAdd) > 0 {
		var caps []string
		for _, c := range s.CapAdd {
			if strings.EqualFold(c, "ALL") {
				fmt.Fprintf(b, "    # not carried over: cap_add ALL (grant capabilities one by one)\n")
				continue
			}
			caps = append(caps, c)
		}
		if len(caps) > 0 {
			fmt.Fprintf(b, "    capabilities: %s\n", list(caps))
		}
	}
	switch {
	case s.Init && role == "client":
		b.WriteString("    # not carried over: init (a client's command must end by itself)\n")
	case s.Init:
		b.WriteString("    init: true\n")
	}
}
