package spec

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"
)

// DiskPlan is what a spec allows of storage faults (faults.data, persist,
// max_stall, io_errors, io_calls, corruptions, names; docs/spec.md,
// "Storage faults"). It is plain data, and package faults plans with it as
// it is (faults.Plan.Disk); package disk keeps the books it acts on.
type DiskPlan struct {
	// Data are the nodes' data paths, as the spec writes them (templates
	// such as {{tmp}} expanded per node: DataPaths): the files and
	// directories under them are what a power cut, a corruption or a
	// failing disk acts on.
	Data []string
	// Persist are the ways a power cut may treat a node's unsynced
	// changes, one drawn per cut (PersistNone, PersistAll, PersistPrefix,
	// PersistSubset, PersistTorn: package disk's words; what each keeps is
	// documented there).
	Persist []string
	// MaxStall bounds how long a stalled fsync takes, in virtual time.
	MaxStall time.Duration
	// IOErrors are the errors an ioerror returns ("EIO", "ENOSPC").
	IOErrors []string
	// IOCalls are the calls an ioerror may fail ("write", "fsync", "read").
	IOCalls []string
	// Corruptions are how a corruption damages a file: CorruptFlip (one
	// bit flipped) and CorruptTail (its tail cut off), package disk's
	// words.
	Corruptions []string
	// Names says what makes a change of a name (a creation, a rename, an
	// unlink) durable: NamesPOSIX, an fsync of its directory;
	// NamesJournal, also an fsync of any data file after it (a journaling
	// file system such as ext4 commits every name change with it).
	Names string
}

// The storage faults' words, as a spec writes them. spec imports no
// runtime package, so it repeats the strings of package disk (Persist*,
// Corrupt*: what each does); engine's TestSpecVocabulary checks they
// agree. Names* are the spec's own: faults and the engine read them here.
const (
	PersistNone   = "none"
	PersistAll    = "all"
	PersistPrefix = "prefix"
	PersistSubset = "subset"
	PersistTorn   = "torn"
	CorruptFlip   = "flip"
	CorruptTail   = "tail"
	NamesPOSIX    = "posix"
	NamesJournal  = "journal"
)

// DefaultDiskPlan is a storage plan's defaults: data under each node's
// {{tmp}}, a power cut keeping none, a prefix or a subset of the unsynced
// changes, fsync stalls up to a second, EIO and ENOSPC on writes, fsyncs
// and reads, both corruptions, POSIX names.
func DefaultDiskPlan() DiskPlan {
	return DiskPlan{
		Data:        []string{"{{tmp}}"},
		Persist:     []string{PersistNone, PersistPrefix, PersistSubset},
		MaxStall:    time.Second,
		IOErrors:    []string{"EIO", "ENOSPC"},
		IOCalls:     []string{"write", "fsync", "read"},
		Corruptions: []string{CorruptFlip, CorruptTail},
		Names:       NamesPOSIX,
	}
}

// Storage reports whether the plan has storage faults.
func (p FaultPlan) Storage() bool {
	return slices.ContainsFunc(p.Kinds, func(k FaultKind) bool { return k.has(traitStorage) })
}

// StorageNode reports whether a storage fault may hit node: lockstep then
// keeps the books of its data files.
func (p FaultPlan) StorageNode(node string) bool {
	return p.Storage() && slices.Contains(p.Nodes, node)
}

// storageNames lists the storage faults' keywords (traitStorage) in the
// docs' order, for error messages.
func storageNames() string {
	var names []string
	for _, w := range faultKeywords {
		if w.traits&traitStorage != 0 {
			names = append(names, w.name)
		}
	}
	return strings.Join(names, ", ")
}

