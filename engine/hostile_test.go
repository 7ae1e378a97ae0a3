package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/spec"
)

// The hostile-program suite: programs that misbehave as nodes, each
// classified as what it did (never as lockstep's trouble, never as another
// kind of bug) and leaving no process behind.
func TestHostilePrograms(t *testing.T) {
	requireTrials(t)
	for _, tt := range []struct {
		spec   string
		want   OutcomeKind
		detail string            // in the outcome's detail
		out    map[string]string // node output file → a line it must hold
	}{
		// threads.txt says where each thread was when the trial stopped.
		{"spin", Livelock, "client/0/t0 kept running without reaching a gated syscall", map[string]string{"threads.txt": ": lockstep running; kernel R"}},
		{"bomb", Pass, "", map[string]string{"client.out": "bomb of 511 processes done"}},
		{"daemon", Pass, "", map[string]string{"client.out": "daemonized"}},
		{"chain", Pass, "", map[string]string{"client.out": "end of the chain"}},
		{"crash", ClientFailed, "was killed by SIGSEGV", nil},
		{"closefds", Pass, "", map[string]string{"client.out": "closing everything"}},
		{"sockets", Pass, "", map[string]string{"client.out": "10000 sockets open"}},
		{"portclash", NodeCrashed, "server/0 exited with code 1", map[string]string{"server.err": "second listener: Address already in use"}},
		{"killparent", Pass, "", map[string]string{"client.out": "still here"}},
		{"unreachable", Pass, "", map[string]string{"client.out": "10.77.0.99 No route to host after 3000ms\n192.0.2.1 Network is unreachable after 0ms"}},
		{"escape", Pass, "", map[string]string{"client.out": "setns /run/netns/X: Operation not permitted\nremount /: Operation not permitted\n" +
			"sethostname: Operation not permitted\nprocesses in /proc: 1\nblock devices in /dev: 0\n"}},
		{"tmp", Pass, "", map[string]string{"client.out": " ok\n"}},
		{"caps", Pass, "", map[string]string{"client.out": "CapBnd:\t00000000000014e1\n"}}, // tracer.DefaultCaps and NET_ADMIN
		{"write", Pass, "", map[string]string{"client.out": "/etc/lockstep-hostile Read-only file system\n" +
			"/usr/lockstep-hostile Read-only file system\n" +
			repoPath("testdata", "specs", "hostile") + "/lockstep-hostile " + specDirWrite() + "\n" +
			"/proc/sys/kernel/core_pattern Read-only file system\n"}},
		// Refused: another ABI's syscalls (ENOSYS).
		{"abi", Pass, "", map[string]string{"client.out": "int 0x80 getpid: Function not implemented\n" +
			"int 0x80 write: Function not implemented\nx32 getpid: Function not implemented\n"}},
		// Refused: the host's keyrings, new namespaces, clone3, a file by
		// its handle and writes to the clock page, even with SYS_ADMIN and
		// DAC_READ_SEARCH.
		{"hoststate", Pass, "", map[string]string{"client.out": "add_key: Operation not permitted\n" +
			"keyctl: Operation not permitted\nunshare user: Operation not permitted\n" +
			"unshare net: Operation not permitted\nclone3: Function not implemented\n" +
			"open_by_handle_at: Operation not permitted\n" +
			"clock page pwrite: Operation not permitted\nclock page mmap writable: Operation not permitted\n" +
			"clock page mmap read-only: ok\nclock page mprotect writable: Permission denied\n" +
			"clock page reopened read-write: ok\nclock page write through it: Operation not permitted\n" +
			"clock page ftruncate: Operation not permitted\n"}},
		// Refused: scheduling changes; the thread stays SCHED_RR.
		{"sched", Pass, "", map[string]string{"client.out": "sched_setscheduler SCHED_OTHER: Operation not permitted\n" +
			"sched_setparam: Operation not permitted\nsched_setaffinity: Operation not permitted\n" +
			"sched_setattr: Operation not permitted\nsetpriority: ok\npolicy: SCHED_RR\n"}},
		// Refused: io_uring and Linux AIO (ENOSYS).
		{"async", Pass, "", map[string]string{"client.out": "io_uring_setup: Function not implemented\n" +
			"io_setup: Function not implemented\n"}},
		// Virtual: timed waits longer than the grace period time out on
		// the virtual clock, not as a deadlock.
		{"timedwait", Pass, "", map[string]string{"client.out": "sigtimedwait: Resource temporarily unavailable after 30s\n" +
			"semtimedop: Resource temporarily unavailable after 30s\n" +
			"mq_timedreceive: Connection timed out after 30s\nfutex_waitv: Connection timed out after 30s\n" +
			"futex lock_pi: Connection timed out after 30s\nfutex lock_pi2: Connection timed out after 30s\n" +
			"futex wait_requeue_pi: Connection timed out after 30s\n" +
			"futex lock_pi held, past its deadline: Connection timed out after 0s\n" +
			"futex lock_pi free, past its deadline: returned after 0s\n" +
			// recvmmsg's timeout counts virtual time too: past it, the
			// call returns with one datagram of two; within it, the time
			// left is written back.
			"recvmmsg past its timeout: 1 after 31s, 0s left\nrecvmmsg within its timeout: 1 after 30s, 30s left\n"}},
		// Told: the ways around the gate on a socket fail with the errno
		// a program falls back on; what goes through the gate still does.
		{"bypass", Pass, "", map[string]string{"client.out": "sendfile to the socket: Invalid argument\n" +
			"splice to the socket: Invalid argument\nsplice from the socket: Invalid argument\n" +
			"pwritev2 to the socket: Operation not supported\npreadv2 from the socket: Operation not supported\n" +
			"sendto MSG_FASTOPEN: Operation not supported\nTCP_FASTOPEN_CONNECT: Operation not supported\n" +
			"echoed: echo\n"}},
		// Refused: the trial's directory joins no two nodes (a node's
		// own Unix socket there still works).
		{"unixsock", Pass, "", map[string]string{
			"server.out": "own socket connect: ok\nSystem V queue: ok\nmkfifo: Operation not permitted\n",
			"client.out": "other node's socket connect: Connection refused\nother node's socket sendto: Connection refused\n" +
				"other node's System V queue: No such file or directory\n"}},
	} {
		t.Run(tt.spec, func(t *testing.T) {
			sp, err := spec.Load(repoPath("testdata", "specs", "hostile", tt.spec+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			sum, err := Run(context.Background(), sp, RunOptions{Trials: 1, OutDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			r := sum.Results[0]
			if r.Outcome.Kind != tt.want || !strings.Contains(r.Outcome.Detail, tt.detail) {
				t.Fatalf("outcome %v, want %s (%q)", r.Outcome, tt.want, tt.detail)
			}
			for file, want := range tt.out {
				b, err := os.ReadFile(filepath.Join(r.Dir, file))
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(b), want) {
					t.Fatalf("%s: %q, want %q in it", file, b, want)
				}
			}
			// What a node wrote to /tmp stayed in its own.
			if f := fmt.Sprintf("/tmp/lockstep-hostile-tmp-%d", r.Seed); fileExists(f) {
				t.Fatalf("the node's file %s is on the host", f)
			}
			// Nothing of the trial runs on: no process may mention the
			// trial's directory, nor the daemon's marker, named by the
			// trial's seed (nodes see their directory at tracer.TrialPath,
			// which every trial's nodes share).
			left := processesMentioning(r.Dir)
			left = append(left, processesMentioning(fmt.Sprintf("daemon-marker-%d", r.Seed))...)
			if len(left) > 0 {
				t.Fatalf("left running: %v", left)
			}
		})
	}
}

// specDirWrite is what a node's write into the spec's folder gives: the
// host's filesystem is read-only to it, but a folder under /tmp (a clone
// there, as on CI) is in the node's private /tmp, where the write lands
// without reaching the host (the tmp case shows that).
func specDirWrite() string {
	if strings.HasPrefix(repoPath("testdata"), "/tmp/") {
		return "ok"
	}
	return "Read-only file system"
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// processesMentioning lists the command lines that contain s.
func processesMentioning(s string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), s) {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}
