package tracer

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/tracer/internal/callsite"
	"github.com/lockstep-dev/lockstep/tracer/internal/launch"
	"github.com/lockstep-dev/lockstep/tracer/internal/ptrace"
)

// ErrNotFound says a program to launch does not exist or is not executable.
var ErrNotFound = errors.New("program not found or not executable")

// Launch starts a node's first process traced. It returns once the process
// has exec'd the target (or failed to).
func (t *Tracer) Launch(cfg LaunchConfig) (pid int, err error) {
	cfg, path, err := prepareLaunch(cfg, t.opts.CPU >= 0)
	if err != nil {
		return 0, err
	}
	t.do(func() { pid, err = t.launch(cfg, path) })
	return pid, err
}

// prepareLaunch checks a launch and finds its program. pinned says the node
// will run on one CPU.
func prepareLaunch(cfg LaunchConfig, pinned bool) (LaunchConfig, string, error) {
	if len(cfg.Argv) == 0 {
		return cfg, "", errors.New("launching: empty command")
	}
	var path string
	var err error
	if cfg.Sandbox != nil && cfg.Sandbox.Root != nil {
		// Found in the image, where it will be exec'd.
		if path, err = cfg.Sandbox.Root.LookPath(cfg.Argv[0], cfg.Dir, cfg.Env); err != nil {
			return cfg, "", fmt.Errorf("%s: %w", cfg.Argv[0], ErrNotFound)
		}
	} else if path, err = resolveProgram(cfg.Argv[0], cfg.Dir); err != nil {
		return cfg, "", err
	}
	if pinned {
		// The node runs on one CPU (below), and Go's runtime sizes
		// GOMAXPROCS from that; saying so in the environment changes no
		// value but keeps libraries that size it themselves from cgroup
		// files (go.uber.org/automaxprocs: nats-server and many more) from
		// reading /proc/self/mountinfo and /proc/self/cgroup. Their
		// contents differ in every run (mount IDs, other campaigns'
		// namespaces, lockstep's run prefix), so what the program allocated
		// did too, its garbage collections came at other moments and its
		// goroutines ran in another order: no trace of nats-server
		// replayed.
		cfg.Env = withDefaultEnv(cfg.Env, "GOMAXPROCS", "1")
	}
	// Go's asynchronous preemption signals threads on a timer: every signal
	// is a ptrace stop and a source of nondeterminism.
	cfg.Env = withGodebug(cfg.Env, "asyncpreemptoff=1")
	// A HotSpot JVM compiles hot methods on compiler threads of its own
	// while the thread that asked runs on: when the compiled code is
	// installed, and whether a deoptimization's handshake then meets a
	// thread lockstep holds, depends on how far each got, which real time
	// decided. Compiling in the foreground puts the compilation between
	// the asking thread's two ops. Measured on ZooKeeper started by its
	// package's script: 12 of 96 passing traces parted from their
	// replays without it, none of 96 with it
	// (bench/results/clock-freeze-2026-12-07.md). Compiling early buys a
	// trial nothing (its time is virtual), so compilation starts later.
	for _, o := range jvmOptions {
		cfg.Env = withJavaToolOption(cfg.Env, o.flags, o.option)
	}
	// erl puts ERL_AFLAGS first on its command line: a flag the node gives
	// again later (its command line, ERL_FLAGS, ERL_ZFLAGS) wins. A node
	// that sets ERL_AFLAGS itself, even empty, gets none of these (an OTP
	// before 21 refuses +IOs and would not start).
	cfg.Env = withDefaultEnv(cfg.Env, "ERL_AFLAGS", beamFlags)
	return cfg, path, nil
}

