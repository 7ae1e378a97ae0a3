package tracer

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/vclock"
)

// TestFinHeldByAnotherProcess closes a client's connection while a process
// that is not a node holds a copy of its socket, as a child lockstep forks
// (a trial's sentinel, a checker) holds every descriptor lockstep has until
// it execs: the FIN leaves only when that copy goes, here 300 ms later. The
// state after the client's close and exit must wait for it, whatever
// holds the copy and for however long, and so show the server's read of
// the end of the stream enabled.
func TestFinHeldByAnotherProcess(t *testing.T) {
	srvBin, cliBin := bin(t, "c", "pingpong_server"), bin(t, "c", "pingpong_client")
	tr, cl, dir := clusterTracer(t, vclock.New(vclock.DefaultEpoch, 0), "server", "client")
	srv, cli := cl.Node("server"), cl.Node("client")
	launchIn(t, tr, dir, srv, srvBin, "7620")
	cliPid := launchIn(t, tr, dir, cli, cliBin, srv.Addr.String(), "7620", "1", "1")

	const hold = 300 * time.Millisecond
	var copied bool
	var closedAt time.Time
	checked := false
	err := tr.Drive(context.Background(), func(st *State, _ Released) (Action, error) {
		if copied {
			// The first state after the client's close.
			checked = true
			if wait := time.Since(closedAt); wait < hold {
				t.Errorf("the state came %v after the close, before the copy let the FIN go (%v)", wait, hold)
			}
			for _, op := range st.Enabled {
				if op.Node == "server" && op.Kind == sched.Recv {
					return Action{Stop: true}, nil
				}
			}
			t.Errorf("the server's read of the end of the stream is not enabled: enabled %v, pending %v", st.Enabled, st.Pending)
			return Action{Stop: true}, nil
		}
		if len(st.Enabled) == 0 {
			t.Fatalf("nothing enabled: %v", st.Pending)
		}
		op := st.Enabled[0]
		for _, o := range st.Enabled {
			if o.Node == "server" {
				op = o // the server first: its reply must be read before the close
				break
			}
		}
		if op.Node == "client" && op.Kind == sched.Close {
			copy := socketCopy(t, cliPid)
			copied, closedAt = true, time.Now()
			time.AfterFunc(hold, func() { unix.Close(copy) })
		}
		return Action{Release: op.ID}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !checked {
		t.Fatal("the client never closed its connection")
	}
}

// socketCopy duplicates into this process the one socket process pid has.
func socketCopy(t *testing.T, pid int) int {
	t.Helper()
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pidfd)
	dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if l, _ := os.Readlink(dir + e.Name()); strings.HasPrefix(l, "socket:") {
			fd, _ := strconv.Atoi(e.Name())
			d, err := unix.PidfdGetfd(pidfd, fd, 0)
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
	}
	t.Fatalf("process %d has no socket", pid)
	return -1
}
