package netns

import (
	"context"
	"errors"
	"fmt"
	"github.com/lockstep-dev/lockstep/internal/procfs"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/bpf"
)

// firewall is what cuts of the network need from package bpf.
type firewall interface {
	BlockMode(src, dst netip.Addr, m bpf.Mode) error
	Unblock(src, dst netip.Addr) error
	Clear() error
	Close() error
}

func newFirewall(cgDir string) (firewall, error) {
	fw, err := bpf.NewFirewall(cgDir)
	if err != nil {
		return nil, fmt.Errorf("partition firewall: %w", err)
	}
	return fw, nil
}

// writeOwner records which process owns a run, so a sweep can tell a live
// run from the leftovers of a killed one.
func writeOwner(runDir string) error {
	st, err := procStart(os.Getpid())
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(runDir, "owner"), []byte(fmt.Sprintf("%d %d\n", os.Getpid(), st)), 0o644)
}

// procStart is a process's start time in clock ticks since boot; with the
// pid it names a process uniquely.
func procStart(pid int) (uint64, error) {
	s, err := procfs.ReadStat(pid)
	if err != nil {
		return 0, err
	}
	st, ok := s.Field(procfs.FieldStartTime)
	if !ok {
		return 0, fmt.Errorf("/proc/%d/stat: no start time", pid)
	}
	return uint64(st), nil
}

// ownerAlive says whether the run in runDir still has its lockstep.
func ownerAlive(runDir string) bool {
	b, err := os.ReadFile(filepath.Join(runDir, "owner"))
	if err != nil {
		return false
	}
	var pid int
	var start uint64
	if _, err := fmt.Sscanf(string(b), "%d %d", &pid, &start); err != nil {
		return false
	}
	st, err := procStart(pid)
	return err == nil && st == start
}

// prefixOf returns the cluster prefix name begins with with a cluster prefix ("lsk" and six
// hex digits, or a caller-chosen prefix starting with "lsk").
func prefixOf(name string) string {
	if !strings.HasPrefix(name, namePrefix) || len(name) < len(namePrefix)+6 {
		return ""
	}
	p := name[:len(namePrefix)+6]
	for _, c := range p[len(namePrefix):] {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return ""
		}
	}
	return p
}

// Leftover is one run's objects found by Sweep.
type Leftover struct {
	Prefix  string
	Objects []string
	Live    bool // its lockstep is still running; not removed
}

// Sweep finds the objects of every lockstep run (namespaces, links,
// cgroups, run directories) and removes those whose lockstep is gone —
// what a SIGKILL leaves. With all set it removes live runs' objects too.
// BPF links need no sweeping: they are never pinned, so they close with
// the process that made them.
func Sweep(ctx context.Context, all bool) ([]Leftover, error) {
	found := map[string][]string{}
	add := func(name, obj string) {
		if p := prefixOf(name); p != "" {
			found[p] = append(found[p], obj)
		}
	}
	if ents, err := os.ReadDir("/run/netns"); err == nil {
		for _, e := range ents {
			add(e.Name(), "netns "+e.Name())
		}
	}
	links, err := linkList()
	if err != nil {
		return nil, fmt.Errorf("listing links: %w", err)
	}
	for _, l := range links {
		add(l.Attrs().Name, "link "+l.Attrs().Name)
	}
	if ents, err := os.ReadDir(RunDir); err == nil {
		for _, e := range ents {
			add(e.Name(), "dir "+filepath.Join(RunDir, e.Name()))
		}
	}
	if ents, err := os.ReadDir(EtcNetns); err == nil {
		for _, e := range ents {
			add(e.Name(), "dir "+filepath.Join(EtcNetns, e.Name()))
		}
	}
	for _, root := range cgroupRoots {
		ents, err := os.ReadDir(root)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if n, ok := strings.CutPrefix(e.Name(), "lockstep-"); ok {
				add(n, "cgroup "+filepath.Join(root, e.Name()))
			}
		}
	}
	var out []Leftover
	var errs []error
	for p, objs := range found {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		sort.Strings(objs)
		lo := Leftover{Prefix: p, Objects: objs, Live: ownerAlive(filepath.Join(RunDir, p))}
		if !lo.Live || all {
			killPrefix(p)
			errs = append(errs, removeObjects(p)...)
		}
		out = append(out, lo)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Prefix < out[j].Prefix })
	return out, errors.Join(errs...)
}

// killPrefix kills every process in a run's cgroups or namespaces.
func killPrefix(prefix string) {
	c := &Cluster{prefix: prefix}
	for _, root := range cgroupRoots {
		parent := filepath.Join(root, "lockstep-"+prefix)
		ents, err := os.ReadDir(parent)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if e.IsDir() {
				c.nodes = append(c.nodes, &Node{CgroupDir: filepath.Join(parent, e.Name())})
			}
		}
	}
	if ents, err := os.ReadDir("/run/netns"); err == nil {
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), prefix+"-") {
				c.nodes = append(c.nodes, &Node{NetnsPath: filepath.Join("/run/netns", e.Name())})
			}
		}
	}
	for range 100 {
		pids := c.members()
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			unix.Kill(pid, unix.SIGKILL)
		}
		unix.Nanosleep(&unix.Timespec{Nsec: 1e6}, nil)
	}
}

// removeObjects deletes every object named with prefix. Processes must be
// gone already. It keeps going past errors and returns them all.
func removeObjects(prefix string) []error {
	var errs []error
	links, err := linkList()
	if err != nil {
		errs = append(errs, fmt.Errorf("listing links: %w", err))
	}
	// Host-side veths first (each takes its peer along), then the bridge.
	sort.Slice(links, func(i, j int) bool {
		_, bi := links[i].(*netlink.Bridge)
		_, bj := links[j].(*netlink.Bridge)
		return !bi && bj
	})
	for _, l := range links {
		if strings.HasPrefix(l.Attrs().Name, prefix) {
			if err := netlink.LinkDel(l); err != nil && !errors.Is(err, unix.ENODEV) {
				errs = append(errs, fmt.Errorf("deleting link %s: %w", l.Attrs().Name, err))
			}
		}
	}
	if ents, err := os.ReadDir("/run/netns"); err == nil {
		for _, e := range ents {
			if !strings.HasPrefix(e.Name(), prefix+"-") {
				continue
			}
			p := filepath.Join("/run/netns", e.Name())
			if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, fmt.Errorf("unmounting %s: %w", p, err))
			}
			if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
				errs = append(errs, err)
			}
		}
	}
	if ents, err := os.ReadDir(EtcNetns); err == nil {
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), prefix+"-") {
				if err := os.RemoveAll(filepath.Join(EtcNetns, e.Name())); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	for _, root := range cgroupRoots {
		parent := filepath.Join(root, "lockstep-"+prefix)
		ents, err := os.ReadDir(parent)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if e.IsDir() {
				if err := rmdirRetry(filepath.Join(parent, e.Name())); err != nil {
					errs = append(errs, err)
				}
			}
		}
		if err := rmdirRetry(parent); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.RemoveAll(filepath.Join(RunDir, prefix)); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// rmdirRetry removes a cgroup, waiting briefly for dying tasks to leave it.
func rmdirRetry(dir string) error {
	var err error
	for range 500 {
		if err = unix.Rmdir(dir); err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) {
			break
		}
		unix.Nanosleep(&unix.Timespec{Nsec: 1e6}, nil)
	}
	return fmt.Errorf("removing cgroup %s: %w", dir, err)
}
