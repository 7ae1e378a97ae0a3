package engine

import (
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/faults"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/spec"
)

// diskSpec is a spec of disk_log (a store that syncs some of its files and
// not others, then appends and fsyncs a log line every 10 ms, ten times)
// on s1 and a client that keeps the trial open for a second, with the
// given storage faults.
func diskSpec(t *testing.T, name, faults string) *spec.Spec {
	t.Helper()
	bin := repoPath("testdata", "bin", "c")
	if _, err := os.Stat(filepath.Join(bin, "disk_log")); err != nil {
		t.Skipf("skipping: %v (make testdata builds it)", err)
	}
	text := fmt.Sprintf(`name: %s
nodes:
  - name: s1
    role: server
    command: ["%s/disk_log", "{{tmp}}/db", "10"]
  - name: c1
    role: client
    command: ["/bin/sleep", "1"]
faults:
  nodes: [s1]
  data: ["{{tmp}}/db"]
  max_outage: 50ms
  spread: time # these tests aim their faults at a moment of the store's run
%stime: {delays: 0}
limits: {virtual_time: 10s, real_time: 60s}
`, name, bin, faults)
	path := filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	sp, err := spec.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

func runDisk(t *testing.T, sp *spec.Spec, trials int) *Summary {
	t.Helper()
	sum, err := Run(t.Context(), sp, RunOptions{Trials: trials, Strategy: "pos", OutDir: filepath.Join(t.TempDir(), "out"), TraceAll: true,
		// The tests read the data files the trials left in {{tmp}}.
		KeepTmp: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range sum.Results {
		if r.Outcome.Kind != Pass {
			t.Fatalf("trial %d: %v", r.Index, r.Outcome)
		}
	}
	return sum
}

// faultRecord is the trial's record of a fault of kind k (injected, not
// the quiet period's).
func faultRecord(t *testing.T, r *TrialResult, k sched.Kind) *sched.Record {
	t.Helper()
	for _, rec := range traceRecords(t, r) {
		if rec.Op.Kind == k && !rec.Auto {
			return &rec
		}
	}
	t.Fatalf("trial %d: no %v in its trace", r.Index, k)
	return nil
}

// A power cut loses what the store had not made durable and keeps what
// it had: the write no fsync covered is gone, the rename no fsync of its
// directory covered is undone, the fsynced files are whole. With persist
// all, everything stays, as after a crash.
func TestFaultPower(t *testing.T) {
	requireTrials(t)
	for _, tc := range []struct {
		persist, want string
	}{
		{"none", "restart: synced=durable unsynced= tmp=renamed renamed=<none> pattern-bits=0"},
		{"all", "restart: synced=durable unsynced=volatile tmp=<none> renamed=renamed pattern-bits=0"},
	} {
		t.Run(tc.persist, func(t *testing.T) {
			sp := diskSpec(t, "power-"+tc.persist, fmt.Sprintf("  kinds: [power]\n  from: 200ms\n  until: 201ms\n  persist: [%s]\n", tc.persist))
			sum := runDisk(t, sp, 3)
			for _, r := range sum.Results {
				out, err := os.ReadFile(filepath.Join(r.Dir, "s1.out"))
				if err != nil {
					t.Fatal(err)
				}
				lines := strings.Split(strings.TrimSpace(string(out)), "\n")
				if got := lines[len(lines)-1]; got != tc.want {
					t.Errorf("trial %d: after the power cut %q, want %q", r.Index, got, tc.want)
				}
				rec := faultRecord(t, r, faults.Power)
				if want := "kept 0 of 2 unsynced changes"; tc.persist == "none" && rec.Op.Hit != want {
					t.Errorf("trial %d: the power cut %q, want %q", r.Index, rec.Op.Hit, want)
				}
				// The record names the write it took back (the rename is
				// no write), for explain; none when it kept everything.
				var lost []string
				for _, l := range rec.Lost {
					lost = append(lost, fmt.Sprintf("%s@%d+%d=%s", l.File, l.Off, l.Len, l.Data))
				}
				if want := map[string]string{"none": "s1/db/unsynced@0+8=volatile", "all": ""}[tc.persist]; strings.Join(lost, ",") != want {
					t.Errorf("trial %d: the power cut took back %v, want %q", r.Index, lost, want)
				}
			}
		})
	}
}

// diskLogFiles are what disk_log's files hold once it has set up and
// written its log, all of it durable or kept.
func diskLogFiles() map[string]string {
	pat := make([]byte, 4096)
	for i := range pat {
		pat[i] = byte(i*7 + 3)
	}
	var log strings.Builder
	for i := range 10 {
		fmt.Fprintf(&log, "entry %d\n", i)
	}
	return map[string]string{"boot": "1", "synced": "durable", "unsynced": "volatile", "renamed": "renamed", "pattern": string(pat), "log": log.String()}
}

// A corruption of the down node flips exactly one bit of one of the files
// it wrote (named in the trace), or cuts one short.
func TestFaultCorrupt(t *testing.T) {
	requireTrials(t)
	flip := regexp.MustCompile(`^flipped bit (\d) of byte (\d+) of s1/db/(\w+)$`)
	tail := regexp.MustCompile(`^cut s1/db/(\w+) from (\d+) to (\d+) bytes$`)
	for _, how := range []string{"flip", "tail"} {
		t.Run(how, func(t *testing.T) {
			sp := diskSpec(t, "corrupt-"+how, fmt.Sprintf("  kinds: [power, corrupt]\n  budget: 2\n  from: 200ms\n  until: 300ms\n  persist: [all]\n  corruptions: [%s]\n", how))
			sum := runDisk(t, sp, 4)
			files := diskLogFiles()
			for _, r := range sum.Results {
				rec := faultRecord(t, r, faults.Corrupt)
				var name string
				if m := flip.FindStringSubmatch(rec.Op.Hit); how == "flip" && m != nil {
					name = m[3]
				} else if m := tail.FindStringSubmatch(rec.Op.Hit); how == "tail" && m != nil {
					name = m[1]
				} else {
					t.Fatalf("trial %d: the corruption says %q", r.Index, rec.Op.Hit)
				}
				got, err := os.ReadFile(filepath.Join(r.Dir, "s1", "db", name))
				if err != nil {
					t.Fatal(err)
				}
				want := files[name]
				switch how {
				case "flip":
					diff := 0
					for i := range min(len(got), len(want)) {
						diff += bits.OnesCount8(got[i] ^ want[i])
					}
					if len(got) != len(want) || diff != 1 {
						t.Errorf("trial %d: %s differs in %d bits (%d bytes, want %d): %s", r.Index, name, diff, len(got), len(want), rec.Op.Hit)
					}
				case "tail":
					if len(got) >= len(want) || !strings.HasPrefix(want, string(got)) {
						t.Errorf("trial %d: %s holds %d bytes, not a shorter prefix of its %d: %s", r.Index, name, len(got), len(want), rec.Op.Hit)
					}
				}
				for n, content := range files {
					if n == name {
						continue
					}
					if b, _ := os.ReadFile(filepath.Join(r.Dir, "s1", "db", n)); string(b) != content {
						t.Errorf("trial %d: %s, not corrupted, holds %q", r.Index, n, b)
					}
				}
			}
		})
	}
}

// An ioerror fails one call of the store on its log, the one after the
// fault, with the chosen error; the store sees it and goes on.
func TestFaultIOError(t *testing.T) {
	requireTrials(t)
	for _, tc := range []struct{ call, errno, text string }{
		{"fsync", "EIO", "Input/output error"},
		{"write", "ENOSPC", "No space left on device"},
		{"read", "EIO", "Input/output error"},
	} {
		t.Run(tc.call, func(t *testing.T) {
			sp := diskSpec(t, "ioerror-"+tc.call, fmt.Sprintf("  kinds: [ioerror]\n  from: 45ms\n  until: 46ms\n  io_calls: [%s]\n  io_errors: [%s]\n", tc.call, tc.errno))
			sum := runDisk(t, sp, 3)
			re := regexp.MustCompile(`(?m)^` + tc.call + ` (\d+): (.*)$`)
			for _, r := range sum.Results {
				out, err := os.ReadFile(filepath.Join(r.Dir, "s1.out"))
				if err != nil {
					t.Fatal(err)
				}
				ms := re.FindAllStringSubmatch(string(out), -1)
				if len(ms) != 1 || ms[0][2] != tc.text {
					t.Fatalf("trial %d: the store saw %q, want one %s failing with %s:\n%s", r.Index, ms, tc.call, tc.text, out)
				}
				// Entry 4 at 40 ms, the fault at 45 ms: entry 5's call fails.
				if ms[0][1] != "5" {
					t.Errorf("trial %d: %s %s failed, want 5 (the first after the fault)", r.Index, tc.call, ms[0][1])
				}
				rec := faultRecord(t, r, faults.IOError)
				if want := tc.call; tc.call == "read" {
					want = "pread64"
					if !strings.HasPrefix(rec.Op.Hit, want+" of s1/db/log failed with "+tc.errno) {
						t.Errorf("trial %d: the ioerror says %q", r.Index, rec.Op.Hit)
					}
				} else if rec.Op.Hit != want+" of s1/db/log failed with "+tc.errno {
					t.Errorf("trial %d: the ioerror says %q", r.Index, rec.Op.Hit)
				}
			}
		})
	}
}

// A stalled fsync takes the fault's virtual time: the store's monotonic
// clock sees it.
func TestFaultStall(t *testing.T) {
	requireTrials(t)
	sp := diskSpec(t, "stall", "  kinds: [stall]\n  from: 45ms\n  until: 46ms\n  max_stall: 300ms\n")
	sum := runDisk(t, sp, 3)
	re := regexp.MustCompile(`(?m)^fsync (\d+) took (\d+)ms$`)
	for _, r := range sum.Results {
		out, err := os.ReadFile(filepath.Join(r.Dir, "s1.out"))
		if err != nil {
			t.Fatal(err)
		}
		rec := faultRecord(t, r, faults.Stall)
		ms := re.FindAllStringSubmatch(string(out), -1)
		d := time.Duration(rec.Op.Delay)
		if len(ms) != 1 || ms[0][1] != "5" || ms[0][2] != strconv.FormatInt(d.Milliseconds(), 10) {
			t.Fatalf("trial %d: stalled fsyncs %q, want fsync 5 taking %v:\n%s", r.Index, ms, d, out)
		}
		if d < 30*time.Millisecond || d > 300*time.Millisecond || !strings.HasPrefix(rec.Op.Hit, "fsync of s1/db/log took ") {
			t.Errorf("trial %d: stall of %v: %q", r.Index, d, rec.Op.Hit)
		}
	}
}

// Every storage fault's trace replays to the same ops and outcome, and
// its show line names what it did.
func TestReplayStorageFaults(t *testing.T) {
	requireTrials(t)
	for _, tc := range []struct{ name, faults, show string }{
		{"power", "  kinds: [power]\n  from: 20ms\n  until: 300ms\n  persist: [none, prefix, subset, torn]\n", `persist (none|prefix|subset|torn), down for ≥\d+ms: kept \d+ of \d+ unsynced changes( and \d+ of the next write's \d+ bytes)?$`},
		{"corrupt", "  kinds: [crash, corrupt]\n  budget: 2\n  from: 20ms\n  until: 300ms\n", `^(flip: flipped bit \d of byte \d+ of|tail: cut) s1/db/`},
		{"ioerror", "  kinds: [ioerror]\n  from: 20ms\n  until: 90ms\n", `^next (write|fsync|read) fails with (EIO|ENOSPC): \w+ of s1/db/log failed with`},
		{"stall", "  kinds: [stall]\n  from: 20ms\n  until: 90ms\n", `^next fsync takes \d+ms: fsync of s1/db/log took`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := diskSpec(t, "replay-"+tc.name, tc.faults)
			sum := runDisk(t, sp, 3)
			want, _ := sched.ParseKind(tc.name)
			show := regexp.MustCompile(tc.show)
			dir := t.TempDir()
			for _, r := range sum.Results {
				rec := faultRecord(t, r, want)
				if d := sched.Describe(*rec); !show.MatchString(d) {
					t.Errorf("trial %d: show says %q", r.Index, d)
				}
				rr, err := Replay(t.Context(), r.TracePath, filepath.Join(dir, strconv.Itoa(r.Index)))
				if err != nil {
					t.Fatal(err)
				}
				if !rr.Same {
					t.Errorf("trial %d: replay differs: %s; %v", r.Index, rr.Diff, rr.Trial.Outcome)
				}
				if got := faultRecord(t, rr.Trial, want); got.Op.Hit != rec.Op.Hit {
					t.Errorf("trial %d: the replay's %v did %q, the trial's %q", r.Index, want, got.Op.Hit, rec.Op.Hit)
				}
			}
		})
	}
}

// BenchmarkStorageBooks: what the books of a node's data files cost on a
// write-heavy store (disk_log appending and fsyncing 2,000 log lines,
// with a pread after each): the same trial without storage faults (off)
// and with them (on: a storage fault kind with a budget of 0, so that the
// books run and the schedule is the same). It reports the seccomp stops
// per trial besides the time.
func BenchmarkStorageBooks(b *testing.B) {
	skipUnlessTrials(b)
	bin := repoPath("testdata", "bin", "c")
	if _, err := os.Stat(filepath.Join(bin, "disk_log")); err != nil {
		b.Skipf("skipping: %v (make testdata builds it)", err)
	}
	for _, tc := range []struct{ name, faults string }{
		{"off", ""},
		{"on", "faults:\n  kinds: [stall]\n  budget: 0\n  data: [\"{{tmp}}/db\"]\n"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			text := fmt.Sprintf("name: books-%s\nnodes:\n  - name: s1\n    role: server\n    command: [\"%s/disk_log\", \"{{tmp}}/db\", \"2000\", \"0\"]\n  - name: c1\n    role: client\n    command: [\"/bin/sleep\", \"1\"]\n%stime: {delays: 0}\nlimits: {virtual_time: 10s, real_time: 120s}\n", tc.name, bin, tc.faults)
			path := filepath.Join(b.TempDir(), "books.yaml")
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				b.Fatal(err)
			}
			sp, err := spec.Load(path)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			sum, err := Run(b.Context(), sp, RunOptions{Trials: b.N, Strategy: "pos", OutDir: filepath.Join(b.TempDir(), "out")})
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			var stops uint64
			for _, r := range sum.Results {
				if r.Outcome.Kind != Pass {
					b.Fatalf("trial %d: %v", r.Index, r.Outcome)
				}
				stops += r.Stats.Stops
			}
			b.ReportMetric(float64(stops)/float64(b.N), "stops/trial")
		})
	}
}

