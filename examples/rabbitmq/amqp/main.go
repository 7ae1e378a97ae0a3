// Command amqpcheck publishes messages to a queue through one RabbitMQ node
// and consumes them through another node of the same cluster: the queue
// lives on the first node, so every delivery crosses the cluster's link.
// It exits 0 when every message arrived exactly once and in order, 1 when
// one was lost, duplicated, reordered or garbled, and 2 when a node could
// not be reached or answered with an error before the deadline.
//
//	amqpcheck -publish 10.0.0.1:5672 -consume 10.0.0.2:5672 -n 20
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

type config struct {
	publish, consume string
	queue            string
	n                int
	deadline         time.Duration
}

// errLost marks a wrong delivery (exit 1) as opposed to a failure to talk
// to a node (exit 2).
var errLost = errors.New("wrong deliveries")

func main() {
	var c config
	flag.StringVar(&c.publish, "publish", "", "host:port of the node the messages are published to (the queue's home)")
	flag.StringVar(&c.consume, "consume", "", "host:port of the node they are consumed from")
	flag.StringVar(&c.queue, "queue", "lockstep", "queue name")
	flag.IntVar(&c.n, "n", 20, "messages")
	flag.DurationVar(&c.deadline, "deadline", time.Minute, "give up after this long")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if c.publish == "" || c.consume == "" || c.n < 1 {
		fmt.Fprintln(os.Stderr, "amqpcheck: -publish and -consume are required and -n must be positive")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.deadline)
	defer cancel()
	if err := run(ctx, log, c); err != nil {
		fmt.Fprintln(os.Stderr, "amqpcheck:", err)
		if errors.Is(err, errLost) {
			os.Exit(1)
		}
		os.Exit(2)
	}
	fmt.Printf("amqpcheck: %d messages published on %s arrived through %s in order\n", c.n, c.publish, c.consume)
}

func run(ctx context.Context, log *slog.Logger, c config) error {
	pub, err := dial(ctx, log, c.publish)
	if err != nil {
		return err
	}
	defer pub.Close()
	ch, err := pub.Channel()
	if err != nil {
		return fmt.Errorf("channel on %s: %w", c.publish, err)
	}
	if _, err := ch.QueueDeclare(c.queue, true, false, false, false, nil); err != nil {
		return fmt.Errorf("declare %s on %s: %w", c.queue, c.publish, err)
	}
	if err := ch.Confirm(false); err != nil {
		return fmt.Errorf("confirm mode on %s: %w", c.publish, err)
	}
	want := make([]string, c.n)
	for i := range want {
		want[i] = fmt.Sprintf("message %d of %d", i+1, c.n)
		conf, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", c.queue, true, false,
			amqp.Publishing{DeliveryMode: amqp.Persistent, Body: []byte(want[i])})
		if err != nil {
			return fmt.Errorf("publish %d on %s: %w", i+1, c.publish, err)
		}
		ok, err := conf.WaitContext(ctx)
		if err != nil {
			return fmt.Errorf("confirm of %d on %s: %w", i+1, c.publish, err)
		}
		if !ok {
			return fmt.Errorf("%s refused message %d (nack)", c.publish, i+1)
		}
	}
	log.Info("published", "node", c.publish, "messages", c.n)

	con, err := dial(ctx, log, c.consume)
	if err != nil {
		return err
	}
	defer con.Close()
	cch, err := con.Channel()
	if err != nil {
		return fmt.Errorf("channel on %s: %w", c.consume, err)
	}
	deliveries, err := cch.ConsumeWithContext(ctx, c.queue, "amqpcheck", false, false, false, false, nil)
	if err != nil {
		return fmt.Errorf("consume %s on %s: %w", c.queue, c.consume, err)
	}
	for i := range want {
		select {
		case d, ok := <-deliveries:
			if !ok {
				return fmt.Errorf("%s closed the consumer after %d of %d messages", c.consume, i, c.n)
			}
			if got := string(d.Body); got != want[i] {
				return fmt.Errorf("%w: delivery %d through %s is %q, want %q", errLost, i+1, c.consume, got, want[i])
			}
			if err := d.Ack(false); err != nil {
				return fmt.Errorf("ack %d on %s: %w", i+1, c.consume, err)
			}
		case <-ctx.Done():
			return fmt.Errorf("%w: %d of %d messages arrived through %s before the deadline", errLost, i, c.n, c.consume)
		}
	}
	// Nothing more may be in the queue: a duplicate would show here.
	if err := cch.Cancel("amqpcheck", false); err != nil {
		return fmt.Errorf("cancel consumer on %s: %w", c.consume, err)
	}
	q, err := cch.QueueDeclarePassive(c.queue, true, false, false, false, nil)
	if err != nil {
		return fmt.Errorf("inspect %s on %s: %w", c.queue, c.consume, err)
	}
	if q.Messages != 0 {
		return fmt.Errorf("%w: %d messages left in %s after all %d were consumed", errLost, q.Messages, c.queue, c.n)
	}
	return nil
}

// dial connects, retrying until ctx ends: a node that has just rejoined a
// cluster may accept connections a moment after its application restarts.
func dial(ctx context.Context, log *slog.Logger, addr string) (*amqp.Connection, error) {
	for {
		conn, err := amqp.DialConfig("amqp://guest:guest@"+addr+"/", amqp.Config{
			Heartbeat: 10 * time.Second,
			Locale:    "en_US",
			Dial:      amqp.DefaultDial(5 * time.Second),
		})
		if err == nil {
			return conn, nil
		}
		log.Info("dial", "node", addr, "err", err)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("connect to %s: %w", addr, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}
