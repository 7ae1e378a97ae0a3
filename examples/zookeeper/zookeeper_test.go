package zookeeper_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/engine"
	"github.com/lockstep-dev/lockstep/examples/internal/extest"
	"github.com/lockstep-dev/lockstep/examples/internal/trialbench"
	"github.com/lockstep-dev/lockstep/internal/testutil"
)

func TestMain(m *testing.M) { extest.Main(m) }

// requireZooKeeper skips unless Debian's zookeeper package (its scripts,
// its jar, the JVM its zkEnv.sh names) is installed and this process may
// run lockstep's trials.
func requireZooKeeper(tb testing.TB) {
	tb.Helper()
	extest.RequireInstalled(tb, "ZooKeeper", "apt-get install zookeeper, or examples/zookeeper/run.sh",
		"/usr/share/zookeeper/bin/zkEnv.sh", "/usr/share/zookeeper/bin/zkCli.sh",
		"/usr/share/java/zookeeper.jar", "/usr/bin/java")
	testutil.RequireTrials(tb)
}

// A few trials of the example: three ZooKeeper members elect a leader, and
// the client creates a znode through zk1 and reads it back, after a sync,
// from zk2 and zk3. Every trial must pass: the client fails only when a
// read after a sync misses an acknowledged create, or the ensemble never
// serves, which ZooKeeper 3.8 must not do; a lockstep error is lockstep's
// bug. Each member's JVM compiled in the foreground, as lockstep asks of
// every JVM it traces (JAVA_TOOL_OPTIONS, which the JVM says it read).
func TestZooKeeperEnsemble(t *testing.T) {
	requireZooKeeper(t)
	sp := extest.LoadSpec(t, "spec.yaml")
	const trials = 3
	sum := extest.Run(t, sp, engine.RunOptions{Trials: trials})
	for _, r := range sum.Results {
		out, _ := os.ReadFile(filepath.Join(r.Dir, "client.out"))
		if r.Outcome.Kind != engine.Pass {
			cerr, _ := os.ReadFile(filepath.Join(r.Dir, "client.err"))
			t.Errorf("trial %d (seed %d): %v\nclient output:\n%s\nclient stderr:\n%s", r.Index, r.Seed, r.Outcome, out, cerr)
			continue
		}
		// The client's value is its trial's seed: it read back its own write.
		if want := fmt.Sprintf("client: ok: /lockstep = v%d on zk2 and zk3", r.Seed); !strings.Contains(string(out), want) {
			t.Errorf("trial %d passed but its client did not print %q:\n%s", r.Index, want, out)
		}
		leaders := 0
		for _, n := range []string{"zk1", "zk2", "zk3"} {
			log, _ := os.ReadFile(filepath.Join(r.Dir, n+".err"))
			if strings.Contains(string(log), "LEADING - LEADER ELECTION TOOK") {
				leaders++
			}
			const picked = "Picked up JAVA_TOOL_OPTIONS: -XX:-BackgroundCompilation -XX:Tier3InvocationThreshold=2000 "
			if !strings.Contains(string(log), picked) {
				t.Errorf("trial %d: %s's JVM did not pick up lockstep's options (%q):\n%.2000s", r.Index, n, picked, log)
			}
		}
		if leaders == 0 {
			t.Errorf("trial %d passed but no member logged that it leads", r.Index)
		}
	}
	t.Logf("%d trials, outcomes %v, %v", sum.Trials, sum.ByKind, sum.Duration)
}

// BenchmarkZooKeeperTrial: one trial of the example natively (real time:
// the election's waits and the client's polling are real) and one under
// lockstep, alternately (see trialbench).
func BenchmarkZooKeeperTrial(b *testing.B) {
	requireZooKeeper(b)
	sp := extest.LoadSpec(b, "spec.yaml")
	trialbench.Run(b, sp)
}
