package tracer

import (
	"iter"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// toOtherNode reports whether fi is an internet socket whose peer lockstep
// gates, or whose peer it cannot tell (not connected yet).
func (pt *procTable) toOtherNode(fi *fdInfo) bool {
	return fi.kind == fdInet && (!fi.peer.IsValid() || pt.gated(fi.peer.Addr()))
}

// sockDup returns lockstep's duplicate of the TCP socket with these
// addresses, -1 when it holds none.
func (pt *procTable) sockDup(local, remote netip.AddrPort) int {
	for _, p := range pt.procs {
		for _, fi := range p.fds {
			// fdInfo addresses are unmapped already (proc_fds.go).
			if fi.kind != fdInet || fi.dup < 0 || fi.peer != remote || fi.local.Port() != local.Port() {
				continue
			}
			if a := fi.local.Addr(); a == local.Addr() || a.IsUnspecified() {
				return fi.dup
			}
		}
	}
	return -1
}

// dgramReceiver finds lockstep's duplicate of the datagram socket that
// would receive at dst, -1 when it knows none.
func (pt *procTable) dgramReceiver(dst netip.AddrPort) int {
	ni := pt.byAddr[dst.Addr().Unmap()]
	if ni == nil {
		return -1
	}
	for _, p := range pt.procs {
		if p.node != ni || p.exited {
			continue
		}
		for _, fi := range p.fds {
			if fi.kind != fdInet || fi.sockType != unix.SOCK_DGRAM || fi.dup < 0 || fi.local.Port() != dst.Port() {
				continue
			}
			if a := fi.local.Addr().Unmap(); a.IsUnspecified() || a == dst.Addr().Unmap() {
				return fi.dup
			}
		}
	}
	return -1
}

// node returns the launched node's state, made on its first launch.
func (pt *procTable) node(cfg LaunchConfig) *nodeInfo {
	ni := pt.nodes[cfg.Node]
	if ni == nil {
		ni = &nodeInfo{name: cfg.Node, addr: cfg.Addr, netns: cfg.Netns, clockOffset: cfg.ClockOffset, idx: len(pt.nodes)}
		if pt.opts.Random != nil {
			ni.rand = pt.opts.Random(cfg.Node)
		}
		pt.nodes[cfg.Node] = ni
		pt.nodeList = append(pt.nodeList, ni)
		if cfg.Addr.IsValid() {
			pt.byAddr[cfg.Addr] = ni
		}
	}
	return ni
}

// stirAll is stir for every node (faults, launches, clock changes: what
// expectEvent says an event may come even when every thread is held (a
// signal sent, a process's exit or clone on its way): the next collect
// asks the kernel.
func (pt *procTable) expectEvent() { pt.expect = true }

// eventExpected says expectEvent was called since a wait last found no
// event (noEventWaiting).
func (pt *procTable) eventExpected() bool { return pt.expect }

// noEventWaiting records that a wait found no event.
func (pt *procTable) noEventWaiting() { pt.expect = false }

// takeResumed says whether cont let a thread go since the last call.
func (pt *procTable) takeResumed() bool {
	r := pt.resumed
	pt.resumed = false
	return r
}

// allThreads ranges over the traced threads, in no order.
func (pt *procTable) allThreads() iter.Seq[*thread] { return maps.Values(pt.threads) }

// allProcs ranges over the traced processes, in no order.
func (pt *procTable) allProcs() iter.Seq[*process] { return maps.Values(pt.procs) }

// threadCount is how many threads are traced.
func (pt *procTable) threadCount() int { return len(pt.threads) }

// nodesInOrder are the nodes in the order they were launched first.
func (pt *procTable) nodesInOrder() []*nodeInfo { return pt.nodeList }

// nodeNames are the nodes' names, sorted.
func (pt *procTable) nodeNames() []string { return slices.Sorted(maps.Keys(pt.nodes)) }

// nodeAt is the node whose address is a, or nil.
func (pt *procTable) nodeAt(a netip.Addr) *nodeInfo { return pt.byAddr[a.Unmap()] }

// nodeNamed is the node called name, or nil.
func (pt *procTable) nodeNamed(name string) *nodeInfo { return pt.nodes[name] }

// threadOf is the traced thread tid, or nil.
func (pt *procTable) threadOf(tid int) *thread { return pt.threads[tid] }

// current says p is still the process its pid names: it has not exited,
// and the pid was not reused.
func (pt *procTable) current(p *process) bool { return !p.exited && pt.procs[p.pid] == p }

// they wake is not worked out).
func (pt *procTable) stirAll() {
	for _, ni := range pt.nodeList {
		ni.stir()
	}
}

func (pt *procTable) gated(a netip.Addr) bool { return pt.opts.Gated(a.Unmap()) }

func (pt *procTable) inbox(a netip.Addr) string {
	if n := pt.byAddr[a.Unmap()]; n != nil {
		return n.inbox()
	}
	return "inbox:" + a.String()
}

// sockOptsOf returns fi's blocking mode, receive timeout and low-water
// mark.
func (pt *procTable) sockOptsOf(fi *fdInfo) sockOpts {
	if fi.dup < 0 {
		return sockOpts{}
	}
	if fi.opts.gen == pt.sockOptsGen && pt.changingSockOpts == 0 {
		return fi.opts
	}
	return pt.readSockOpts(fi, fi.dup)
}

// unixSockOpts is sockOptsOf for a node-local socket, of which lockstep
// keeps no duplicate: it takes one for the read, and caches what it read
// as sockOptsOf does.
func (pt *procTable) unixSockOpts(p *process, fd int, fi *fdInfo) sockOpts {
	if fi.opts.gen == pt.sockOptsGen && pt.changingSockOpts == 0 {
		return fi.opts
	}
	d := p.dupFd(fd)
	if d < 0 {
		return sockOpts{}
	}
	defer unix.Close(d)
	return pt.readSockOpts(fi, d)
}

// readSockOpts reads fi's settings through sock, a duplicate of it.
func (pt *procTable) readSockOpts(fi *fdInfo, sock int) sockOpts {
	o := sockOpts{gen: pt.sockOptsGen}
	if fl, err := unix.FcntlInt(uintptr(sock), unix.F_GETFL, 0); err == nil {
		o.nonblock = fl&unix.O_NONBLOCK != 0
	}
	if tv, err := unix.GetsockoptTimeval(sock, unix.SOL_SOCKET, unix.SO_RCVTIMEO); err == nil {
		o.rcvTimeo = tv.Sec*1e9 + tv.Usec*1e3
	}
	o.rcvLowat = 1
	if pt.opts.Capture && fi.sockType == unix.SOCK_STREAM {
		if n, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_RCVLOWAT); err == nil {
			o.rcvLowat = n
		}
	}
	if pt.changingSockOpts == 0 {
		// While a change is under way (stopped at, or resumed into, and
		// not yet seen again) what was read may be from before it.
		fi.opts = o
	}
	return o
}

