package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/internal/testutil"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/spec"
)

// The sandbox probes (testdata/hostile/sandbox, issue 45): each node
// program tries one way out of its sandbox that a hostile-probe round
// found open, and the test checks both what the node was told and, on the
// host, that nothing got through. Each spec runs two trials: a probe must
// not spoil the next trial.
func TestHostileSandbox(t *testing.T) {
	requireTrials(t)
	for _, tt := range []struct {
		spec string
		// host, when set, makes what the node reaches for on the host in
		// dir (HOSTDIR in the spec's commands) and returns the check that
		// nothing reached it, run after each trial.
		host func(t *testing.T, dir string) func(t *testing.T)
		want OutcomeKind
		out  map[string]string // node output file → lines it must hold
		not  map[string]string // node output file → text it must not hold
		// lines, when set, gives client.out's lines, which depend on what
		// the host has.
		lines func() string
		// trace, when set, checks a trial's records.
		trace func(t *testing.T, r *TrialResult)
	}{
		// A Unix socket is reached only if the node bound it, however the
		// path names it (a magic link, a relative path, a symlink): the
		// host's listener and the other node see nothing.
		{spec: "unixlink", host: hostUnixSockets, want: Pass, out: map[string]string{
			"server.out": "own socket: ok\nown socket through /proc/self/fd: ok\nown socket through /dev/fd: ok\n",
			"client.out": "own socket in /tmp: ok\n" +
				"own socket in /tmp through /proc/self/fd: ok\nown socket in /tmp through /dev/fd: ok\n" +
				"own socket by a relative path: ok\nown socket through a symlink: ok\nown abstract socket: ok\n" +
				"host socket: Connection refused\n" +
				"host socket through /proc/self/fd: Connection refused\nhost socket through /dev/fd: Connection refused\n" +
				"host datagram socket: Connection refused\n" +
				"host datagram socket through /proc/self/fd: Connection refused\n" +
				"host datagram socket through /dev/fd: Connection refused\n" +
				"host datagram socket by sendmmsg through /proc/self/fd: Connection refused\n" +
				"host datagram socket by sendmmsg through /dev/fd: Connection refused\n" +
				"host socket by a relative path: Connection refused\nhost socket through a symlink: Connection refused\n" +
				"other node's socket: Connection refused\n" +
				"other node's socket through /proc/self/fd: Connection refused\n" +
				"other node's socket through /dev/fd: Connection refused\n",
		}, not: map[string]string{"server.out": "stranger"}},
		// A send from memory lockstep cannot read is refused, not run
		// natively ahead of the bytes in flight; memfd_secret, whose
		// memory it never can read, is refused outright.
		{spec: "secretsend", want: Pass, out: map[string]string{
			"client.out": "memfd_secret: Function not implemented\nsend from the vvar page: Bad address\n",
			"server.out": "received: first\nlast\n\n",
		}},
		// The host's kernel through /proc and /sys: masked and read-only
		// where Docker's default profile has them so; vsock refused.
		{spec: "procmask", want: Pass, lines: procMaskLines},
		// A receive timeout on the node's own Unix socket runs on the
		// virtual clock, as other timed waits do: not a deadlock.
		{spec: "unixtimeout", want: Pass, out: map[string]string{"client.out": "" +
			"recv: Resource temporarily unavailable after 30s\nrecv with a writer: 4 bytes after 1s\n" +
			"read: Resource temporarily unavailable after 30s\nread with a writer: 4 bytes after 1s\n" +
			"recvmsg: Resource temporarily unavailable after 30s\nrecvmsg with a writer: 4 bytes after 1s\n",
		}},
		// A sendmmsg is captured as sendmsg is: each message a delivery
		// of its own (over TCP in order), and nothing reaches the peer
		// around the schedule.
		{spec: "sendmmsg", want: Pass, out: map[string]string{
			"client.out":    "sendmmsg: 3 messages of 3, 3, 3 bytes\n",
			"server.out":    "received: a1|m1|m2|m3|z|\n",
			"udpclient.out": "udp sendmmsg: 3 messages of 2, 2, 2 bytes\n",
			"udpserver.out": "datagrams: u1 u2 u3 u4 u5\n",
		}, trace: sendmmsgDeliveries},
	} {
		t.Run(tt.spec, func(t *testing.T) {
			prog := repoPath("testdata", "bin", "hostile", tt.spec)
			testutil.RequireBinary(t, prog)
			var dir string
			check := func(*testing.T) {}
			if tt.host != nil {
				dir = hostDir(t)
				check = tt.host(t, dir)
			}
			if tt.lines != nil {
				tt.out = map[string]string{"client.out": tt.lines()}
			}
			sp := loadSandboxSpec(t, tt.spec, dir)
			sum, err := Run(context.Background(), sp, RunOptions{Trials: 2, OutDir: t.TempDir(), TraceAll: tt.trace != nil})
			if err != nil {
				t.Fatal(err)
			}
			if len(sum.Results) != 2 {
				t.Fatalf("%d trials ran, want 2", len(sum.Results))
			}
			for _, r := range sum.Results {
				if r.Outcome.Kind != tt.want {
					t.Fatalf("trial %d: outcome %v, want %s", r.Index, r.Outcome, tt.want)
				}
				for file, want := range tt.out {
					b, err := os.ReadFile(filepath.Join(r.Dir, file))
					if err != nil {
						t.Fatal(err)
					}
					if !strings.Contains(string(b), want) {
						t.Fatalf("trial %d: %s:\n%s\nwant in it:\n%s", r.Index, file, b, want)
					}
				}
				for file, bad := range tt.not {
					if b, _ := os.ReadFile(filepath.Join(r.Dir, file)); strings.Contains(string(b), bad) {
						t.Fatalf("trial %d: %s:\n%s\nwant no %q in it", r.Index, file, b, bad)
					}
				}
				check(t)
				if tt.trace != nil {
					tt.trace(t, r)
				}
				if left := processesMentioning(r.Dir); len(left) > 0 {
					t.Fatalf("trial %d left running: %v", r.Index, left)
				}
			}
		})
	}
}

