package tracer

import (
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/sched"
)

// TestMultiThreadedEpollServer: an epoll loop on the main thread hands
// each connection's bytes to its own worker thread, which echoes them. All
// threads are followed: the loop's epoll_wait, accept and recv belong to
// t0, each connection's sends to a distinct worker, and the same run twice
// gives the same threads the same ops.
func TestMultiThreadedEpollServer(t *testing.T) {
	type view struct {
		byThread map[string][]string // lpid → op kinds in order
		sends    map[string]string   // worker lpid → peer of its sends
	}
	run := func() view {
		h := newHarness(t, Options{Capture: true})
		h.launch("server", bin(t, "c", "epoll_server"), "7351", "2", "2")
		// The server's loop first, so the clients meet a listener.
		h.run(nil, func(st *State) bool { return len(st.Enabled) == 0 })
		h.launch("a", bin(t, "c", "pingpong_client"), "127.0.0.1", "7351", "3", "16")
		h.launch("b", bin(t, "c", "pingpong_client"), "127.0.0.1", "7351", "3", "16")
		res := h.run(nil, nil)
		for _, n := range []string{"a", "b", "server"} {
			if c := exitCode(t, res.exits, n); c != 0 {
				t.Fatalf("%s exited %d:\n%s", n, c, h.output(n))
			}
		}
		if !strings.Contains(h.output("server"), "served 2") {
			t.Fatalf("server output:\n%s", h.output("server"))
		}
		v := view{byThread: map[string][]string{}, sends: map[string]string{}}
		for _, o := range res.ops {
			if o.Node != "server" {
				continue
			}
			v.byThread[o.LPID] = append(v.byThread[o.LPID], o.Kind.String())
			if o.Kind == sched.Send {
				if prev, ok := v.sends[o.LPID]; ok && prev != o.Peer {
					t.Errorf("worker %s sent to two connections: %s and %s", o.LPID, prev, o.Peer)
				}
				v.sends[o.LPID] = o.Peer
			}
		}
		return v
	}
	v := run()
	loop := strings.Join(v.byThread["server/0/t0"], " ")
	// epoll_wait is a poll-kind op.
	for _, k := range []string{"poll", "accept", "recv"} {
		if !strings.Contains(loop, k) {
			t.Errorf("the loop thread has no %s: %s", k, loop)
		}
	}
	if strings.Contains(loop, "send") {
		t.Errorf("the loop thread sent; only workers should: %s", loop)
	}
	if len(v.sends) != 2 {
		t.Fatalf("want sends from exactly two worker threads, got %v (threads %v)", v.sends, v.byThread)
	}
	for lpid := range v.sends {
		if lpid == "server/0/t0" || !strings.HasPrefix(lpid, "server/0/t") {
			t.Errorf("send from unexpected thread %s", lpid)
		}
		// One echo per round, each followed by lockstep's delivery of it,
		// then the close the loop handed over at EOF.
		if got, want := strings.Join(v.byThread[lpid], " "), "send deliver send deliver send deliver close"; got != want {
			t.Errorf("worker %s: ops %q, want %q", lpid, got, want)
		}
	}
	again := run()
	for lpid, ks := range v.byThread {
		if strings.Join(ks, " ") != strings.Join(again.byThread[lpid], " ") {
			t.Errorf("thread %s differs between runs:\n  %v\n  %v", lpid, ks, again.byThread[lpid])
		}
	}
}
