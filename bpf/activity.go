package bpf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// activitySlots is the number of cgroups one Activity watches at once
// (SLOTS in activity.c), taskSlots the number of tasks (TASK_SLOTS).
const (
	activitySlots = 4096
	taskSlots     = 65536
)

// Activity counts, per watched cgroup v2 directory, each time a task of it
// (or of a cgroup below it) is woken or switched onto a CPU
// (tp_btf/sched_wakeup, sched_wakeup_new and sched_switch). A count that
// did not move between two reads says that none of those tasks ran or was
// woken in between. The counts live in a map lockstep has mapped into its
// memory: reading one makes no system call, where a cgroup's cpu.stat
// makes the kernel flush every CPU's statistics first.
//
// A task is found in a watched cgroup or in one at most seven levels below
// it (DEPTH in activity.c): the host's files, /sys/fs/cgroup among them,
// are read-only to a node, so its tasks stay in the node's own cgroup.
//
// One Activity serves a job (a campaign's jobs share a Kernel); Watch,
// WatchTask and the counters' Close may be called from any goroutine.
type Activity struct {
	objs    activityObjects
	links   []link.Link
	mem     *ebpf.Memory
	taskMem *ebpf.Memory

	mu      sync.Mutex
	cgSlots slotPool
	levels  map[uint32]int32 // slot → level of its cgroup
	// slots are the watched cgroups' (by id), each with how many
	// counters share it: a cgroup has one slot in the programs' map.
	slots     map[uint64]*sharedSlot
	taskSlots slotPool
	taskOf    map[uint32]uint32 // watched tid → slot
}

// slotPool hands out the slots of a map of counters: those given back
// first, then ones never used.
type slotPool struct {
	free      []uint32
	next, max uint32
}

func (p *slotPool) get() (uint32, bool) {
	if n := len(p.free); n > 0 {
		slot := p.free[n-1]
		p.free = p.free[:n-1]
		return slot, true
	}
	if p.next < p.max {
		p.next++
		return p.next - 1, true
	}
	return 0, false
}

func (p *slotPool) put(slot uint32) { p.free = append(p.free, slot) }

type sharedSlot struct {
	slot  uint32
	users int
}

// NewActivity loads and attaches the programs; k (nil: a cache of their
// own) shares what the loads decode of the kernel's types.
func NewActivity(k *Kernel) (*Activity, error) {
	a := &Activity{levels: map[uint32]int32{}, slots: map[uint64]*sharedSlot{}, taskOf: map[uint32]uint32{},
		cgSlots: slotPool{max: activitySlots}, taskSlots: slotPool{max: taskSlots}}
	if err := loadActivityObjects(&a.objs, k.options()); err != nil {
		return nil, fmt.Errorf("loading activity counters: %w", err)
	}
	mem, err := a.objs.Counts.Memory()
	if err != nil {
		a.Close()
		return nil, fmt.Errorf("mapping activity counters: %w", err)
	}
	a.mem = mem
	if a.taskMem, err = a.objs.TaskCounts.Memory(); err != nil {
		a.Close()
		return nil, fmt.Errorf("mapping activity counters: %w", err)
	}
	for _, p := range []*ebpf.Program{a.objs.OnSwitch, a.objs.OnWakeup, a.objs.OnWakeupNew} {
		l, err := link.AttachTracing(link.TracingOptions{Program: p})
		if err != nil {
			a.Close()
			return nil, fmt.Errorf("attaching %v: %w", p, err)
		}
		a.links = append(a.links, l)
	}
	return a, nil
}

// Close detaches the programs and frees the maps.
func (a *Activity) Close() error {
	var errs []error
	for _, l := range a.links {
		errs = append(errs, l.Close())
	}
	a.links = nil
	a.mem, a.taskMem = nil, nil
	errs = append(errs, a.objs.Close())
	return errors.Join(errs...)
}

// ActivityCounter is one watched cgroup's count.
type ActivityCounter struct {
	a      *Activity
	slot   uint32
	id     uint64
	closed bool // under a.mu
}

// Watch starts counting the activity of the cgroup v2 directory dir.
func (a *Activity) Watch(dir string) (*ActivityCounter, error) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return nil, fmt.Errorf("activity: %w", err)
	}
	level, err := cgroupLevel(dir)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if sh := a.slots[st.Ino]; sh != nil {
		sh.users++
		return &ActivityCounter{a: a, slot: sh.slot, id: st.Ino}, nil
	}
	slot, ok := a.cgSlots.get()
	if !ok {
		return nil, fmt.Errorf("activity: %d cgroups watched already", activitySlots)
	}
	if err := a.objs.Watched.Put(st.Ino, slot); err != nil {
		a.cgSlots.put(slot)
		return nil, fmt.Errorf("activity: watching %s: %w", dir, err)
	}
	a.levels[slot] = level
	a.slots[st.Ino] = &sharedSlot{slot: slot, users: 1}
	if err := a.setMinLevel(); err != nil {
		return nil, err
	}
	return &ActivityCounter{a: a, slot: slot, id: st.Ino}, nil
}

