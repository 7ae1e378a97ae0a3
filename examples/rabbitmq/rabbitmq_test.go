package rabbitmq_test

import (
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

// requireRabbitMQ skips unless Debian's rabbitmq-server is installed and
// this process may run lockstep's trials, and builds the AMQP client.
func requireRabbitMQ(tb testing.TB) {
	tb.Helper()
	extest.RequireInstalled(tb, "RabbitMQ", "apt-get install rabbitmq-server, or examples/rabbitmq/run.sh",
		"/usr/lib/rabbitmq/bin/rabbitmq-server", "/usr/lib/rabbitmq/bin/rabbitmqctl")
	testutil.RequireTrials(tb)
	extest.Make(tb, "the AMQP client", filepath.Join(extest.Dir(), "amqp"))
}

// One trial of the example: the client joins r2 to r1's cluster with
// rabbitmqctl, checks that both run in it, publishes 20 messages to a
// queue on r1 and consumes them through r2. It must pass: RabbitMQ 3.10
// does not lose a confirmed persistent message without a fault, so any
// other outcome is lockstep's bug (a stalled Erlang VM, a lost delivery).
func TestRabbitMQCluster(t *testing.T) {
	requireRabbitMQ(t)
	sp := extest.LoadSpec(t, "spec.yaml")
	sum := extest.Run(t, sp, engine.RunOptions{Trials: 1})
	for _, r := range sum.Results {
		out, _ := os.ReadFile(filepath.Join(r.Dir, "client.out"))
		cerr, _ := os.ReadFile(filepath.Join(r.Dir, "client.err"))
		if r.Outcome.Kind != engine.Pass {
			t.Errorf("trial %d (seed %d): %v\nclient output:\n%s\nclient stderr:\n%s", r.Index, r.Seed, r.Outcome, out, cerr)
			continue
		}
		for _, want := range []string{"run as one cluster", "20 messages published on", "in order"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("trial %d passed but its client did not print %q:\n%s", r.Index, want, out)
			}
		}
		t.Logf("trial %d: %d stops, %d ops, %v real", r.Index, r.Stats.Stops, len(r.Records), r.Duration)
	}
}

// The race of README.md ("A race lockstep found"), without the client's
// wait: POS releases r2's stop_app inside the 200 ms in which its boot has
// not yet polled its finished boot, start_app then starts nothing, and r1
// never sees two nodes (client exit 3). Its trace must replay: the
// example's Erlang flags take the schedulers' own polls away, and a replay
// lets the aux thread's polls go by. Seed 2, whose first trial gave the
// same ops in two runs.
func TestRabbitMQRace(t *testing.T) {
	requireRabbitMQ(t)
	sp := extest.LoadSpec(t, "spec-race.yaml")
	seed := int64(2)
	sum := extest.Run(t, sp, engine.RunOptions{Trials: 1, Seed: &seed})
	r := sum.First
	if r == nil {
		t.Fatalf("trial 0 of seed 2 did not fail (outcomes %v)", sum.ByKind)
	}
	cerr, _ := os.ReadFile(filepath.Join(r.Dir, "client.err"))
	if r.Outcome.Kind != engine.ClientFailed || !strings.Contains(r.Outcome.Detail, "exited with code 3") {
		t.Fatalf("trial 0: %v; want the client's exit 3 (a rabbitmqctl step failed)\nclient stderr:\n%s", r.Outcome, cerr)
	}
	if diff := extest.ReplayTwice(t, r.TracePath); diff != "" {
		t.Errorf("trial 0's trace did not replay: %s", diff)
	}
}

// BenchmarkRabbitMQTrial: one trial of the example natively and one under
// lockstep, alternately (see trialbench).
func BenchmarkRabbitMQTrial(b *testing.B) {
	requireRabbitMQ(b)
	sp := extest.LoadSpec(b, "spec.yaml")
	trialbench.Run(b, sp)
}