// beamFlags are what every Erlang VM (OTP 21 and later) a traced node
// starts gets first on its command line (ERL_AFLAGS). A scheduler with
// nothing to run polls for I/O with a zero timeout (+IOs true, the
// default): under lockstep each poll is an op, and whether the poll thread
// or which scheduler polled next was the VM's threads' own race, so traces
// did not replay (RabbitMQ: 0 of 14). One scheduler of each kind (the node
// has one CPU), no scheduler polling, and no spinning before a scheduler
// sleeps (spinning is CPU a grace period waits out) made Mnesia's trials
// four times as fast (bench/results/beam-flags-2026-12-08.md).
const beamFlags = "+sbwt none +sbwtdcpu none +sbwtdio none +S 1:1 +SDcpu 1:1 +SDio 1 +IOs false"

// A jvmOption is what lockstep adds to every traced node's
// JAVA_TOOL_OPTIONS, unless the node's own setting names one of flags.
type jvmOption struct {
	flags  []string
	option string
}

var jvmOptions = []jvmOption{
	{[]string{"BackgroundCompilation"}, "-XX:-BackgroundCompilation"},
	// Every compile threshold at ten times HotSpot's default (JDK 17's).
	// In the foreground each compilation is CPU the asking thread waits
	// for, and a stop of the compiler thread going back to its queue; a
	// trial lasts seconds, and compiling a method after 200 calls rather
	// than 2000 made it slower: ZooKeeper's members used 22 % more CPU per
	// trial (bench/results/jvm-compile-thresholds-2026-12-08.md). A hot
	// method still gets compiled. CompileThresholdScaling would say it in
	// one flag, but JDK 8 has none, and a JVM that meets an option it does
	// not know refuses to start.
	{
		[]string{
			"CompileThresholdScaling", "CompileThreshold",
			"Tier3InvocationThreshold", "Tier3MinInvocationThreshold", "Tier3CompileThreshold", "Tier3BackEdgeThreshold",
			"Tier4InvocationThreshold", "Tier4MinInvocationThreshold", "Tier4CompileThreshold", "Tier4BackEdgeThreshold",
		},
		"-XX:Tier3InvocationThreshold=2000 -XX:Tier3MinInvocationThreshold=1000 -XX:Tier3CompileThreshold=20000 " +
			"-XX:Tier3BackEdgeThreshold=600000 -XX:Tier4InvocationThreshold=50000 -XX:Tier4MinInvocationThreshold=6000 " +
			"-XX:Tier4CompileThreshold=150000 -XX:Tier4BackEdgeThreshold=400000 -XX:CompileThreshold=100000",
	},
}

// withJavaToolOption adds option to JAVA_TOOL_OPTIONS, which every HotSpot
// JVM reads (and says so on its stderr), unless the node's own setting
// names one of flags already: then the node's choice stands.
func withJavaToolOption(env []string, flags []string, option string) []string {
	out := append([]string(nil), env...)
	for i, e := range out {
		if v, ok := strings.CutPrefix(e, "JAVA_TOOL_OPTIONS="); ok {
			switch {
			case namesJVMFlag(v, flags):
			case strings.TrimSpace(v) == "":
				out[i] = "JAVA_TOOL_OPTIONS=" + option
			default:
				out[i] = e + " " + option
			}
			return out
		}
	}
	return append(out, "JAVA_TOOL_OPTIONS="+option)
}

// namesJVMFlag says whether options set one of flags (-XX:+F, -XX:-F or
// -XX:F=V); a flag whose name holds another's (Tier3CompileThreshold,
// CompileThreshold) is not the other.
func namesJVMFlag(options string, flags []string) bool {
	for _, o := range strings.Fields(options) {
		name, ok := strings.CutPrefix(o, "-XX:")
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(strings.TrimLeft(name, "+-"), "=")
		if slices.Contains(flags, name) {
			return true
		}
	}
	return false
}