// Storage faults back to back replay too: a stalled fsync and a power
// cut, a failing call and a stalled fsync. Each trace must hold both faults in at least one trial, so the
// case cannot pass by injecting one.
func TestReplayStorageFaultsBackToBack(t *testing.T) {
	requireTrials(t)
	for _, tc := range []struct{ name, faults string }{
		{"stall-power", "  kinds: [stall, power]\n  budget: 2\n  from: 20ms\n  until: 90ms\n  persist: [none, prefix, subset]\n"},
		{"ioerror-stall", "  kinds: [ioerror, stall]\n  budget: 2\n  from: 20ms\n  until: 90ms\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum := runDisk(t, diskSpec(t, "b2b-"+tc.name, tc.faults), 4)
			dir, two := t.TempDir(), 0
			for _, r := range sum.Results {
				n := 0
				for _, rec := range traceRecords(t, r) {
					if rec.Op.Kind.IsFault() && !rec.Auto && rec.Op.Kind != faults.Restart {
						n++
					}
				}
				if n >= 2 {
					two++
				}
				rr, err := Replay(t.Context(), r.TracePath, filepath.Join(dir, strconv.Itoa(r.Index)))
				if err != nil {
					t.Fatal(err)
				}
				if !rr.Same {
					t.Errorf("trial %d (%d faults): replay differs: %s; %v", r.Index, n, rr.Diff, rr.Trial.Outcome)
				}
			}
			if two == 0 {
				t.Fatalf("no trial of %d held two storage faults", len(sum.Results))
			}
		})
	}
}
