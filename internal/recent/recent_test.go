package recent

import "testing"

// Ties go to the smaller kind, whatever the map order; only the last size
// things count.
func TestWindow(t *testing.T) {
	for _, tc := range []struct {
		name  string
		size  int
		added []string
		want  string
		count map[string]int
	}{
		{"tie to the smaller", 10, []string{"b", "a", "b", "a", "c"}, "a", map[string]int{"a": 2, "b": 2, "c": 1}},
		{"most", 10, []string{"b", "a", "b", "b"}, "b", map[string]int{"a": 1, "b": 3}},
		{"one", 10, []string{"x"}, "x", map[string]int{"x": 1}},
		{"only the last", 3, []string{"a", "a", "a", "b", "b"}, "b", map[string]int{"a": 1, "b": 2}},
		{"empty", 3, nil, "", map[string]int{"a": 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 20 {
				w := New[string](tc.size)
				for _, k := range tc.added {
					w.Add(k)
				}
				if got := w.Commonest(); got != tc.want {
					t.Fatalf("Commonest() = %q, want %q", got, tc.want)
				}
				for k, n := range tc.count {
					if got := w.Count(k); got != n {
						t.Fatalf("Count(%q) = %d, want %d", k, got, n)
					}
				}
				if want := min(len(tc.added), tc.size); w.Len() != want {
					t.Fatalf("Len() = %d, want %d", w.Len(), want)
				}
			}
		})
	}
}