// setMinLevel tells the programs the lowest level watched (a.mu held).
func (a *Activity) setMinLevel() error {
	lowest := int32(-1)
	for _, l := range a.levels {
		if lowest < 0 || l < lowest {
			lowest = l
		}
	}
	if err := a.objs.MinLevel.Set(lowest); err != nil {
		return fmt.Errorf("activity: %w", err)
	}
	return nil
}

// Count is the number of times a task of the cgroup was woken or switched
// in since the counter's slot was first used: only its changes mean
// anything.
func (c *ActivityCounter) Count() uint64 { return readCount(c.a.mem, c.slot) }

// readCount reads the counter at slot of a mapped array of counts (0 once
// the Activity is closed).
func readCount(mem *ebpf.Memory, slot uint32) uint64 {
	var b [8]byte
	if mem == nil {
		return 0
	}
	if _, err := mem.ReadAt(b[:], int64(slot)*8); err != nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b[:])
}

// Close stops counting the cgroup, once no other counter of it is open.
// Closing a counter twice closes it once.
func (c *ActivityCounter) Close() error {
	a := c.a
	a.mu.Lock()
	defer a.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	sh := a.slots[c.id]
	if sh == nil {
		return nil
	}
	if sh.users--; sh.users > 0 {
		return nil
	}
	delete(a.slots, c.id)
	delete(a.levels, c.slot)
	a.cgSlots.put(c.slot)
	err := a.objs.Watched.Delete(c.id)
	if errors.Is(err, ebpf.ErrKeyNotExist) {
		err = nil
	}
	return errors.Join(err, a.setMinLevel())
}

// cgroupLevel is how far dir lies below the root of its cgroup v2 mount:
// its level in the hierarchy, or less where the mount's root is not the
// hierarchy's (a cgroup namespace). Less only makes the programs look
// further up from tasks that are no node's.
func cgroupLevel(dir string) (int32, error) {
	level := int32(0)
	for p := filepath.Clean(dir); ; level++ {
		var fs unix.Statfs_t
		if err := unix.Statfs(p, &fs); err != nil {
			return 0, fmt.Errorf("activity: %w", err)
		}
		if fs.Type != unix.CGROUP2_SUPER_MAGIC {
			if level == 0 {
				return 0, fmt.Errorf("activity: %s is not a cgroup v2 directory", dir)
			}
			return level - 1, nil
		}
		parent := filepath.Dir(p)
		if parent == p {
			return level, nil
		}
		p = parent
	}
}

// TaskCounter is one watched task's count.
type TaskCounter struct {
	a      *Activity
	slot   uint32
	tid    uint32
	closed bool // under a.mu
}

// WatchTask starts counting the times the task tid (the kernel's thread
// id) was woken or switched in, while it is a task of a watched cgroup.
// A task is watched by one counter at a time.
func (a *Activity) WatchTask(tid int) (*TaskCounter, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := uint32(tid)
	if _, ok := a.taskOf[t]; ok {
		return nil, fmt.Errorf("activity: task %d watched already", tid)
	}
	slot, ok := a.taskSlots.get()
	if !ok {
		return nil, fmt.Errorf("activity: %d tasks watched already", taskSlots)
	}
	if err := a.objs.Tasks.Put(t, slot); err != nil {
		a.taskSlots.put(slot)
		return nil, fmt.Errorf("activity: watching task %d: %w", tid, err)
	}
	a.taskOf[t] = slot
	return &TaskCounter{a: a, slot: slot, tid: t}, nil
}

// Count is the number of times the task was woken or switched in since
// its slot was first used: only its changes mean anything.
func (c *TaskCounter) Count() uint64 { return readCount(c.a.taskMem, c.slot) }

// Close stops counting the task. Closing a counter twice closes it once.
func (c *TaskCounter) Close() error {
	a := c.a
	a.mu.Lock()
	defer a.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	delete(a.taskOf, c.tid)
	a.taskSlots.put(c.slot)
	err := a.objs.Tasks.Delete(c.tid)
	if errors.Is(err, ebpf.ErrKeyNotExist) {
		err = nil
	}
	return err
}
