package extest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/engine"
	"github.com/lockstep-dev/lockstep/explain"
	"github.com/lockstep-dev/lockstep/internal/testutil"
	"github.com/lockstep-dev/lockstep/spec"
	"github.com/lockstep-dev/lockstep/tracer"
)

// Main is an example's TestMain: a test binary is also the tracer's zygote,
// and no test may leave a node behind.
func Main(m *testing.M) {
	tracer.MaybeRunZygote()
	testutil.LeakCheckMain(m)
}

// Dir is the folder of the calling test's source file: the example's
// folder, wherever the test runs from.
func Dir() string {
	return callerDir()
}

// callerDir is the folder of the file that called the exported function
// that calls it.
func callerDir() string {
	_, file, _, _ := runtime.Caller(2)
	return filepath.Dir(file)
}

// LoadSpec loads the spec file name of the calling test's example.
func LoadSpec(tb testing.TB, name string) *spec.Spec {
	tb.Helper()
	sp, err := spec.Load(filepath.Join(callerDir(), name))
	if err != nil {
		tb.Fatal(err)
	}
	return sp
}

// RequireInstalled skips the example unless every one of files exists;
// install says how to install them.
func RequireInstalled(tb testing.TB, example, install string, files ...string) {
	tb.Helper()
	for _, f := range files {
		if _, err := os.Stat(f); errors.Is(err, os.ErrNotExist) {
			tb.Skipf("%s not installed (%s): skipping the %s example", f, install, example)
		}
	}
}

// GoBuild builds the Go module in src into out, outside any go.work (an
// example's program is a module of its own), and returns go's output.
func GoBuild(src, out string) ([]byte, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	cmd := exec.Command(goBin, "build", "-o", out, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	return cmd.CombinedOutput()
}

// GoBuildFetched is GoBuild for a module whose dependencies come from the
// Go module proxy (what names it, e.g. "github.com/hashicorp/raft"): the
// test is skipped when the proxy is out of reach, and fails on any other
// error.
func GoBuildFetched(tb testing.TB, src, out, what string) {
	tb.Helper()
	if b, err := GoBuild(src, out); err != nil {
		if strings.Contains(string(b), "proxy.golang.org") || strings.Contains(string(b), "dial tcp") {
			tb.Skipf("building %s needs %s from the Go module proxy, which is out of reach: %s", filepath.Base(out), what, b)
		}
		tb.Fatalf("building %s: %v\n%s", filepath.Base(out), err, b)
	}
}

// Make runs make in dir, failing the test with what it printed.
func Make(tb testing.TB, what, dir string) {
	tb.Helper()
	if out, err := exec.Command("make", "-s", "-C", dir).CombinedOutput(); err != nil {
		tb.Fatalf("building %s: %v\n%s", what, err, out)
	}
}

// Run runs sp's trials with opts, into a temporary directory unless opts
// names one, failing the test when the campaign cannot run.
func Run(tb testing.TB, sp *spec.Spec, opts engine.RunOptions) *engine.Summary {
	tb.Helper()
	if opts.OutDir == "" {
		opts.OutDir = tb.TempDir()
	}
	sum, err := engine.Run(context.Background(), sp, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return sum
}

// Replay replays trace into a temporary directory, failing the test when
// it cannot run.
func Replay(tb testing.TB, trace string) *engine.ReplayResult {
	tb.Helper()
	rr, err := engine.Replay(context.Background(), trace, tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	return rr
}

// ReplayTwice replays trace and returns how it differed, "" when it
// matched. A replay that parts ways is tried once more, and a match the
// second time is logged with the first difference: on a real system a
// replay parts now and then where threads hand work to each other through
// memory lockstep does not see (each example's README says where); two in
// a row is a failure.
func ReplayTwice(tb testing.TB, trace string) string {
	tb.Helper()
	var diffs []string
	for range 2 {
		rr := Replay(tb, trace)
		if rr.Same {
			if len(diffs) > 0 {
				tb.Logf("the first replay parted ways (%s); the second matched", diffs[0])
			}
			return ""
		}
		diffs = append(diffs, rr.Diff)
	}
	return strings.Join(diffs, "; then ")
}

// ExplainFirst explains the first failing trial of sp's POS campaign of
// seed 1 (at most trials), with explain's default budget and no
// probability curve, and logs the story and its cost. It fails the test
// when no trial fails or explain cannot run.
func ExplainFirst(tb testing.TB, sp *spec.Spec, trials int) (*explain.Explanation, *engine.TrialResult) {
	tb.Helper()
	seed := int64(1)
	sum := Run(tb, sp, engine.RunOptions{Trials: trials, Strategy: "pos", Seed: &seed, StopOnFirst: true})
	if sum.First == nil {
		tb.Fatalf("no failure in %d trials", sum.Trials)
	}
	ex, err := explain.Explain(context.Background(), sum.First.TracePath, explain.Options{Out: tb.TempDir(), Continuations: -1})
	if err != nil {
		tb.Fatal(err)
	}
	var b strings.Builder
	explain.WriteText(&b, ex)
	tb.Log("\n" + b.String())
	tb.Logf("explain: %d runs in %v; the trial took %v (%.0fx), one replay %v (%.0fx)", ex.Runs, ex.Elapsed.Round(time.Millisecond),
		sum.First.Duration.Round(time.Millisecond), ex.Elapsed.Seconds()/sum.First.Duration.Seconds(),
		ex.TrialTime.Round(time.Millisecond), ex.Elapsed.Seconds()/ex.TrialTime.Seconds())
	return ex, sum.First
}
