package tracer

import (
	"os"
	"testing"
	"time"
)

func TestScratchClock(t *testing.T) {
	prog := os.Getenv("PROG")
	if prog == "" {
		t.Skip()
	}
	h := newHarness(t, Options{Clock: &testClock{}})
	h.launch("n", prog)
	start := time.Now()
	res := h.run(nil, nil)
	t.Logf("real %v, ops %d, stats %+v\n%s", time.Since(start), len(res.ops), h.tr.Stats(), h.output("n"))
}
