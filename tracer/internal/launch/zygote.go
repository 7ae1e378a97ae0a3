package launch

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// A Zygote forks nodes on a tracer's behalf. Forking lockstep itself makes
// every page lockstep writes while the child lives a copy-on-write fault,
// each with a TLB flush on every CPU lockstep runs on; with two jobs on two
// CPUs that cost more than the trials. A zygote is a second lockstep
// process, started once per job, that does nothing but fork: the faults
// land in an idle process. The children it forks run the same raw-syscall
// setup (spawnChild) and are seized by the tracer thread as before; the
// zygote only reaps them once the tracer has.
type Zygote struct {
	mu   sync.Mutex
	conn *os.File // SOCK_SEQPACKET to the zygote
	pid  int
}

// zygoteEnv marks a process started as a zygote.
const zygoteEnv = "LOCKSTEP_ZYGOTE"

// zygoteFd is the zygote's end of its socket.
const zygoteFd = 3

// zygoteRequest is a launch, sent with the child's descriptors (stdin,
// stdout, stderr, sync read end, error write end, and the network
// namespace when Netns is set) as SCM_RIGHTS.
type zygoteRequest struct {
	Path    string            `json:"path"`
	Argv    []string          `json:"argv"`
	Env     []string          `json:"env"`
	Dir     string            `json:"dir,omitempty"`
	Hosts   string            `json:"hosts,omitempty"`
	Netns   bool              `json:"netns,omitempty"`
	Filter  []unix.SockFilter `json:"filter,omitempty"`
	TrapTSC bool              `json:"traptsc,omitempty"`
	NewPID  bool              `json:"newpid,omitempty"`
	Init    bool              `json:"init,omitempty"`
	// Sandbox: see Config; Clock says the node's clock page is the
	// last descriptor (see Sandbox).
	Sandbox *Sandbox `json:"sandbox,omitempty"`
	Clock   bool     `json:"clock,omitempty"`
}

type zygoteReply struct {
	Pid int    `json:"pid"`
	Err string `json:"err,omitempty"`
}

// StartZygote starts a zygote: lockstep re-executed in zygote mode (the
// binary must call MaybeRunZygote first thing in main). It exits when its
// socket closes: on Close, or when lockstep dies.
func StartZygote() (*Zygote, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "zygote"), os.NewFile(uintptr(fds[1]), "zygote")
	defer theirs.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		ours.Close()
		return nil, err
	}
	defer devnull.Close()
	pid, err := syscall.ForkExec(self, []string{"lockstep-zygote"}, &syscall.ProcAttr{
		Env:   []string{zygoteEnv + "=1"},
		Files: []uintptr{devnull.Fd(), devnull.Fd(), os.Stderr.Fd(), theirs.Fd()},
		// No Pdeathsig: it fires when the forking thread exits, and Go ends
		// threads whose locked goroutine returns (every tracer's does). The
		// zygote ends on EOF instead, which lockstep's death also causes.
		Sys: &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		ours.Close()
		return nil, fmt.Errorf("starting zygote: %w", err)
	}
	return &Zygote{conn: ours, pid: pid}, nil
}

// Close ends the zygote and reaps it.
func (z *Zygote) Close() error {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.conn == nil {
		return nil
	}
	z.conn.Close()
	z.conn = nil
	unix.Kill(z.pid, unix.SIGKILL)
	var ws unix.WaitStatus
	_, err := unix.Wait4(z.pid, &ws, 0, nil)
	return err
}

