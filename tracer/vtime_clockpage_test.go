package tracer

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestClockPageCode: the routine bytes in vtime_vdso_amd64.go are what the
// assembly source in testdata assembles to.
func TestClockPageCode(t *testing.T) {
	if _, err := exec.LookPath("as"); err != nil {
		t.Skip("skipping: no assembler (binutils) to check the clock page's code against its source")
	}
	dir := t.TempDir()
	for _, c := range [][]string{
		{"as", "-o", dir + "/page.o", "testdata/clockpage_amd64.S"},
		{"objcopy", "-O", "binary", "-j", ".text", dir + "/page.o", dir + "/page.bin"},
	} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(c, " "), err, out)
		}
	}
	img, err := os.ReadFile(dir + "/page.bin")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		name string
		at   int
		code []byte
	}{
		{"clock_gettime", pageClockGettimeAt, pageClockGettime},
		{"gettimeofday", pageGettimeofdayAt, pageGettimeofday},
		{"time", pageTimeAt, pageTime},
	} {
		if got := img[r.at : r.at+len(r.code)]; !bytes.Equal(got, r.code) {
			t.Errorf("%s: source assembles to % x, the Go bytes are % x", r.name, got, r.code)
		}
		if end := r.at + len(r.code); end < len(img) && img[end] != 0 {
			t.Errorf("%s: the source's routine is longer than the Go bytes", r.name)
		}
	}
}

// TestClockPageSameReadings: a C, Go, Rust and Java program read the same
// clock values through the clock page as through syscall stops, and the
// page spares the stops.
func TestClockPageSameReadings(t *testing.T) {
	for _, tc := range []struct {
		lang, prog, arg string
		minStopsSpared  uint64
	}{
		{"c", "clock_kinds", "8", 8 * 9},
		{"go", "clock_sleep", "20", 20},
		{"rust", "clock_sleep", "20", 20},
		{"java", "ClockSleep", "20", 20},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			run := func(syscalls bool) (string, Stats) {
				h := newHarness(t, Options{Clock: &testClock{}, ClockSyscalls: syscalls})
				h.launch("n", bin(t, tc.lang, tc.prog), tc.arg)
				res := h.run(nil, nil)
				if c := exitCode(t, res.exits, "n"); c != 0 {
					t.Fatalf("exit %d:\n%s", c, h.output("n"))
				}
				return h.output("n"), h.tr.Stats()
			}
			viaStops, stopStats := run(true)
			viaPage, pageStats := run(false)
			if viaStops != viaPage {
				t.Fatalf("clock readings differ:\nthrough stops:\n%s\nthrough the page:\n%s", viaStops, viaPage)
			}
			if !strings.Contains(viaPage, "i=1 ") {
				t.Fatalf("unexpected output %q", viaPage)
			}
			if stopStats.ClockReads < pageStats.ClockReads+tc.minStopsSpared {
				t.Fatalf("clock-read stops: %d through stops, %d with the page; want at least %d fewer",
					stopStats.ClockReads, pageStats.ClockReads, tc.minStopsSpared)
			}
			t.Logf("%s: clock-read stops %d -> %d, all stops %d -> %d", tc.lang,
				stopStats.ClockReads, pageStats.ClockReads, stopStats.Stops, pageStats.Stops)
		})
	}
}

// TestClockPageValues: values read through the page are the virtual clock's
// exactly (the epoch plus the virtual time slept), the raw syscall agrees,
// and a clock the page does not serve still reaches the kernel.
func TestClockPageValues(t *testing.T) {
	h := newHarness(t, Options{Clock: &testClock{}})
	h.launch("n", bin(t, "c", "clock_kinds"), "3")
	res := h.run(nil, nil)
	if c := exitCode(t, res.exits, "n"); c != 0 {
		t.Fatalf("exit %d:\n%s", c, h.output("n"))
	}
	out := h.output("n")
	// Before round i the program slept rounds 1..i-1: 1.5 ms*k + 333 ns each.
	slept := func(i int64) int64 { return 1500000*i*(i-1)/2 + 333*(i-1) }
	const epoch = 1704067200 // 2024-01-01 in seconds
	for i := int64(1); i <= 3; i++ {
		rt := epoch*1_000_000_000 + slept(i)
		mono := 3600*1_000_000_000 + slept(i)
		for _, want := range []string{
			fmt.Sprintf("i=%d clock=0 libc=%d.%09d sys=%d.%09d\n", i, rt/1e9, rt%1e9, rt/1e9, rt%1e9),
			fmt.Sprintf("i=%d clock=1 libc=%d.%09d sys=%d.%09d\n", i, mono/1e9, mono%1e9, mono/1e9, mono%1e9),
			fmt.Sprintf("i=%d gettimeofday libc=%d.%06d sys=%d.%06d\n", i, rt/1e9, rt%1e9/1e3, rt/1e9, rt%1e9/1e3),
			fmt.Sprintf("i=%d time ret=%d arg=%d sys=%d\n", i, rt/1e9, rt/1e9, rt/1e9),
			fmt.Sprintf("i=%d cputime=0 bad=-1 errno=22\n", i),
		} {
			if !strings.Contains(out, want) {
				t.Fatalf("missing %q in:\n%s", want, out)
			}
		}
	}
}
