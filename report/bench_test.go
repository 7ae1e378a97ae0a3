package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFewerTrials(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cells []BenchCell
		want  string
	}{
		{"uniform", []BenchCell{{Bug: "a", Trials: 1000}, {Bug: "b", Trials: 1000}}, ""},
		{"one bug short", []BenchCell{{Bug: "a", Trials: 1000}, {Bug: "b", Trials: 100}, {Bug: "b", Trials: 200}}, " (fewer for b: 100)"},
		{"two bugs short", []BenchCell{{Bug: "a", Trials: 10}, {Bug: "b", Trials: 1000}, {Bug: "c", Trials: 100}}, " (fewer for a: 10, c: 100)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fewerTrials(tc.cells, []string{"a", "b", "c"}, 1000); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestGeomean(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cells []BenchCell
		want  float64
	}{
		{"none", nil, 0},
		{"equal", []BenchCell{{Trials: 100, Failures: 10}, {Trials: 100, Failures: 10}}, 0.1},
		{"product", []BenchCell{{Trials: 100, Failures: 40}, {Trials: 100, Failures: 10}}, 0.2},
		// A cell with no hit counts as 1/(2N).
		{"miss", []BenchCell{{Trials: 100, Failures: 0}, {Trials: 100, Failures: 50}}, 0.05},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := geomean(tc.cells); got < tc.want-1e-9 || got > tc.want+1e-9 {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

var benchCells = []BenchCell{
	{Bug: "locks-1", Strategy: "pos", Trials: 100, Failures: 8, FirstFailure: 11, PerTrial: 400 * time.Millisecond},
	{Bug: "locks-1", Strategy: "pos+", Trials: 100, Failures: 10, FirstFailure: 3, PerTrial: 600 * time.Millisecond},
	{Bug: "ms-1", Strategy: "pos", Trials: 100, Failures: 0, FirstFailure: -1, PerTrial: 200 * time.Millisecond},
	{Bug: "ms-1", Strategy: "pos+", Trials: 50, Failures: 5, FirstFailure: 0, PerTrial: 200 * time.Millisecond},
}

// TestBenchTable pins the markdown table: 0* for no hit, geomeans with a
// miss counted as 1/(2N), the ratio to POS+, trials to first failure, time
// per trial and the improvement line.
func TestBenchTable(t *testing.T) {
	want := "Hit ratio (failing trials / trials), 100 trials per cell (fewer for ms-1: 50); `0*` = no failure found; native = plain runs without lockstep.\n\n" +
		`| bug | pos | pos+ |
|---|---|---|
| locks-1 | 0.0800 | 0.1000 |
| ms-1 | 0* | 0.1000 |
| **geomean** | 0.0200 | 0.1000 |
| ratio to POS+ | 0.20 | 1.00 |
| mean trials to first failure | 12.0 | 2.5 |
| real time per trial | 300ms | 400ms |

Improvement from conflict analysis (geomean): pos+ over pos: +400.0%
`
	var b bytes.Buffer
	writeBenchTable(&b, benchCells, []string{"pos", "pos+"}, 100)
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	WriteBenchMarkdown(&b, benchCells, []string{"pos", "pos+"}, 100)
	if first, rest, _ := strings.Cut(b.String(), "\n\n"); !strings.HasPrefix(first, "Measured ") || rest != want {
		t.Fatalf("WriteBenchMarkdown:\n%s", b.String())
	}
}

// TestMergeBenchCSV: the CSV written is read back; a later file's cell
// replaces an earlier one in place, new cells and strategies are added in
// order.
func TestMergeBenchCSV(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, cells []BenchCell) string {
		var b bytes.Buffer
		if err := WriteBenchCSV(&b, cells); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := write("a.csv", benchCells)
	rerun := BenchCell{Bug: "ms-1", Strategy: "pos", Trials: 1000, Failures: 3, FirstFailure: 99, PerTrial: 250 * time.Millisecond}
	extra := BenchCell{Bug: "ra-1", Strategy: "random", Trials: 10, Failures: 1, FirstFailure: 4, PerTrial: time.Second}
	b := write("b.csv", []BenchCell{rerun, extra})
	got, err := MergeBenchCSV([]string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	want := []BenchCell{benchCells[0], benchCells[1], rerun, benchCells[3], extra}
	if len(got.Cells) != len(want) {
		t.Fatalf("cells %+v", got.Cells)
	}
	for i := range want {
		if got.Cells[i] != want[i] {
			t.Errorf("cell %d: got %+v, want %+v", i, got.Cells[i], want[i])
		}
	}
	if s := strings.Join(got.Strategies, ","); s != "pos,pos+,random" || got.Trials != 1000 {
		t.Errorf("strategies %q, trials %d", s, got.Trials)
	}

	for _, tc := range []struct{ name, text, want string }{
		{"not csv", "hello\n", "not a lockstep bench table.csv"},
		{"empty", "", "not a lockstep bench table.csv"},
		{"short rows", "bug,strategy,trials,failures\nx,pos,1,0\n", ":2: want 7 fields, got 4"},
		{"ragged", "bug,strategy,trials,failures,hit_ratio,first_failure,ms_per_trial\nx,pos,1,0\n", "not a lockstep bench table.csv"},
		{"bad number", "bug,strategy,trials,failures,hit_ratio,first_failure,ms_per_trial\nx,pos,ten,0,0,-1,1.0\n", ":2: expected integer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".csv")
			os.WriteFile(p, []byte(tc.text), 0o644)
			if _, err := MergeBenchCSV([]string{p}); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
				t.Fatalf("error %v, want %q naming %s", err, tc.want, p)
			}
		})
	}
	if _, err := MergeBenchCSV([]string{filepath.Join(dir, "missing.csv")}); err == nil {
		t.Fatal("a missing file is no error")
	}
}

// TestBenchTableUnmeasured: a cell no campaign measured shows `–` and is
// left out of its column's geomean, trials to first failure and time.
func TestBenchTableUnmeasured(t *testing.T) {
	cells := []BenchCell{benchCells[0], benchCells[1], benchCells[2]} // locks-1 pos, pos+; ms-1 pos
	var b bytes.Buffer
	writeBenchTable(&b, cells, []string{"pos", "pos+"}, 100)
	out := b.String()
	for _, want := range []string{"`–` = not measured", "| ms-1 | 0* | – |", "| **geomean** | 0.0200 | 0.1000 |", "| mean trials to first failure | 12.0 | 4.0 |"} {
		if !strings.Contains(out, want) {
			t.Fatalf("missing %q in:\n%s", want, out)
		}
	}
}
