package faults

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/sched"
)

// A link's object names it and parses back to it; a message goes across
// it from either end to the other, and only so.
func TestLinkEnds(t *testing.T) {
	tests := []struct {
		object   string
		from, to string
		across   bool
	}{
		{"link:s1|s2", "s1", "s2", true},
		{"link:s1|s2", "s2", "s1", true},
		{"link:s1|s2", "s1", "s3", false},
		{"link:s1,client|s3", "client", "s3", true},
		{"link:s1,client|s3", "s3", "s1", true},
		{"link:s1,client|s3", "s1", "client", false},
		{"link:s1,client|s3", "s3", "", false},
	}
	for _, tt := range tests {
		l := parseLink(tt.object)
		if l.object() != tt.object || "link:"+l.String() != tt.object {
			t.Errorf("%s parses to %v, named %s", tt.object, l, l.object())
		}
		if got := l.across(tt.from, tt.to); got != tt.across {
			t.Errorf("%s: across(%q, %q) = %v, want %v", tt.object, tt.from, tt.to, got, tt.across)
		}
	}
}

// A link is drawn from the node's unit towards a unit whose link with it
// is not in force; with none left it is not possible.
func TestLinkDraw(t *testing.T) {
	p := plan(Slow)
	p.Groups = [][]string{{"s1", "client"}}
	in := New(p, nodes, 1)
	links := heldLinks[*slowLink]{}
	drawn := map[string]bool{}
	for range 50 {
		drawn[links.draw(in, "client").String()] = true
	}
	if want := map[string]bool{"s1,client|s2": true, "s1,client|s3": true}; !maps.Equal(drawn, want) {
		t.Fatalf("drew %v, want %v", drawn, want)
	}
	links["link:s1,client|s2"] = &slowLink{}
	for range 20 {
		if l := links.draw(in, "s1"); l.String() != "s1,client|s3" {
			t.Fatalf("drew %v beside the link in force", l)
		}
	}
	if !links.possible(p, "s1") {
		t.Fatal("s1|s3 not possible")
	}
	links["link:s1,client|s3"] = &slowLink{}
	if links.possible(p, "client") {
		t.Fatal("possible with every link of the unit in force")
	}
	// A link is one link whichever way it was drawn: s2|s1,client is
	// s1,client|s2, so s2 draws s2|s3 alone, and s3 nothing.
	for range 20 {
		if l := links.draw(in, "s2"); l.String() != "s2|s3" {
			t.Fatalf("drew %v beside the link in force", l)
		}
	}
	links["link:s2|s3"] = &slowLink{}
	if links.possible(p, "s3") {
		t.Fatal("s3 possible with both its links in force, drawn from the other end")
	}
	delete(links, "link:s1,client|s2")
	links["link:s2|s1,client"] = &slowLink{}
	if links.possible(p, "client") || !links.taken([]string{"s1", "client"}, []string{"s2"}) {
		t.Fatal("s2|s1,client not taken as s1,client|s2")
	}
}

// holds asks the kind of every link in force that an op goes across, and
// of no other, and drops the links whose while is over.
func TestLinkHolds(t *testing.T) {
	links := heldLinks[*slowLink]{}
	for _, o := range []string{"link:s1|s2", "link:s2|s1", "link:s2|s3"} {
		links[o] = &slowLink{heldLink: heldLink{linkEnds: parseLink(o), end: time.Second}}
	}
	var asked []string
	hold := func(l *slowLink) bool {
		asked = append(asked, l.String())
		return l.String() == "s2|s1"
	}
	if !links.holds("s1", "s2", 0, hold) {
		t.Fatal("s1>s2 not held")
	}
	if slices.Sort(asked); !slices.Equal(asked, []string{"s1|s2", "s2|s1"}) {
		t.Fatalf("asked %v", asked)
	}
	asked = nil
	if links.holds("s3", "s1", 0, hold) || len(asked) != 0 {
		t.Fatalf("s3>s1 held or asked of %v", asked)
	}
	if links.holds("s1", "s2", time.Second, hold) || len(links) != 0 {
		t.Fatalf("held at the links' end, %d left", len(links))
	}
}

// A delivery crosses from its sender to its receiver, a blocking connect
// from its node to the node it dials; no other op crosses, nor does a
// non-blocking connect.
func TestOpEnds(t *testing.T) {
	nonBlocking := connect("s1", "s2")
	nonBlocking.NonBlocking = true
	tests := []struct {
		op             *sched.Op
		delivery, dial bool
		from, to       string
	}{
		{deliver("s1", "s2"), true, false, "s1", "s2"},
		{deliver("client", "s3"), true, false, "client", "s3"},
		{connect("s2", "s1"), false, true, "s2", "s1"},
		{nonBlocking, false, false, "", ""},
		{&sched.Op{Kind: sched.Send, Node: "s1", Conn: "10.0.0.1:40000>10.0.0.2:7000", Peer: "10.0.0.2:7000"}, false, false, "", ""},
		{&sched.Op{Kind: sched.Accept, Node: "s1", Peer: "10.0.0.2:7000"}, false, false, "", ""},
	}
	for _, tt := range tests {
		from, to, ok := deliveryEnds(tt.op, nodeOf)
		if !ok {
			from, to, ok = connectEnds(tt.op, nodeOf)
		} else if _, _, dial := connectEnds(tt.op, nodeOf); dial {
			t.Errorf("%v: a delivery and a connect", tt.op.Kind)
		}
		if _, _, d := deliveryEnds(tt.op, nodeOf); d != tt.delivery || ok != (tt.delivery || tt.dial) || from != tt.from || to != tt.to {
			t.Errorf("%v %s%s: %q>%q %v, want %q>%q", tt.op.Kind, tt.op.Conn, tt.op.Peer, from, to, ok, tt.from, tt.to)
		}
	}
}
