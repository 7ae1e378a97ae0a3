package history

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// buildWorkload builds testdata/workload's kvclient and kvserver into a
// temporary directory, so that the test runs the source as it is, and
// returns kvclient's path (kvserver is beside it).
func buildWorkload(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(goBin); err != nil {
			t.Skip("no go toolchain to build testdata/workload")
		}
	}
	_, file, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(file), "..", "testdata", "workload")
	dir := t.TempDir()
	cmd := exec.Command(goBin, "build", "-o", dir+string(filepath.Separator), "./kvclient", "./kvserver")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", src, err, out)
	}
	return filepath.Join(dir, "kvclient")
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startServer runs a store on loopback until the test ends, and waits
// until its port answers.
func startServer(t *testing.T, port int, name, pkg string, args ...string) {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed (apt-get install -y %s)", name, pkg)
	}
	cmd := exec.Command(path, args...)
	log := filepath.Join(t.TempDir(), filepath.Base(name)+".log")
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		f.Close()
	})
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(20 * time.Second); ; {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(log)
			t.Fatalf("%s did not listen on %s: %v\n%s", name, addr, err, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runWorkload runs kvclient and checks its history with the kv model.
func runWorkload(t *testing.T, bin string, args ...string) (*Result, []Op) {
	t.Helper()
	hist := filepath.Join(t.TempDir(), "history.jsonl")
	cmd := exec.Command(bin, append(args, "-history", hist)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kvclient %v: %v\n%s", args, err, out)
	}
	ops, err := ReadFile(hist)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Check(context.Background(), mustModel(t, "kv"), ops, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return res, ops
}

// kvclient against a real redis-server on loopback writes a history that
// checks linearizable: a single Redis is.
func TestWorkloadRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs kvclient")
	}
	port := freePort(t)
	startServer(t, port, "redis-server", "redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", t.TempDir())
	bin := buildWorkload(t)
	res, ops := runWorkload(t, bin, "-proto", "resp", "-addr", "127.0.0.1:"+strconv.Itoa(port),
		"-clients", "5", "-ops", "60", "-keys", "3", "-seed", "7")
	if len(ops) != 300 {
		t.Errorf("%d operations, want 300", len(ops))
	}
	if res.Verdict != Linearizable {
		t.Fatalf("verdict %s for a single Redis", res.Verdict)
	}
	t.Logf("%d ops, %d unknown, checked in %v", len(ops), res.Unknown, res.Elapsed)
}

// The same against a one-node etcd's v3 JSON gateway.
func TestWorkloadEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs kvclient")
	}
	port, peer := freePort(t), freePort(t)
	client := "http://127.0.0.1:" + strconv.Itoa(port)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peer)
	startServer(t, port, "etcd", "etcd-server", "--name", "e1", "--data-dir", filepath.Join(t.TempDir(), "e1"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "e1="+peerURL)
	bin := buildWorkload(t)
	// The gateway answers once the node has elected itself.
	var res *Result
	var ops []Op
	for deadline := time.Now().Add(20 * time.Second); ; {
		res, ops = runWorkload(t, bin, "-proto", "etcd", "-addr", "127.0.0.1:"+strconv.Itoa(port),
			"-clients", "4", "-ops", "25", "-keys", "2", "-seed", "3")
		if res.Unknown == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if res.Verdict != Linearizable {
		t.Fatalf("verdict %s for a single etcd", res.Verdict)
	}
	gets := 0
	for _, op := range ops {
		if op.Name == "get" && op.Outcome() == OK && !isNull(op.Output) {
			gets++
		}
	}
	if gets == 0 {
		t.Errorf("no get saw a value: the gateway's replies were not read")
	}
	t.Logf("%d ops, %d unknown, %d gets saw a value, checked in %v", len(ops), res.Unknown, gets, res.Elapsed)
}

// fakeRedis is a RESP server whose answers a test chooses: reply gets
// each command and returns the raw reply, or "" to never answer.
type fakeRedis struct {
	mu    sync.Mutex
	reply func(args []string) string
}

func (s *fakeRedis) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		args, err := readCommand(r)
		if err != nil {
			return
		}
		s.mu.Lock()
		reply := s.reply(args)
		s.mu.Unlock()
		if reply == "" {
			continue // the request is lost: the client times out
		}
		if _, err := io.WriteString(c, reply); err != nil {
			return
		}
	}
}

func startFakeRedis(t *testing.T, reply func(args []string) string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	srv := &fakeRedis{reply: reply}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go srv.serve(c)
		}
	}()
	return l.Addr().String()
}

func bulk(v string, ok bool) string {
	if !ok {
		return "$-1\r\n"
	}
	return fmt.Sprintf("$%d\r\n%s\r\n", len(v), v)
}

func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "*")))
	if err != nil || n < 1 {
		return nil, fmt.Errorf("bad command header %q", line)
	}
	args := make([]string, n)
	for i := range args {
		if line, err = r.ReadString('\n'); err != nil {
			return nil, err
		}
		l, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "$")))
		if err != nil {
			return nil, fmt.Errorf("bad bulk header %q", line)
		}
		buf := make([]byte, l+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		args[i] = string(buf[:l])
	}
	return args, nil
}