// loadSandboxSpec loads testdata/hostile/sandbox/NAME.yaml with HOSTDIR
// in its commands replaced by dir.
func loadSandboxSpec(t *testing.T, name, dir string) *spec.Spec {
	t.Helper()
	src := repoPath("testdata", "hostile", "sandbox")
	b, err := os.ReadFile(filepath.Join(src, name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(b), "{{dir}}", src)
	text = strings.ReplaceAll(text, "HOSTDIR", dir)
	path := filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	sp, err := spec.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// procMaskLines is what procmask prints on this host: each path of
// Docker's masked paths empty (absent where the host's kernel has none),
// each of its read-only ones not writable, vsock refused.
func procMaskLines() string {
	var b strings.Builder
	for _, p := range []string{"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
		"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
		"/sys/firmware", "/sys/devices/virtual/powercap"} {
		if fileExists(p) {
			b.WriteString(p + ": empty\n")
		} else {
			b.WriteString(p + ": absent\n")
		}
	}
	for _, p := range []string{"/proc/sysrq-trigger", "/proc/irq/*/smp_affinity", "/proc/bus/pci/*/*", "/proc/sys/kernel/core_pattern"} {
		if m, _ := filepath.Glob(p); len(m) > 0 {
			b.WriteString(p + " open for writing: Read-only file system\n")
		} else {
			b.WriteString(p + ": absent\n")
		}
	}
	b.WriteString("/proc/self/comm write: ok\nsocket AF_VSOCK: Address family not supported by protocol\n")
	return b.String()
}

// sendmmsgDeliveries checks that each sendmmsg sent its three messages
// and that each of the client's and udpclient's messages was a delivery
// of its own (the TCP client's in order).
func sendmmsgDeliveries(t *testing.T, r *TrialResult) {
	for _, c := range []struct {
		node string
		want []string
	}{{"client", []string{"a1|", "m1|", "m2|", "m3|", "z|"}}, {"udpclient", []string{"u1", "u2", "u3", "u4", "u5"}}} {
		var sent int64 = -1
		var delivered []string
		for _, rec := range r.Records {
			switch {
			case rec.Op.Node != c.node:
			case rec.Op.Kind == sched.Send && rec.Op.Syscall == "sendmmsg":
				sent = rec.Result
			case rec.Op.Kind == sched.Deliver:
				delivered = append(delivered, string(rec.Data))
			}
		}
		if c.node == "udpclient" {
			slices.Sort(delivered) // datagrams keep no order
		}
		if sent != 3 || !slices.Equal(delivered, c.want) {
			t.Fatalf("trial %d: %s's sendmmsg returned %d and its deliveries were %q; want 3 and %q", r.Index, c.node, sent, delivered, c.want)
		}
	}
}

// hostDir makes the host's directory a spec's HOSTDIR names, under /run:
// where the host's daemons keep their sockets, and outside /tmp, which a
// node sees through an overlay of its own (the kernel refuses a connect
// through an overlay to a socket bound beneath it, which hid the hole).
func hostDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/run", "lockstep-hostile-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// hostUnixSockets listens on a stream socket and binds a datagram socket
// in dir (stream.sock, dgram.sock); its check fails if a connection or a
// datagram came from the node.
func hostUnixSockets(t *testing.T, dir string) func(*testing.T) {
	l := hostUnixSocket(t, unix.SOCK_STREAM, filepath.Join(dir, "stream.sock"))
	if err := unix.Listen(l, 16); err != nil {
		t.Fatal(err)
	}
	d := hostUnixSocket(t, unix.SOCK_DGRAM, filepath.Join(dir, "dgram.sock"))
	return func(t *testing.T) {
		t.Helper()
		if c, _, err := unix.Accept(l); !errors.Is(err, unix.EAGAIN) {
			var b [64]byte
			n, _ := unix.Read(c, b[:])
			unix.Close(c)
			t.Fatalf("the host's listener accepted a connection from the node (%v), which sent %q", err, b[:max(n, 0)])
		}
		var b [64]byte
		if n, _, err := unix.Recvfrom(d, b[:], unix.MSG_DONTWAIT); !errors.Is(err, unix.EAGAIN) {
			t.Fatalf("the host's datagram socket received %q from the node (%v)", b[:max(n, 0)], err)
		}
	}
}

// hostUnixSocket makes a non-blocking Unix socket bound at path, closed
// with the test.
func hostUnixSocket(t *testing.T, typ int, path string) int {
	t.Helper()
	fd, err := unix.Socket(unix.AF_UNIX, typ|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	return fd
}
