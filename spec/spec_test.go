package spec

import (
	"bytes"
	"fmt"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// repoPath is a path in the repository, whose testdata the engine's and
// the CLI's tests share with these.
func repoPath(parts ...string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(append([]string{filepath.Dir(file), ".."}, parts...)...)
}

// TestGoodSpecs: the shipped examples load.
func TestGoodSpecs(t *testing.T) {
	files, _ := filepath.Glob(repoPath("testdata", "specs", "*.yaml"))
	demo, _ := filepath.Glob(repoPath("testdata", "demo", "*.yaml"))
	for _, f := range append(files, demo...) {
		if _, err := Load(f); err != nil && !strings.Contains(err.Error(), "does not exist") {
			t.Errorf("%s: %v", filepath.Base(f), err)
		}
	}
}

const twoNodes = `name: t
nodes:
  - name: server1
    command: ["/bin/true"]
  - name: client1
    role: client
    command: ["/bin/true"]
`

// TestSpecHostSubnet: a subnet overlapping one of the host's networks is
// refused at load, with its location; so is a default that overlaps.
func TestSpecHostSubnet(t *testing.T) {
	host := func() ([]netip.Prefix, error) { return []netip.Prefix{netip.MustParsePrefix("10.77.0.0/16")}, nil }
	for _, tc := range []struct {
		name, spec, want string
	}{
		{"inside", twoNodes + "network:\n  subnet: 10.77.5.0/24\n", "s.yaml:9: network.subnet: 10.77.5.0/24 overlaps the host's network 10.77.0.0/16: choose another"},
		{"around", twoNodes + "network:\n  subnet: 10.0.0.0/8\n", "s.yaml:9: network.subnet: 10.0.0.0/8 overlaps the host's network 10.77.0.0/16: choose another"},
		{"default", twoNodes, "s.yaml: network.subnet: the default 10.77.0.0/24 overlaps the host's network 10.77.0.0/16: choose another (set network.subnet)"},
		{"apart", twoNodes + "network:\n  subnet: 10.78.0.0/24\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse("s.yaml", []byte(tc.spec), host)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Fatalf("error\n  got  %v\n  want %s", err, tc.want)
			}
		})
	}
	// The real host: its own network, whichever it is, is refused.
	nets, err := HostNets()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nets {
		if n.Bits() < 8 || n.Bits() > 30 {
			continue
		}
		_, err := Parse("s.yaml", []byte(twoNodes+"network:\n  subnet: "+n.String()+"\n"))
		if err == nil || !strings.Contains(err.Error(), "s.yaml:9: network.subnet: ") || !strings.Contains(err.Error(), "host's network") {
			t.Errorf("host network %s: got %v", n, err)
		}
	}
}

// TestSpecFileKinds: only a regular file of at most MaxSize bytes is
// read; a FIFO or a device is refused at once instead of blocking or
// reading forever.
func TestSpecFileKinds(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, append([]byte(twoNodes+"#"), bytes.Repeat([]byte("x"), MaxSize)...), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{fifo, fifo + ": not a regular file (a FIFO)"},
		{"/dev/zero", "/dev/zero: not a regular file (a character device)"},
		{dir, dir + ": not a regular file (a directory)"},
		{big, fmt.Sprintf("%s: spec is %d bytes, more than the limit of %d", big, len(twoNodes)+1+MaxSize, MaxSize)},
		{filepath.Join(dir, "none.yaml"), filepath.Join(dir, "none.yaml") + ": no such file or directory"},
	} {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				_, err := Load(tc.path)
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || err.Error() != tc.want {
					t.Fatalf("error\n  got  %v\n  want %s", err, tc.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Load blocked")
			}
		})
	}
}

// TestSpecDecodes: what the corpus cannot show, because the spec loads.
func TestSpecDecodes(t *testing.T) {
	s, err := Parse("s.yaml", []byte(`name: t
nodes:
  - name: server1
    command: ["/bin/true"]
    env:
      "QUOTED": a
      'SINGLE': b
      PLAIN: c
    workdir: "{{tmp}}/not-yet"
  - name: client1
    role: client
    command: ["/bin/true"]
    start_delay: 5s
network:
  subnet: 10.78.0.0/24
scheduler:
  strategy: pct
  pct_depth: 100
  seed: -9223372036854775808
trials: 10000000
`))
	if err != nil {
		t.Fatal(err)
	}
	env := s.Nodes[0].Env
	if env["QUOTED"] != "a" || env["SINGLE"] != "b" || env["PLAIN"] != "c" || len(env) != 3 {
		t.Errorf("env %q: quoted keys must lose their quotes", env)
	}
	if s.Scheduler.PCTDepth != 100 || s.Trials != MaxTrials || s.Scheduler.Seed != math.MinInt64 {
		t.Errorf("bounds: depth %d, trials %d, seed %d", s.Scheduler.PCTDepth, s.Trials, s.Scheduler.Seed)
	}
	_, env2, wd, err := s.Expand("server1", TemplateVars{TrialDir: "/t", NodeDir: "/t/server1"})
	if err != nil || wd != "/t/server1/not-yet" || strings.Join(env2, " ") != "PLAIN=c QUOTED=a SINGLE=b" {
		t.Errorf("Expand: env %q, workdir %q, %v", env2, wd, err)
	}
}

// TestSpecArgsTooLong: arguments that together pass execve's limit are
// refused at load, naming the node's command.
func TestSpecArgsTooLong(t *testing.T) {
	// Each argument is under the per-argument limit; together they pass
	// the largest total the kernel accepts.
	n := maxArgMax/100000 + 1
	args := strings.Repeat(`, "{{printf \"%0100000d\" 0}}"`, n)
	_, err := parse("s.yaml", []byte(`name: t
nodes:
  - name: client1
    role: client
    command: ["/bin/true"`+args+`]
network:
  subnet: 10.78.0.0/24
`), nil)
	want := "s.yaml:5: nodes[0].command: node client1: arguments and environment take "
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "the kernel accepts for a new program") {
		t.Fatalf("got %v, want %s…", err, want)
	}
}