// A store whose GETs read a replica that applies the primary's SETs only
// every third command: stale reads, which the checker must report.
func TestWorkloadCatchesStaleReads(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs kvclient")
	}
	primary, replica := map[string]string{}, map[string]string{}
	commands := 0
	addr := startFakeRedis(t, func(args []string) string {
		if commands++; commands%3 == 0 {
			for k, v := range primary {
				replica[k] = v
			}
		}
		switch args[0] {
		case "SET":
			primary[args[1]] = args[2]
			return "+OK\r\n"
		case "GET":
			v, ok := replica[args[1]]
			return bulk(v, ok)
		}
		return "-ERR unknown command\r\n"
	})
	bin := buildWorkload(t)
	// One client alone: every op is sequential, so any stale read is a
	// violation whatever the timing.
	res, ops := runWorkload(t, bin, "-proto", "resp", "-addr", addr,
		"-clients", "1", "-ops", "40", "-keys", "1", "-seed", "1")
	if res.Verdict != Violation {
		t.Fatalf("verdict %s for a store with stale reads (%d ops)", res.Verdict, len(ops))
	}
	path := filepath.Join(t.TempDir(), "stale.html")
	if err := res.VisualizeFile(path); err != nil {
		t.Fatal(err)
	}
}

// Lost requests become unknown outcomes on a fresh process; refused SETs
// become failures; both keep the history checkable.
func TestWorkloadUnknownAndFailed(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs kvclient")
	}
	data := map[string]string{}
	commands := 0
	addr := startFakeRedis(t, func(args []string) string {
		commands++
		switch {
		case commands%7 == 0:
			// Applied but never answered: only an unknown outcome
			// keeps the later reads of this value legal.
			if args[0] == "SET" {
				data[args[1]] = args[2]
			}
			return ""
		case commands%5 == 0 && args[0] == "SET":
			return "-READONLY You can't write against a read only replica.\r\n"
		case args[0] == "SET":
			data[args[1]] = args[2]
			return "+OK\r\n"
		case args[0] == "GET":
			v, ok := data[args[1]]
			return bulk(v, ok)
		}
		return "-ERR unknown command\r\n"
	})
	bin := buildWorkload(t)
	res, ops := runWorkload(t, bin, "-proto", "resp", "-addr", addr, "-timeout", "100ms",
		"-clients", "2", "-ops", "30", "-keys", "2", "-seed", "5")
	if res.Verdict != Linearizable {
		t.Fatalf("verdict %s", res.Verdict)
	}
	byStatus := map[Status]int{}
	procs := map[int]bool{}
	lost := map[int]int64{} // process -> call time of its unknown op
	for _, op := range ops {
		byStatus[op.Outcome()]++
		procs[op.Process] = true
		if op.Outcome() == Unknown {
			if _, twice := lost[op.Process]; twice {
				t.Errorf("process %d has two operations of unknown outcome", op.Process)
			}
			lost[op.Process] = op.Call
		}
	}
	if byStatus[Unknown] == 0 || byStatus[Fail] == 0 || byStatus[OK] == 0 {
		t.Errorf("statuses %v: want some of each", byStatus)
	}
	// A process whose request was lost issues nothing more: its client
	// goes on as a new process.
	for _, op := range ops {
		if at, ok := lost[op.Process]; ok && op.Call > at {
			t.Errorf("process %d issued %s at %d after an unknown outcome at %d", op.Process, op.Name, op.Call, at)
		}
	}
	t.Logf("statuses %v, %d processes", byStatus, len(procs))
}

// kvserver with synchronous replication, written to on the primary and
// read on the replica by two kvclient processes sharing one -clock
// counter: the merged history has distinct times and is linearizable.
func TestWorkloadReplicatedSharedClock(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs kvclient and kvserver")
	}
	bin := buildWorkload(t)
	server := filepath.Join(filepath.Dir(bin), "kvserver")
	replica, primary := freePort(t), freePort(t)
	startServer(t, replica, server, "", "-listen", "127.0.0.1:"+strconv.Itoa(replica))
	startServer(t, primary, server, "", "-listen", "127.0.0.1:"+strconv.Itoa(primary),
		"-replicas", "127.0.0.1:"+strconv.Itoa(replica), "-sync")
	dir := t.TempDir()
	clock := filepath.Join(dir, "clock")
	var clients []Client
	var cmds []*exec.Cmd
	for _, name := range []string{"c1", "c2"} {
		hist := filepath.Join(dir, name+".jsonl")
		cmd := exec.Command(bin, "-addr", "127.0.0.1:"+strconv.Itoa(primary), "-read-addr", "127.0.0.1:"+strconv.Itoa(replica),
			"-clients", "3", "-ops", "40", "-keys", "2", "-name", name, "-clock", clock, "-history", hist)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("kvclient %d: %v", i, err)
		}
		name := []string{"c1", "c2"}[i]
		ops, err := ReadFile(filepath.Join(dir, name+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, Client{Name: name, Ops: ops})
	}
	ops, procs := Merge(clients)
	seen := map[int64]bool{}
	for _, op := range ops {
		for _, at := range []int64{op.Call, *op.Return} {
			if seen[at] {
				t.Fatalf("time %d read twice from the shared clock", at)
			}
			seen[at] = true
		}
		if *op.Return <= op.Call {
			t.Errorf("%s: return %d not after call %d", op.Source, *op.Return, op.Call)
		}
	}
	if len(ops) != 240 || len(procs) != 6 || len(seen) != 480 {
		t.Errorf("%d ops of %d processes, %d distinct times; want 240, 6, 480", len(ops), len(procs), len(seen))
	}
	res, err := Check(context.Background(), mustModel(t, "kv"), ops, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != Linearizable {
		t.Fatalf("verdict %s with synchronous replication", res.Verdict)
	}
}
