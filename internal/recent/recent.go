package recent

import "cmp"

// Window counts the kinds of the last Size things added.
type Window[K cmp.Ordered] struct {
	size   int
	last   []K // a ring, next at i once full
	i      int
	counts map[K]int
}

// New is a window of the last size things.
func New[K cmp.Ordered](size int) *Window[K] {
	return &Window[K]{size: size, counts: map[K]int{}}
}

// Add counts k, and forgets the oldest once the window is full.
func (w *Window[K]) Add(k K) {
	if len(w.last) < w.size {
		w.last = append(w.last, k)
	} else {
		old := w.last[w.i]
		if w.counts[old]--; w.counts[old] == 0 {
			delete(w.counts, old)
		}
		w.last[w.i] = k
		w.i = (w.i + 1) % w.size
	}
	w.counts[k]++
}

// Len is how many things the window holds.
func (w *Window[K]) Len() int { return len(w.last) }

// Count is how many of them were k.
func (w *Window[K]) Count(k K) int { return w.counts[k] }

// Commonest is the kind counted most often, ties to the smaller, so that
// the choice does not depend on map order; the zero K when empty.
func (w *Window[K]) Commonest() K {
	var best K
	n := -1
	for k, c := range w.counts {
		if c > n || c == n && k < best {
			best, n = k, c
		}
	}
	return best
}
