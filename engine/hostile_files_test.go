package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/spec"
)

// The hostile-node suite of the files group (testdata/hostile/files): a
// node owns the trial's directory and its {{tmp}}, and lockstep, root on
// the host, writes there too. What a node puts there must never make
// lockstep write a host file (each case gets a victim, a file of the
// host's outside the trial's directory, that must stay as it was), nor
// stop the campaign: every case runs two trials, and lockstep's file goes
// beside the trial's directory, named in the outcome.
func TestHostileFiles(t *testing.T) {
	requireTrials(t)
	for _, tt := range []struct {
		spec   string
		victim bool // the node gets the victim's path as its last argument
		want   OutcomeKind
		detail string // in each trial's outcome detail
		// aside is the file lockstep wrote beside the trial's directory
		// (trials/NNNNN.NAME) instead of in it, with a line it holds.
		aside, holds string
		// out is a file the trial's directory holds, with what it ends with.
		out, ends string
		// gone is a file or directory the trial's directory must not
		// hold after the trial.
		gone string
	}{
		// A link where the trace goes: the trace goes aside, whole.
		{spec: "trace-link", victim: true, want: ClientFailed, detail: "a node left a symbolic link at trace.jsonl in the trial's directory, which lockstep does not write through",
			aside: "trace.jsonl", holds: `"kind":"client-failed"`},
		// Item 9: a directory there stopped the campaign (exit 2).
		{spec: "trace-dir", want: ClientFailed, detail: "a node left a directory at trace.jsonl in the trial's directory",
			aside: "trace.jsonl", holds: `"kind":"client-failed"`},
		// A link where a deadlock's thread states go.
		{spec: "threads-link", victim: true, want: Deadlock, detail: "a node left a symbolic link at threads.txt",
			aside: "threads.txt", holds: "client/0/t0"},
		// A passing trial's checker output.
		{spec: "checker-link", victim: true, want: Pass, detail: "node left a symbolic link at checker.out", // capitalized: the whole detail
			aside: "checker.out", holds: "checked"},
		// The node's own stdout file moved away and a link left in its
		// place: the cuts and the cut line go to lockstep's descriptor of
		// the file, wherever it now is.
		{spec: "output-link", victim: true, want: ClientFailed, detail: "node client's stdout passed its 4 KiB output limit and was cut there",
			out: "client.out.moved", ends: "[lockstep: node client's stdout was cut here at its 4 KiB output limit (limits.node.output)]\n"},
		// A node's link where a later node's output goes: every output
		// file is open before the first node starts.
		{spec: "early-link", victim: true, want: Pass, out: "late.out", ends: "late and unharmed\n"},
		// Item 4: {{tmp}} is a filesystem of limits.node.tmp: a node
		// that fills it gets ENOSPC, its outcome names the limit, and a
		// failing trial keeps what it wrote (8 MiB of the 64 it tried).
		{spec: "tmp-full", want: ClientFailed, detail: "node client's {{tmp}} was full at its 8 MiB limit (limits.node.tmp)",
			out: "client.out", ends: "write after 8 MiB: No space left on device\n"},
		// A passing trial's {{tmp}} is gone after it, with what the node
		// wrote there.
		{spec: "tmp-pass", want: Pass, out: "client.out", ends: "wrote 4 MiB\n", gone: "client"},
	} {
		t.Run(tt.spec, func(t *testing.T) {
			victim := filepath.Join(t.TempDir(), "victim")
			// Past the output limit: a cut through a link would show.
			host := strings.Repeat("a host file, not lockstep's\n", 400)
			if err := os.WriteFile(victim, []byte(host), 0o644); err != nil {
				t.Fatal(err)
			}
			sp, err := spec.Load(repoPath("testdata", "hostile", "files", tt.spec+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if tt.victim {
				sp.Nodes[0].Command = append(sp.Nodes[0].Command, victim)
			}
			out := t.TempDir()
			sum, err := Run(context.Background(), sp, RunOptions{Trials: 2, OutDir: out})
			if err != nil {
				t.Fatalf("the campaign stopped: %v", err)
			}
			if len(sum.Results) != 2 {
				t.Fatalf("%d trials ran, want 2", len(sum.Results))
			}
			for _, r := range sum.Results {
				if b, err := os.ReadFile(victim); err != nil || string(b) != host {
					t.Fatalf("trial %d: the host's file holds %d bytes, ending %q (%v)", r.Index, len(b), b[max(0, len(b)-100):], err)
				}
				if r.Outcome.Kind != tt.want || !strings.Contains(r.Outcome.Detail, tt.detail) {
					t.Fatalf("trial %d: outcome %v, want %s (%q)", r.Index, r.Outcome, tt.want, tt.detail)
				}
				if tt.want != Pass {
					// The trace is written, under the output directory,
					// and loads.
					if !strings.HasPrefix(r.TracePath, out+"/") {
						t.Fatalf("trial %d: trace at %q, not under %s", r.Index, r.TracePath, out)
					}
					tr, err := LoadTrace(r.TracePath)
					if err != nil {
						t.Fatalf("trial %d: %v", r.Index, err)
					}
					if tr.Outcome == nil || string(tr.Outcome.Kind) != string(tt.want) {
						t.Fatalf("trial %d: the trace's outcome %+v", r.Index, tr.Outcome)
					}
				}
				if tt.aside != "" {
					aside := r.Dir + "." + tt.aside
					b, err := os.ReadFile(aside)
					if err != nil || !strings.Contains(string(b), tt.holds) {
						t.Fatalf("trial %d: %s: %q (%v), want %q in it", r.Index, aside, b, err, tt.holds)
					}
					if !strings.Contains(r.Outcome.Detail, "it wrote "+aside+" instead") {
						t.Fatalf("trial %d: the outcome does not say where %s went: %q", r.Index, tt.aside, r.Outcome.Detail)
					}
				}
				if tt.gone != "" {
					if _, err := os.Lstat(filepath.Join(r.Dir, tt.gone)); err == nil {
						t.Fatalf("trial %d: %s is still in the trial's directory", r.Index, tt.gone)
					}
				}
				if tt.spec == "tmp-full" {
					fi, err := os.Stat(filepath.Join(r.Dir, "client", "fill"))
					if err != nil || fi.Size() < 7<<20 || fi.Size() > 8<<20 {
						t.Fatalf("trial %d: the failing trial's {{tmp}} was not kept: %v (%v)", r.Index, fi, err)
					}
				}
				if tt.out != "" {
					b, err := os.ReadFile(filepath.Join(r.Dir, tt.out))
					if err != nil || !strings.HasSuffix(string(b), tt.ends) {
						t.Fatalf("trial %d: %s: %q (%v), want it to end with %q", r.Index, tt.out, b, err, tt.ends)
					}
				}
			}
			// No {{tmp}} stays mounted.
			if b, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(b), out+"/") {
				t.Fatalf("a mount under the output directory stayed:\n%s", b)
			}
		})
	}
}

// TestHostileAfterTrial: what a node leaves in its trial's directory is
// there when a replay of its trace runs, whose default output directory
// (like explain's) lies beside the trace. A link there, to a host
// directory or as the lock file, or a link at its trials/, must not make
// the replay write, truncate or clear a host file: the replay is refused,
// naming what was there, and the host's directory is as it was.
func TestHostileAfterTrial(t *testing.T) {
	requireTrials(t)
	for _, tt := range []struct{ mode, says string }{
		{"replay", "replay is a symbolic link"},
		{"replay-lock", ".lockstep.lock: too many levels of symbolic links"},
		{"replay-trials", "trials is a symbolic link"},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			host := t.TempDir()
			victim := filepath.Join(host, "victim")
			if err := os.WriteFile(victim, []byte("a host file\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			sp, err := spec.Load(repoPath("testdata", "hostile", "files", "after-link.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			sp.Nodes[0].Command = append(sp.Nodes[0].Command[:1], tt.mode, victim)
			sum, err := Run(context.Background(), sp, RunOptions{Trials: 1, OutDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			r := sum.Results[0]
			if r.Outcome.Kind != ClientFailed || r.TracePath == "" {
				t.Fatalf("outcome %v, trace %q: want the client's failure and its trace", r.Outcome, r.TracePath)
			}
			_, err = Replay(context.Background(), r.TracePath, "")
			if err == nil || !strings.Contains(err.Error(), tt.says) || !strings.Contains(err.Error(), "--out") {
				t.Errorf("replay: %v, want it refused saying %q and --out", err, tt.says)
			}
			if b, err := os.ReadFile(victim); err != nil || string(b) != "a host file\n" {
				t.Errorf("the host's file holds %q (%v)", b, err)
			}
			if ents, _ := os.ReadDir(host); len(ents) != 1 {
				t.Errorf("the host's directory holds %d entries, want the victim alone", len(ents))
			}
		})
	}
}