func resolveProgram(argv0, dir string) (string, error) {
	path := argv0
	if !containsSlash(argv0) {
		p, err := lookPath(argv0)
		if err != nil {
			return "", fmt.Errorf("%s: %w", argv0, ErrNotFound)
		}
		path = p
	} else if dir != "" && path[0] != '/' {
		path = dir + "/" + path
	}
	if err := unix.Access(path, unix.X_OK); err != nil {
		return "", fmt.Errorf("%s: %w", argv0, ErrNotFound)
	}
	if st, err := os.Stat(path); err != nil || st.IsDir() {
		return "", fmt.Errorf("%s: %w", argv0, ErrNotFound)
	}
	return path, nil
}

func (t *Tracer) launch(cfg LaunchConfig, path string) (int, error) {
	spawn := launch.Spawn
	if t.opts.Zygote != nil {
		spawn = t.opts.Zygote.Spawn
	}
	lc := launch.Config{
		Path: path, Argv: cfg.Argv, Env: cfg.Env, Dir: cfg.Dir, Netns: cfg.Netns, HostsFile: cfg.HostsFile,
		Sandbox: cfg.Sandbox, Stdout: cfg.Stdout, Stderr: cfg.Stderr,
		TrapTSC: t.opts.Clock != nil, NewPID: cfg.PIDNamespace, Init: cfg.PIDNamespace && cfg.Init, ClockFd: -1,
	}
	if !cfg.NoFilter {
		lc.Filter = t.filter
		if cfg.Disk != nil {
			lc.Filter = t.dk.diskFilter(cfg.Disk)
		}
	}
	if cfg.Sandbox != nil && t.opts.Clock != nil && !t.opts.ClockSyscalls {
		// Handed down as a descriptor (see Sandbox).
		pg, err := t.vt.nodeClockPage(t.pt.node(cfg))
		if err != nil {
			return 0, fmt.Errorf("the clock page of node %s: %w", cfg.Node, err)
		}
		lc.ClockFd = pg.fd
	}
	sp, err := spawn(lc)
	if err != nil {
		return 0, fmt.Errorf("starting %s: %w", cfg.Argv[0], err)
	}
	defer sp.Close()
	pid := sp.Pid
	// abort reaps a child that failed or must go; when its setup failed
	// (a bad namespace, directory or hosts file), that failure is the news.
	abort := func(err error) (int, error) {
		unix.Kill(pid, unix.SIGKILL)
		ptrace.Wait(pid, unix.WALL)
		if f := sp.Failure(); f != nil {
			if cfg.Stderr != nil {
				fmt.Fprintf(cfg.Stderr, "lockstep: launching node %s: %v\n", cfg.Node, f)
			}
			return 0, fmt.Errorf("launching %s: %w", cfg.Argv[0], f)
		}
		return 0, err
	}
	if err := ptrace.Seize(pid); err != nil {
		return abort(fmt.Errorf("seizing %s: %w", cfg.Argv[0], err))
	}
	// Affinity and cgroup are set from here while the child waits to be
	// let go: its threads and children inherit both.
	if t.opts.CPU >= 0 {
		var set unix.CPUSet
		set.Set(t.opts.CPU)
		if err := unix.SchedSetaffinity(pid, &set); err != nil {
			return abort(fmt.Errorf("pinning node %s to CPU %d: %w", cfg.Node, t.opts.CPU, err))
		}
	}
	if t.opts.Serialize {
		if err := unix.SchedSetAttr(pid, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_RR, Priority: 1}, 0); err != nil {
			t.log.Warn("threads not serialized: replays of multi-threaded runtimes may diverge", "node", cfg.Node, "err", err, "why", RealtimeHint(err))
		}
	}
	for _, cg := range append([]string{cfg.Cgroup}, cfg.LimitCgroups...) {
		if cg == "" {
			continue
		}
		if err := os.WriteFile(cg+"/cgroup.procs", []byte(strconv.Itoa(pid)), 0); err != nil {
			return abort(fmt.Errorf("moving node %s into cgroup %s: %w", cfg.Node, cg, err))
		}
	}
	ni := t.pt.node(cfg)
	ni.disk = cfg.Disk
	ni.openCPUStat(cfg.Cgroup, t.cgroupWatch())
	ni.stir()
	p := &process{pid: pid, site: callsite.Process{Pid: pid}, node: ni, forkPath: strconv.Itoa(ni.procs), threads: map[int]*thread{}, fds: map[int]*fdInfo{}, root: true, nsInit: cfg.PIDNamespace, init: cfg.PIDNamespace && cfg.Init}
	ni.procs++
	ni.lastExit = nil
	p.rand = ni.rand // the node's first process: the node's stream
	if ni.procs > 1 && t.opts.Random != nil {
		p.rand = t.opts.Random(ni.name + "/" + p.forkPath)
	}
	p.pidfd, _ = unix.PidfdOpen(pid, 0)
	th := &thread{tab: t.pt, tid: pid, proc: p, state: tsRunning}
	th.lpid = p.firstLPID()
	p.threads[pid] = th
	t.pt.procs[pid] = p
	t.pt.addThread(th)
	if err := sp.Release(); err != nil {
		t.dropThread(th)
		delete(t.pt.procs, pid)
		return abort(fmt.Errorf("releasing %s: %w", cfg.Argv[0], err))
	}
	if !t.awaitExec(p, th) {
		return pid, fmt.Errorf("launching %s: it did not exec within 10s", cfg.Argv[0])
	}
	if p.exited && !p.started() {
		err := sp.Failure()
		if err == nil {
			err = errors.New("exited before exec")
		}
		if cfg.Stderr != nil {
			fmt.Fprintf(cfg.Stderr, "lockstep: launching node %s: %v\n", cfg.Node, err)
		}
		return pid, fmt.Errorf("launching %s: %w", cfg.Argv[0], err)
	}
	return pid, nil
}