// diskPlanFields are the faults section's fields of storage faults.
var diskPlanFields = []field[*DiskPlan]{
	{"data", func(d *decoder, v ast.Node, path string, plan *DiskPlan) error {
		vs, err := d.strings(v, path)
		if err != nil {
			return err
		}
		if len(vs) == 0 {
			return d.errf(v, path, "must name at least one path (default [\"{{tmp}}\"])")
		}
		plan.Data = vs
		return nil
	}},
	{"persist", oneOf(func(p *DiskPlan) *[]string { return &p.Persist }, PersistNone, PersistAll, PersistPrefix, PersistSubset, PersistTorn)},
	{"max_stall", durationField(func(p *DiskPlan) *time.Duration { return &p.MaxStall }, false, maxVirtualTime)},
	{"io_errors", oneOf(func(p *DiskPlan) *[]string { return &p.IOErrors }, "EIO", "ENOSPC")},
	{"io_calls", oneOf(func(p *DiskPlan) *[]string { return &p.IOCalls }, "write", "fsync", "read")},
	{"corruptions", oneOf(func(p *DiskPlan) *[]string { return &p.Corruptions }, CorruptFlip, CorruptTail)},
	{"names", func(d *decoder, v ast.Node, path string, plan *DiskPlan) error {
		str, err := d.str(v, path)
		if err != nil {
			return err
		}
		if str != NamesPOSIX && str != NamesJournal {
			return d.errf(v, path, "unknown value %q (want posix or journal)", str)
		}
		plan.Names = str
		return nil
	}},
}

// diskFields are the keys of diskPlanFields, in its order.
var diskFields = func() []string {
	keys := make([]string, len(diskPlanFields))
	for i, f := range diskPlanFields {
		keys[i] = f.key
	}
	return keys
}()

// oneOf sets the list at(t) points at to some of allowed, each once.
func oneOf[T any](at func(T) *[]string, allowed ...string) setter[T] {
	return func(d *decoder, v ast.Node, path string, t T) error {
		vs, err := d.strings(v, path)
		if err != nil {
			return err
		}
		if len(vs) == 0 {
			return d.errf(v, path, "must name at least one of %s", strings.Join(allowed, ", "))
		}
		var out []string
		for _, s := range vs {
			if !slices.Contains(allowed, s) {
				return d.errf(v, path, "unknown value %q (want %s)", s, strings.Join(allowed, ", "))
			}
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
		*at(t) = out
		return nil
	}
}

// checkDisk checks the plan's storage faults once the section is read:
// storage fields need a storage fault, a corruption needs a node down (a
// crash or a power cut before it, within the budget), and the data paths
// must render to absolute paths for every node.
func (d *decoder) checkDisk(n, kinds ast.Node, diskNodes map[string]ast.Node, plan FaultPlan, s *Spec) error {
	if !plan.Storage() {
		for _, k := range diskFields {
			if v := diskNodes[k]; v != nil {
				return d.errf(v, "faults."+k, "no storage fault (%s) in faults.kinds", storageNames())
			}
		}
		return nil
	}
	if slices.Contains(plan.Kinds, FaultCorrupt) {
		if !slices.Contains(plan.Kinds, FaultCrash) && !slices.Contains(plan.Kinds, FaultPower) {
			return d.errf(kinds, "faults.kinds", "corrupt strikes a node that is down: add crash or power")
		}
		if plan.Budget < 2 {
			return d.errf(kinds, "faults.kinds", "corrupt needs faults.budget of 2 or more (a crash or power cut first; the budget is %d)", plan.Budget)
		}
	}
	at := diskNodes["data"]
	if at == nil {
		at = n
	}
	v := TemplateVars{TrialDir: "/run/lockstep/trial", Seed: 1, Addrs: map[string]netip.Addr{}}
	for _, nd := range s.Nodes {
		v.Addrs[nd.Name] = netip.IPv4Unspecified()
	}
	bud := newBudget() // one for every node's: see validateTemplates
	for _, name := range plan.Nodes {
		v.NodeDir = "/run/lockstep/trial/" + name
		paths, err := s.expandAll(name, v, plan.Disk.Data, bud)
		if err != nil {
			return d.errf(at, "faults.data", "node %s: %v", name, err)
		}
		for _, p := range paths {
			if !filepath.IsAbs(p) {
				return d.errf(at, "faults.data", "node %s: %q is not an absolute path", name, p)
			}
		}
	}
	return nil
}

// DataPaths are a node's data paths (faults.data), as the node sees them,
// clean; nil when no storage fault may hit it.
func (s *Spec) DataPaths(node string, v TemplateVars) ([]string, error) {
	if !s.Faults.StorageNode(node) {
		return nil, nil
	}
	paths, err := s.expandAll(node, v, s.Faults.Disk.Data, newBudget())
	if err != nil {
		return nil, fmt.Errorf("faults.data of node %s: %w", node, err)
	}
	for i, p := range paths {
		paths[i] = filepath.Clean(p)
	}
	return paths, nil
}