// onSockOptsChange: a tracee is about to run fcntl(F_SETFL), ioctl(FIONBIO)
// or setsockopt(SO_RCVTIMEO or SO_RCVLOWAT), which the filter stops for
// this alone. What lockstep read of any socket's (the fd may share a
// description with others) no longer holds, nor does what it reads until
// the thread is seen again, the call done (handle).
func (pt *procTable) onSockOptsChange(th *thread, _ call) bool {
	pt.sockOptsGen++
	if !th.changingSockOpts {
		th.changingSockOpts = true
		pt.changingSockOpts++
	}
	return false
}

// sockOptsChanged ends th's change of socket settings (it stopped again,
// or is gone).
func (pt *procTable) sockOptsChanged(th *thread) {
	if th.changingSockOpts {
		th.changingSockOpts = false
		pt.changingSockOpts--
		pt.sockOptsGen++
	}
}

func (pt *procTable) nonblocking(fi *fdInfo, c call) bool {
	return pt.sockOptsOf(fi).nonblock || dontWait(c)
}

// dontWait says whether a recv's flags make it non-blocking
// (MSG_DONTWAIT); read and readv have none.
func dontWait(c call) bool {
	return c.flags&unix.MSG_DONTWAIT != 0
}

// nextAlone returns the held disk syscall to run next, the lowest LPID's,
// or nil.
func (pt *procTable) nextAlone() *thread {
	var first *thread
	for _, th := range pt.threads {
		if th.state == tsAlone && (first == nil || th.lpid < first.lpid) {
			first = th
		}
	}
	return first
}

// allHeld reports whether every live thread is stopped by lockstep.
func (pt *procTable) allHeld() bool {
	for _, th := range pt.threads {
		if th.state != tsGated && th.state != tsGroupStop {
			return false
		}
	}
	return len(pt.threads) > 0
}

// socks lists the nodes' connected TCP sockets in a deterministic order
// (process, then descriptor), each socket once although forked children
// share it.
//
// Precondition: runs on the tracer thread.
func (pt *procTable) socks() []Sock {
	ps := make([]*process, 0, len(pt.procs))
	for _, p := range pt.procs {
		if !p.exited {
			ps = append(ps, p)
		}
	}
	slices.SortFunc(ps, func(a, b *process) int {
		if c := strings.Compare(a.node.name, b.node.name); c != 0 {
			return c
		}
		return strings.Compare(a.forkPath, b.forkPath)
	})
	var out []Sock
	seen := map[string]bool{}
	for _, p := range ps {
		fds := make([]int, 0, len(p.fds))
		for fd, fi := range p.fds {
			if fi.kind == fdInet && fi.sockType == unix.SOCK_STREAM && !fi.listening && fi.peer.IsValid() && fi.local.IsValid() {
				fds = append(fds, fd)
			}
		}
		slices.Sort(fds)
		for _, fd := range fds {
			fi := p.fds[fd]
			key := fi.outKey()
			if seen[key] {
				continue
			}
			seen[key] = true
			out = append(out, Sock{Node: p.node.name, Object: "sock:" + p.node.name + "/" + p.forkPath + "/fd" + strconv.Itoa(fd), Conn: key})
		}
	}
	return out
}