// awaitExec runs a node's first process, th its thread, until it has
// exec'd the node's program or died (under an init, until the init's
// child has); false when neither happened within 10 s.
func (t *Tracer) awaitExec(p *process, th *thread) bool {
	deadline := time.Now().Add(10 * time.Second)
	for !p.started() && !p.exited {
		if time.Now().After(deadline) {
			return false
		}
		if n := t.q.drain(true); n == 0 {
			pause(50 * time.Microsecond)
		}
		if p.init && th.state == tsAlone {
			// The init's fork runs alone, as every fork does; nothing
			// else runs while a node starts.
			th.allow()
		}
	}
	return true
}

func containsSlash(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return true
		}
	}
	return false
}

func lookPath(name string) (string, error) { return exec.LookPath(name) }

// withGodebug adds a setting to the environment's GODEBUG, keeping the
// settings it already has (a second GODEBUG entry would hide one of them).
func withGodebug(env []string, setting string) []string {
	out := append([]string(nil), env...)
	for i, e := range out {
		if v, ok := strings.CutPrefix(e, "GODEBUG="); ok {
			if v == "" {
				out[i] = "GODEBUG=" + setting
			} else {
				out[i] = e + "," + setting
			}
			return out
		}
	}
	return append(out, "GODEBUG="+setting)
}

// withDefaultEnv adds name=value to the environment unless it has name
// already (the node's own setting wins).
func withDefaultEnv(env []string, name, value string) []string {
	for _, e := range env {
		if strings.HasPrefix(e, name+"=") {
			return env
		}
	}
	return append(append([]string(nil), env...), name+"="+value)
}

// cgroupWatch is Options.WatchCgroup where counts can stand for CPU time:
// a count that stood says no thread ran only when none can run beside the
// tracer. A thread that had put itself to sleep and changed its mind runs
// on, on another CPU, without being switched in; unpinned, cpu.stat's CPU
// time shows it.
func (t *Tracer) cgroupWatch() WatchCgroup {
	if t.opts.CPU < 0 {
		return nil
	}
	return t.opts.WatchCgroup
}
