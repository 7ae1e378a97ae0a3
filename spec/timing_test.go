package spec

import (
	"testing"
	"time"
)

// The placement, clock-direction and livelock fields decode to what
// docs/spec.md says, defaults included.
func TestPlacementFields(t *testing.T) {
	const nodes = `name: t
nodes:
  - name: s1
    command: ["/bin/true"]
  - name: c1
    role: client
    command: ["/bin/true"]
limits: {virtual_time: 60s}
`
	type want struct {
		spread      bool
		from, until time.Duration // the delay window
		dir         ClockDirection
		keep        bool
		livelock    int
		by, delayBy SpreadBy
	}
	for _, tt := range []struct {
		name string
		yaml string
		want want
	}{
		{"defaults: no window, no spread", ``, want{livelock: DefaultLivelockSteps}},
		{"faults without until are not spread", "faults: {kinds: [crash]}\n", want{livelock: DefaultLivelockSteps}},
		{"faults with until are spread, delays up to it", "faults: {kinds: [crash], from: 1s, until: 5s}\n", want{spread: true, until: 5 * time.Second, livelock: DefaultLivelockSteps}},
		{"spread: false keeps delays unspread", "faults: {kinds: [crash], until: 5s, spread: false}\n", want{livelock: DefaultLivelockSteps}},
		{"an explicit delay window wins", "faults: {kinds: [crash], until: 5s}\ntime: {from: 2s, until: 3s}\n", want{spread: true, from: 2 * time.Second, until: 3 * time.Second, livelock: DefaultLivelockSteps}},
		{"time.from alone gates without spreading", "time: {from: 2s}\n", want{from: 2 * time.Second, livelock: DefaultLivelockSteps}},
		{"clock forward, kept", "faults: {kinds: [clock], clock_direction: forward, undo_clock: false}\n", want{dir: ClockForward, keep: true, livelock: DefaultLivelockSteps}},
		{"clock backward", "faults: {kinds: [clock], clock_direction: backward, undo_clock: true}\n", want{dir: ClockBackward, livelock: DefaultLivelockSteps}},
		{"faults spread over steps", "faults: {kinds: [crash], until: 5s, spread: steps}\n", want{spread: true, until: 5 * time.Second, livelock: DefaultLivelockSteps, by: SpreadSteps}},
		{"faults spread over time, delays over steps", "faults: {kinds: [crash], until: 5s, spread: time}\ntime: {spread: steps}\n", want{spread: true, until: 5 * time.Second, livelock: DefaultLivelockSteps, by: SpreadTime, delayBy: SpreadSteps}},
		{"time.spread: false keeps delays unspread", "faults: {kinds: [crash], until: 5s}\ntime: {spread: false}\n", want{spread: true, livelock: DefaultLivelockSteps}},
		{"livelock bound", "limits: {virtual_time: 60s, livelock_steps: 500}\n", want{livelock: 500}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			y := nodes + tt.yaml
			if tt.name == "livelock bound" {
				y = nodes[:len(nodes)-len("limits: {virtual_time: 60s}\n")] + tt.yaml
			}
			s, err := Parse("s.yaml", []byte(y))
			if err != nil {
				t.Fatal(err)
			}
			got := want{s.Faults.Spread, s.Time.From, s.Time.Until, s.Faults.ClockDirection, s.Faults.KeepClock, s.Limits.LivelockSteps, s.Faults.By, s.Time.By}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
