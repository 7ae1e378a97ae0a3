package conflict

import (
	"slices"
	"testing"
)

// TestRaces: each op's nearest race with every other lane that touched
// its object concurrently, named once, A before B; two threads' sends on
// one connection race (the order of their bytes) though Analyze does not
// mark them.
func TestRaces(t *testing.T) {
	for _, tc := range []struct {
		name  string
		trial *trial
		want  []string // "A<B"
	}{
		{
			// Two clients' deliveries race for the server's inbox; the
			// nearest race of the second is the first, not the earlier
			// connects.
			name: "two clients one server",
			trial: newTrial().
				op("sa", "a/0/t0", "send", "", "a>s").
				op("sb", "b/0/t0", "send", "", "b>s").
				op("da", "a/0/t0", "deliver", "inbox:s", "a>s", "sa").
				op("db", "b/0/t0", "deliver", "inbox:s", "b>s", "sb"),
			want: []string{"da<db"},
		},
		{
			// A subscribing thread and a publishing thread write to one
			// subscriber's connection: their sends race; one thread's two
			// sends do not.
			name: "two threads write one connection",
			trial: newTrial().
				op("ack", "s/0/t1", "send", "", "s>c").
				op("ret", "s/0/t1", "send", "", "s>c").
				op("msg", "s/0/t2", "send", "", "s>c").
				op("other", "s/0/t2", "send", "", "s>d"),
			want: []string{"ret<msg"},
		},
		{
			// A send its thread made after reading what the other thread
			// sent is ordered after it: no race.
			name: "ordered sends",
			trial: newTrial().
				op("s1", "s/0/t1", "send", "", "s>c").
				op("d1", "s/0/t1", "deliver", "inbox:c", "s>c", "s1").
				op("r1", "c/0/t0", "recv", "inbox:c", "s>c", "d1").
				op("s2", "c/0/t0", "send", "", "c>s").
				op("d2", "c/0/t0", "deliver", "inbox:s", "c>s", "s2").
				op("r2", "s/0/t2", "recv", "inbox:s", "c>s", "d2").
				op("s3", "s/0/t2", "send", "", "s>c"),
		},
		{
			// A recv reads its connection before bytes arrive on it.
			name: "recv before a delivery",
			trial: newTrial().
				op("sa", "a/0/t0", "send", "", "a>s").
				op("r1", "s/0/t0", "recv", "inbox:s", "a>s").
				op("da", "a/0/t0", "deliver", "inbox:s", "a>s", "sa"),
			want: []string{"r1<da"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := map[int]string{}
			for n, id := range tc.trial.ids {
				name[int(id)-1] = n
			}
			var got []string
			for _, r := range Races(tc.trial.recs) {
				if r.A >= r.B {
					t.Errorf("race %v: A not before B", r)
				}
				got = append(got, name[r.A]+"<"+name[r.B])
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("races %v, want %v", got, tc.want)
			}
			if tc.name == "two threads write one connection" {
				a := Analyze(tc.trial.recs, DefaultScheme)
				if c := tc.trial.conflicting(a); len(c) != 0 {
					t.Errorf("Analyze marks %v: the history must not learn sends' races", keys(c))
				}
			}
		})
	}
}