// Spawn asks the zygote for a child; see Spawn for the contract.
func (z *Zygote) Spawn(cfg Config) (*Child, error) {
	req := zygoteRequest{Path: cfg.Path, Argv: cfg.Argv, Env: cfg.Env, Dir: cfg.Dir, Hosts: cfg.HostsFile,
		Netns: cfg.Netns != "", Filter: cfg.Filter, TrapTSC: cfg.TrapTSC, NewPID: cfg.NewPID, Init: cfg.Init,
		Sandbox: cfg.Sandbox, Clock: cfg.Sandbox != nil && cfg.ClockFd >= 0}
	raw, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var closers []*os.File
	defer func() {
		for _, f := range closers {
			f.Close()
		}
	}()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	closers = append(closers, devnull)
	stdout, stderr := cfg.Stdout, cfg.Stderr
	if stdout == nil {
		stdout = os.Stdout
	}
	if stderr == nil {
		stderr = os.Stderr
	}
	syncR, syncW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	closers = append(closers, syncR)
	errR, errW, err := os.Pipe()
	if err != nil {
		syncW.Close()
		return nil, err
	}
	closers = append(closers, errW)
	fail := func(err error) (*Child, error) {
		syncW.Close()
		errR.Close()
		return nil, err
	}
	fds := []int{int(devnull.Fd()), int(stdout.Fd()), int(stderr.Fd()), int(syncR.Fd()), int(errW.Fd())}
	if cfg.Netns != "" {
		ns, err := os.Open(cfg.Netns)
		if err != nil {
			return fail(fmt.Errorf("opening network namespace: %w", err))
		}
		closers = append(closers, ns)
		fds = append(fds, int(ns.Fd()))
	}
	if req.Clock {
		fds = append(fds, cfg.ClockFd)
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.conn == nil {
		return fail(errors.New("zygote closed"))
	}
	if err := unix.Sendmsg(int(z.conn.Fd()), raw, unix.UnixRights(fds...), nil, 0); err != nil {
		return fail(fmt.Errorf("asking the zygote: %w", err))
	}
	buf := make([]byte, 4096)
	n, err := z.conn.Read(buf)
	if err != nil {
		return fail(fmt.Errorf("zygote did not answer: %w", err))
	}
	var rep zygoteReply
	if err := json.Unmarshal(buf[:n], &rep); err != nil {
		return fail(fmt.Errorf("zygote answer: %w", err))
	}
	if rep.Err != "" {
		return fail(errors.New(rep.Err))
	}
	return newChild(rep.Pid, syncW, errR, cfg), nil
}

// MaybeRunZygote turns the process into a zygote when it was started as
// one (or into TSCTraps' probe), and never returns in that case. Binaries
// that use a Zygote call it first thing in main (and in TestMain).
func MaybeRunZygote() {
	if os.Getenv(tscProbeEnv) != "" {
		os.Exit(runTSCProbe())
	}
	if os.Getenv(zygoteEnv) == "" {
		return
	}
	os.Exit(runZygote())
}

func runZygote() int {
	// Reap children once their tracer has let go of them.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, unix.SIGCHLD)
	go func() {
		for range sigs {
			for {
				var ws unix.WaitStatus
				if pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil); pid <= 0 || err != nil {
					break
				}
			}
		}
	}()
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(8*4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(zygoteFd, buf, oob, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return 0 // lockstep closed the socket: done
		}
		rep := zygoteReply{}
		if pid, err := zygoteSpawn(buf[:n], oob[:oobn]); err != nil {
			rep.Err = err.Error()
		} else {
			rep.Pid = pid
		}
		out, _ := json.Marshal(rep)
		if _, err := unix.Write(zygoteFd, out); err != nil {
			return 1
		}
	}
}

func zygoteSpawn(raw, oob []byte) (int, error) {
	var fds []int
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err == nil {
		for _, m := range msgs {
			got, err := unix.ParseUnixRights(&m)
			if err == nil {
				fds = append(fds, got...)
			}
		}
	}
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	var req zygoteRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return 0, fmt.Errorf("zygote: bad request: %w", err)
	}
	want := 5
	if req.Netns {
		want++
	}
	if req.Clock {
		want++
	}
	if len(fds) != want {
		return 0, fmt.Errorf("zygote: got %d descriptors, want %d", len(fds), want)
	}
	for _, fd := range fds {
		unix.CloseOnExec(fd)
	}
	s := &spawnSpec{trapTSC: req.TrapTSC, newPID: req.NewPID, init: req.NewPID && req.Init, syncFd: uintptr(fds[3]), errFd: uintptr(fds[4])}
	s.initCapsHdr.Version = unix.LINUX_CAPABILITY_VERSION_3
	for i := range 3 {
		s.stdio[i] = uintptr(fds[i])
	}
	keep := []uintptr{s.syncFd, s.errFd}
	if req.Netns {
		s.netns = uintptr(fds[5])
		keep = append(keep, s.netns)
	}
	if err := s.setProgram(req.Path, req.Argv, req.Env, req.Dir, req.Hosts, req.Filter); err != nil {
		return 0, err
	}
	if req.Sandbox != nil {
		clockFd := -1
		if req.Clock {
			clockFd = fds[len(fds)-1]
			keep = append(keep, uintptr(clockFd))
		}
		if err := s.setSandbox(req.Sandbox, clockFd); err != nil {
			return 0, err
		}
	}
	sortUintptrs(keep)
	s.nkeep = copy(s.keep[:], keep)
	return fork(s)
}
