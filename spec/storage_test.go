package spec

import (
	"slices"
	"testing"
	"time"
)

// TestSpecStorageFaults: the storage fault kinds and their fields decode
// into the plan, with the defaults where the spec says nothing, and a
// node's data paths render from their templates.
func TestSpecStorageFaults(t *testing.T) {
	const nodes = `name: t
nodes:
  - name: s1
    command: ["/bin/true"]
  - name: c
    role: client
    command: ["/bin/true"]
faults:
`
	def := DefaultDiskPlan()
	for _, tc := range []struct {
		name, faults string
		kinds        []FaultKind
		disk         DiskPlan
		data         []string // s1's, in trial /run/lockstep/trial
	}{
		{"defaults", "  kinds: [power, ioerror, stall]\n", []FaultKind{FaultPower, FaultIOError, FaultStall}, def, []string{"/run/lockstep/trial/s1"}},
		{"all fields", "  kinds: [power, corrupt]\n  budget: 2\n  data: [\"{{tmp}}/db\", \"/var/lib/{{node}}/\"]\n  persist: [prefix]\n  max_stall: 30ms\n  io_errors: [EIO]\n  io_calls: [fsync]\n  corruptions: [flip]\n  names: journal\n",
			[]FaultKind{FaultPower, FaultCorrupt},
			DiskPlan{Data: []string{"{{tmp}}/db", "/var/lib/{{node}}/"}, Persist: []string{"prefix"}, MaxStall: 30 * time.Millisecond, IOErrors: []string{"EIO"}, IOCalls: []string{"fsync"}, Corruptions: []string{"flip"}, Names: "journal"},
			[]string{"/run/lockstep/trial/s1/db", "/var/lib/s1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse("s.yaml", []byte(nodes+tc.faults))
			if err != nil {
				t.Fatal(err)
			}
			p := s.Faults
			d := p.Disk
			if !slices.Equal(p.Kinds, tc.kinds) || !slices.Equal(d.Data, tc.disk.Data) || !slices.Equal(d.Persist, tc.disk.Persist) || d.MaxStall != tc.disk.MaxStall ||
				!slices.Equal(d.IOErrors, tc.disk.IOErrors) || !slices.Equal(d.IOCalls, tc.disk.IOCalls) || !slices.Equal(d.Corruptions, tc.disk.Corruptions) || d.Names != tc.disk.Names {
				t.Errorf("kinds %v disk %+v, want %v %+v", p.Kinds, d, tc.kinds, tc.disk)
			}
			got, err := s.DataPaths("s1", TemplateVars{TrialDir: "/run/lockstep/trial", NodeDir: "/run/lockstep/trial/s1"})
			if err != nil || !slices.Equal(got, tc.data) {
				t.Errorf("data paths %q, %v; want %q", got, err, tc.data)
			}
			if got, _ := s.DataPaths("c", TemplateVars{NodeDir: "/x"}); got != nil {
				t.Errorf("a client has data paths %q", got)
			}
		})
	}
}
