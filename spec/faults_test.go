package spec

import (
	"slices"
	"testing"
	"time"
)

// TestSpecNetworkFaults: the network fault kinds and their fields decode
// into the plan.
func TestSpecNetworkFaults(t *testing.T) {
	const nodes = `name: t
nodes:
  - name: s1
    command: ["/bin/true"]
  - name: s2
    command: ["/bin/true"]
  - name: s3
    command: ["/bin/true"]
  - name: c
    role: client
    command: ["/bin/true"]
faults:
`
	for _, tc := range []struct {
		name, faults string
		kinds        []FaultKind
		shapes       []string
		maxHold      time.Duration
		probe        []string
		follow       bool
	}{
		{"oneway", "  kinds: [oneway]\n", []FaultKind{FaultOneWay}, nil, time.Second, nil, false},
		{"link", "  kinds: [link]\n", []FaultKind{FaultLink}, nil, time.Second, nil, false},
		{"bipartition", "  kinds: [bipartition]\n", []FaultKind{FaultBipartition}, []string{"isolate", "minority", "bridge"}, time.Second, nil, false},
		{"bridge", "  kinds: [bridge]\n", []FaultKind{FaultBipartition}, []string{"bridge"}, time.Second, nil, false},
		{"bridge and bipartition", "  kinds: [bridge, bipartition]\n", []FaultKind{FaultBipartition}, []string{"isolate", "minority", "bridge"}, time.Second, nil, false},
		{"hold", "  kinds: [hold]\n  max_hold: 300ms\n", []FaultKind{FaultHold}, nil, 300 * time.Millisecond, nil, false},
		{"probe", "  kinds: [crash, link]\n  target:\n    probe: [/bin/sh, -c, \"echo s2\"]\n", []FaultKind{FaultCrash, FaultLink}, nil, time.Second, []string{"/bin/sh", "-c", "echo s2"}, false},
		{"follow", "  kinds: [partition]\n  groups: follow\n", []FaultKind{FaultPartition}, nil, time.Second, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse("s.yaml", []byte(nodes+tc.faults))
			if err != nil {
				t.Fatal(err)
			}
			p := s.Faults
			if !slices.Equal(p.Kinds, tc.kinds) || !slices.Equal(p.Shapes, tc.shapes) || p.MaxHold != tc.maxHold || !slices.Equal(p.Probe, tc.probe) || p.Follow != tc.follow {
				t.Errorf("kinds %v shapes %v max_hold %v probe %q follow %v", p.Kinds, p.Shapes, p.MaxHold, p.Probe, p.Follow)
			}
		})
	}
}
