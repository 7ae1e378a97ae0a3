package spec

import (
	"strings"
	"testing"
)

// TestHoldMatch: faults.hold decodes into the plan's patterns and
// direction, and bad ones are refused naming the field.
func TestHoldMatch(t *testing.T) {
	const nodes = `name: t
nodes:
  - name: s1
    command: ["/bin/true"]
  - name: s2
    command: ["/bin/true"]
  - name: c
    role: client
    command: ["/bin/true"]
faults:
  kinds: [hold]
`
	s, err := Parse("s.yaml", []byte(nodes+`  hold:
    direction: to
    match:
      - prefix: '\x01'
      - {prefix: '\x00', lacks: '\xb1LeaderCommitIndex\x00'}
      - contains: 'GET \\ '
      - kind: '\x01{Addr:s Candidate:s'
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []BytePattern{
		{Prefix: []byte{1}},
		{Prefix: []byte{0}, Lacks: []byte("\xb1LeaderCommitIndex\x00")},
		{Contains: []byte(`GET \ `)},
		{Kind: []byte("\x01{Addr:s Candidate:s")},
	}
	p := s.Faults
	if p.HoldDirection != "to" || len(p.HoldMatch) != len(want) {
		t.Fatalf("direction %q, %d patterns", p.HoldDirection, len(p.HoldMatch))
	}
	for i := range want {
		if string(p.HoldMatch[i].Prefix) != string(want[i].Prefix) || string(p.HoldMatch[i].Contains) != string(want[i].Contains) || string(p.HoldMatch[i].Lacks) != string(want[i].Lacks) || string(p.HoldMatch[i].Kind) != string(want[i].Kind) {
			t.Errorf("pattern %d: %+v, want %+v", i, p.HoldMatch[i], want[i])
		}
	}
	for _, tc := range []struct{ name, hold, want string }{
		{"bad escape", "    match: [{prefix: '\\x1'}]\n", `faults.hold.match[0].prefix: bad escape`},
		{"not ascii", "    match: [{prefix: \"\\xb1\"}]\n", `faults.hold.match[0].prefix: byte 0xc2 is not printable ASCII`},
		{"empty pattern", "    match: [{}]\n", `faults.hold.match[0]: needs prefix, contains, lacks or kind`},
		{"not a list", "    match: {prefix: a}\n", `faults.hold.match: must be a list of patterns`},
		{"no match", "    direction: to\n", `faults.hold.match: missing`},
		{"direction", "    match: [{prefix: a}]\n    direction: both\n", `faults.hold.direction: unknown direction "both"`},
		{"unknown field", "    match: [{prefix: a, suffix: b}]\n", `faults.hold.match[0].suffix: unknown field`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("s.yaml", []byte(nodes+"  hold:\n"+tc.hold))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	for in, want := range map[string]string{`a\\b`: `a\b`, `\x00\xff`: "\x00\xff", `GET /`: "GET /"} {
		got, err := parseBytes(in)
		if err != nil || string(got) != want {
			t.Errorf("parseBytes(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{`\x0`, `\q`, `\xzz`, "tab\there", "é"} {
		if _, err := parseBytes(in); err == nil {
			t.Errorf("parseBytes(%q) accepted", in)
		}
	}
	_, err = Parse("s.yaml", []byte(strings.Replace(nodes, "[hold]", "[partition]", 1)+"  hold:\n    match: [{prefix: a}]\n"))
	if err == nil || !strings.Contains(err.Error(), "faults.kinds has no hold") {
		t.Fatalf("hold without the hold kind: %v", err)
	}
}
