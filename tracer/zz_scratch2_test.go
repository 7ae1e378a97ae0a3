package tracer

import (
	"os"
	"testing"
	"time"
)

func TestScratchRTT(t *testing.T) {
	if os.Getenv("RTT") == "" {
		t.Skip()
	}
	h := newHarness(t, Options{Capture: os.Getenv("NOCAP") == ""})
	h.launch("server", "/tmp/smoke/pp", "server", "7444")
	h.launch("client", "/tmp/smoke/pp", "client", "7444", os.Getenv("RTT"))
	start := time.Now()
	res := h.run(nil, nil)
	el := time.Since(start)
	st := h.tr.Stats()
	n := float64(len(res.ops))
	t.Logf("%d ops in %v: %.1f us/op; handle %.1f (site %.1f) settle %.1f decide %.1f release %.1f us/op; stops %d\n%s",
		len(res.ops), el, float64(el.Microseconds())/n, float64(st.HandleTime.Microseconds())/n, float64(st.SiteTime.Microseconds())/n,
		float64(st.SettleTime.Microseconds())/n, float64(st.DecideTime.Microseconds())/n, float64(st.ReleaseTime.Microseconds())/n, st.Stops, h.output("client"))
}
