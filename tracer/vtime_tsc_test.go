package tracer

import (
	"debug/elf"
	"testing"
)

// TestScanImageTSC: the counter reads found in an image are the
// instructions themselves, in the functions that hold them: the C program's
// main, and Go's runtime.cputicks whether the binary keeps its symbol table
// or only its pclntab.
func TestScanImageTSC(t *testing.T) {
	cputicks := func(t *testing.T, path string) (uint64, uint64) {
		f, err := elf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		syms, err := f.Symbols()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range syms {
			if s.Name == "runtime.cputicks" || s.Name == "runtime.cputicks.abi0" {
				return s.Value, s.Value + s.Size
			}
		}
		t.Fatal("no runtime.cputicks in", path)
		return 0, 0
	}
	goStart, goEnd := cputicks(t, bin(t, "go", "clock_sleep"))
	tests := []struct {
		name, lang, prog string
		// want: counter reads expected, and the range they must lie in
		// (0, 0: anywhere).
		want       int
		start, end uint64
	}{
		// main's rdtsc and rdtscp, and the --probe branch's rdtsc.
		{"c with symbols", "tsc", "rdtsc", 3, 0, 0},
		// runtime.cputicks: rdtscp, and rdtsc where rdtscp is missing.
		{"go with symbols", "go", "clock_sleep", 2, goStart, goEnd},
		{"go stripped", "go", "clock_sleep_stripped", 2, 0, 0},
		// No counter read at all.
		{"c without", "c", "clock_sleep", 0, 0, 0},
	}
	var goSites []tscSite
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			im := scanImage(bin(t, tt.lang, tt.prog))
			if im.err != nil {
				t.Fatal(im.err)
			}
			if len(im.sites) != tt.want {
				t.Fatalf("%d counter reads, want %d: %+v", len(im.sites), tt.want, im.sites)
			}
			sizes := map[uint8]int{}
			for _, s := range im.sites {
				sizes[s.size]++
				if tt.end != 0 && (s.addr < tt.start || s.addr >= tt.end) {
					t.Errorf("site %#x outside runtime.cputicks [%#x, %#x)", s.addr, tt.start, tt.end)
				}
			}
			if tt.want > 0 && (sizes[2] == 0 || sizes[3] == 0) {
				t.Errorf("want both rdtsc and rdtscp, got sizes %v", sizes)
			}
			switch tt.prog {
			case "clock_sleep":
				goSites = im.sites
			case "clock_sleep_stripped":
				// Same program, same code: the pclntab gives the same places.
				if len(goSites) != len(im.sites) {
					break
				}
				for i := range goSites {
					if goSites[i] != im.sites[i] {
						t.Errorf("stripped site %d at %#x, with symbols at %#x", i, im.sites[i].addr, goSites[i].addr)
					}
				}
			}
		})
	}
}

// TestGoCputicksVirtual: a Go program's runtime reads the counter (Go up to
// 1.21 seeds each M's random state with it) through runtime.cputicks, which
// lockstep rewrote at exec, so every read is answered from virtual time,
// stripped binary or not.
func TestGoCputicksVirtual(t *testing.T) {
	requireTracing(t)
	for _, prog := range []string{"clock_sleep", "clock_sleep_stripped"} {
		t.Run(prog, func(t *testing.T) {
			h := newHarness(t, Options{Clock: &testClock{}})
			h.launch("n", bin(t, "go", prog), "1")
			h.run(nil, nil)
			if s := h.tr.Stats(); s.TSCReads == 0 {
				t.Fatalf("no counter read answered: %+v", s)
			}
		})
	}
}
