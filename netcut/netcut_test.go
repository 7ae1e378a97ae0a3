package netcut

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// fakeFirewall records what a Set writes, as the lines of a log.
type fakeFirewall struct {
	log  []string
	fail string // a link, "a→b", whose write fails
}

func (f *fakeFirewall) Block(l Link[string], d Drop) error {
	return f.write(l, fmt.Sprintf("block %s→%s %v", l.From, l.To, d))
}

func (f *fakeFirewall) Unblock(l Link[string]) error {
	return f.write(l, fmt.Sprintf("unblock %s→%s", l.From, l.To))
}

func (f *fakeFirewall) write(l Link[string], line string) error {
	if f.fail == l.From+"→"+l.To {
		return errors.New("map full")
	}
	f.log = append(f.log, line)
	return nil
}

// TestLinks: a cut holds both ways of every pair of its sides; a one-way
// cut drops messages one way and handshakes the other.
func TestLinks(t *testing.T) {
	for _, tc := range []struct {
		name string
		cut  Cut[string]
		want []string
	}{
		{"both ways", Cut[string]{A: []string{"a"}, B: []string{"b", "c"}},
			[]string{"a→b all", "b→a all", "a→c all", "c→a all"}},
		{"one way", Cut[string]{A: []string{"a"}, B: []string{"b"}, OneWay: true},
			[]string{"a→b messages", "b→a handshakes"}},
		{"empty side", Cut[string]{A: []string{"a"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for l, d := range tc.cut.Links() {
				got = append(got, fmt.Sprintf("%s→%s %v", l.From, l.To, d))
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("links %q, want %q", got, tc.want)
			}
		})
	}
}

// TestSetAsks: what a Set says of the links its cuts hold.
func TestSetAsks(t *testing.T) {
	var s Set[string]
	if !s.Empty() || s.Stops("a", "b") || s.Between("a", "b") {
		t.Fatal("the zero Set holds something")
	}
	s.Put(Cut[string]{A: []string{"a"}, B: []string{"b"}, OneWay: true})
	for _, tc := range []struct {
		from, to       string
		stops, between bool
	}{
		{"a", "b", true, true},  // the cut way: messages dropped
		{"b", "a", false, true}, // the way back: only handshakes
		{"a", "c", false, false},
		{"c", "b", false, false},
	} {
		if got := s.Stops(tc.from, tc.to); got != tc.stops {
			t.Errorf("Stops(%s, %s) = %v, want %v", tc.from, tc.to, got, tc.stops)
		}
		if got := s.Between(tc.from, tc.to); got != tc.between {
			t.Errorf("Between(%s, %s) = %v, want %v", tc.from, tc.to, got, tc.between)
		}
	}
	if !s.Shares(Cut[string]{A: []string{"b"}, B: []string{"a", "c"}}) {
		t.Error("a cut across b–a shares no link with a→b")
	}
	if s.Shares(Cut[string]{A: []string{"c"}, B: []string{"b"}}) {
		t.Error("a cut c|b shares a link with a→b")
	}
	if !Of(Cut[string]{A: []string{"x"}, B: []string{"y"}}).Stops("y", "x") {
		t.Error("Of: a both-ways cut does not stop y→x")
	}
}

// TestSetFirewall: Put and Lift write the firewall where what a link drops
// changes, and only there: a link two cuts hold stays cut, dropping the
// stronger's, until both are lifted.
func TestSetFirewall(t *testing.T) {
	fw := &fakeFirewall{}
	s := NewSet[string](fw)
	oneway := Cut[string]{A: []string{"a"}, B: []string{"b"}, OneWay: true}
	part := Cut[string]{A: []string{"b"}, B: []string{"a", "c"}}
	step := func(what string, f func(Cut[string]) error, c Cut[string], want ...string) {
		t.Helper()
		fw.log = nil
		if err := f(c); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !slices.Equal(fw.log, want) {
			t.Fatalf("%s wrote %q, want %q", what, fw.log, want)
		}
	}
	step("putting the one-way cut", s.Put, oneway, "block a→b messages", "block b→a handshakes")
	step("putting the partition over it", s.Put, part, "block b→a all", "block a→b all", "block b→c all", "block c→b all")
	step("lifting the one-way cut", s.Lift, oneway)
	if !s.Stops("a", "b") || !s.Stops("b", "a") {
		t.Fatal("the partition's links are no longer cut")
	}
	step("lifting it again", s.Lift, oneway)
	step("lifting the partition", s.Lift, part, "unblock b→a", "unblock a→b", "unblock b→c", "unblock c→b")
	if !s.Empty() {
		t.Fatal("links left after every cut was lifted")
	}
	step("putting the partition back", s.Put, part, "block b→a all", "block a→b all", "block b→c all", "block c→b all")
	step("putting the one-way cut under it", s.Put, oneway)
	step("lifting the partition", s.Lift, part, "block b→a handshakes", "block a→b messages", "unblock b→c", "unblock c→b")
}

// TestSetFirewallError: a write that fails stops Put there, and the books
// hold no link the firewall lets through.
func TestSetFirewallError(t *testing.T) {
	fw := &fakeFirewall{fail: "b→a"}
	s := NewSet[string](fw)
	err := s.Put(Cut[string]{A: []string{"a"}, B: []string{"b", "c"}})
	if err == nil || err.Error() != "blocking b→a (all): map full" {
		t.Fatalf("Put: %v", err)
	}
	if !s.Stops("a", "b") || s.Stops("b", "a") || s.Between("a", "c") {
		t.Fatalf("after %q the books say a→b %v, b→a %v, a–c %v", fw.log, s.Stops("a", "b"), s.Stops("b", "a"), s.Between("a", "c"))
	}
}
