// Command natsclient publishes to a replicated JetStream stream of a NATS
// cluster while lockstep crashes, cuts the power of, corrupts and
// partitions its servers, then checks, after the fault window's quiet
// period, that every message the cluster acknowledged is in the stream, at
// the sequence number it was acknowledged with, once.
//
// Usage:
//
//	natsclient [-msgs N] [-gap D] [-setup D] [-settle D] [-final D] nats://host:port...
//
// Exit status: 0 when every check passed; 1 on a violation (an acknowledged
// message missing, changed, at another sequence number or stored twice, or
// the stream itself gone from a cluster that answers); 2 on bad usage; 3
// when the cluster never took the stream or did not answer the final
// reads, i.e. it did not recover after the quiet period. Errors
// while a fault lasts are expected: a publish is retried with the same
// message ID until it is acknowledged or the quiet period begins.
package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

const stream = "S"

func main() {
	msgs := flag.Int("msgs", 40, "how many messages to publish, one after another")
	gap := flag.Duration("gap", 100*time.Millisecond, "pause between two publishes, so that they span the fault window")
	setup := flag.Duration("setup", 30*time.Second, "how long the stream's creation may retry")
	settle := flag.Duration("settle", 20*time.Second, "stop publishing, and start the final check, this long after the client started (after the quiet period began)")
	final := flag.Duration("final", 30*time.Second, "how long the final reads may retry")
	timeout := flag.Duration("timeout", time.Second, "timeout of one request")
	flag.Parse()
	if flag.NArg() == 0 || *msgs < 1 {
		fmt.Fprintln(os.Stderr, "usage: natsclient [-msgs N] [-gap D] [-setup D] [-settle D] [-final D] nats://host:port...")
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		// The virtual clock's wall time says little here; ops are ordered by line.
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	start := time.Now()
	nc, err := nats.Connect(strings.Join(flag.Args(), ","),
		nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1),
		nats.ReconnectWait(100*time.Millisecond), nats.Timeout(*timeout),
		nats.NoCallbacksAfterClientClose())
	if err != nil {
		fail(log, 3, "connect", err)
	}
	defer nc.Close()
	js, err := nc.JetStream(nats.MaxWait(*timeout))
	if err != nil {
		fail(log, 2, "jetstream context", err)
	}
	if err := createStream(js, log, start.Add(*setup)); err != nil {
		fail(log, 3, "the cluster never took the stream", err)
	}
	acked := publishAll(js, log, *msgs, *gap, start.Add(*settle))
	if wait := time.Until(start.Add(*settle)); wait > 0 {
		log.Info("waiting for the quiet period", "for", wait)
		time.Sleep(wait)
	}
	stored, err := readStream(js, log, time.Now().Add(*final))
	if errors.Is(err, nats.ErrStreamNotFound) && len(acked) > 0 {
		// The cluster answers, and no longer knows the stream it created and
		// acknowledged messages into.
		log.Error("VIOLATION", "what", fmt.Sprintf("the stream is gone: the cluster created it and acknowledged %d messages into it, and now answers %v", len(acked), err))
		os.Exit(1)
	}
	if err != nil {
		fail(log, 3, "the cluster did not answer the final reads", err)
	}
	problems := check(acked, stored)
	for _, p := range problems {
		log.Error("VIOLATION", "what", p)
	}
	if len(problems) > 0 {
		os.Exit(1)
	}
	log.Info("ok", "acked", len(acked), "stored", len(stored))
}

func fail(log *slog.Logger, code int, what string, err error) {
	log.Error(what, "err", err)
	os.Exit(code)
}

// createStream makes the stream, three replicas on disk, retrying until
// the cluster has a JetStream leader that takes it.
func createStream(js nats.JetStreamContext, log *slog.Logger, deadline time.Time) error {
	cfg := &nats.StreamConfig{Name: stream, Subjects: []string{"s"}, Replicas: 3, Storage: nats.FileStorage}
	for {
		_, err := js.AddStream(cfg)
		if err == nil || errors.Is(err, nats.ErrStreamNameAlreadyInUse) {
			log.Info("stream created")
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		log.Info("stream not created yet", "err", err)
		time.Sleep(200 * time.Millisecond)
	}
}

// ack is a message the cluster acknowledged, and the sequence number its
// acknowledgement gave.
type ack struct {
	id   string
	data string
	seq  uint64
}

// publishAll publishes msgs messages, each retried under its message ID
// (the stream drops a duplicate ID within its window) until acknowledged or
// until the quiet period: a message never acknowledged may or may not be
// stored, and is not checked.
func publishAll(js nats.JetStreamContext, log *slog.Logger, msgs int, gap time.Duration, stop time.Time) []ack {
	var acked []ack
	for i := 0; i < msgs && time.Now().Before(stop); i++ {
		id, data := fmt.Sprintf("m%03d", i), fmt.Sprintf("v%03d", i)
		for time.Now().Before(stop) {
			pa, err := js.Publish("s", []byte(data), nats.MsgId(id))
			if err == nil {
				log.Info("acked", "id", id, "seq", pa.Sequence, "duplicate", pa.Duplicate)
				acked = append(acked, ack{id: id, data: data, seq: pa.Sequence})
				break
			}
			log.Info("publish failed", "id", id, "err", err)
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(gap)
	}
	return acked
}

// stored is one message as the stream's leader serves it.
type stored struct {
	id, data string
	seq      uint64
}

// readStream reads every message of the stream, by sequence number,
// retrying until the deadline while the stream has no leader.
func readStream(js nats.JetStreamContext, log *slog.Logger, deadline time.Time) ([]stored, error) {
	var lastErr error
	for time.Now().Before(deadline) {
		out, err := readOnce(js)
		if err == nil {
			return out, nil
		}
		lastErr = err
		log.Info("final read failed", "err", err)
		time.Sleep(200 * time.Millisecond)
	}
	return nil, lastErr
}

func readOnce(js nats.JetStreamContext) ([]stored, error) {
	info, err := js.StreamInfo(stream)
	if err != nil {
		return nil, err
	}
	var out []stored
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && seq > 0; seq++ {
		m, err := js.GetMsg(stream, seq)
		if errors.Is(err, nats.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("seq %d: %w", seq, err)
		}
		out = append(out, stored{id: m.Header.Get(nats.MsgIdHdr), data: string(m.Data), seq: m.Sequence})
	}
	return out, nil
}

// check compares what was acknowledged with what the stream holds.
func check(acked []ack, have []stored) []string {
	var problems []string
	byID := map[string][]stored{}
	for _, s := range have {
		byID[s.id] = append(byID[s.id], s)
	}
	// In the stream's order, each duplicated ID once (at its first copy).
	for _, s := range have {
		if ss := byID[s.id]; len(ss) > 1 && ss[0].seq == s.seq {
			problems = append(problems, fmt.Sprintf("message %s stored %d times (seqs %v)", s.id, len(ss), seqs(ss)))
		}
	}
	last := uint64(0)
	if len(have) > 0 {
		last = have[len(have)-1].seq
	}
	for _, a := range acked {
		ss := byID[a.id]
		switch {
		case len(ss) == 0:
			problems = append(problems, fmt.Sprintf("lost acknowledged message: %s was acknowledged at seq %d, the stream holds %d messages up to seq %d without it", a.id, a.seq, len(have), last))
		case ss[0].data != a.data:
			problems = append(problems, fmt.Sprintf("acknowledged message %s changed: %q, now %q", a.id, a.data, ss[0].data))
		case ss[0].seq != a.seq:
			problems = append(problems, fmt.Sprintf("acknowledged message %s moved: acknowledged at seq %d, stored at seq %d", a.id, a.seq, ss[0].seq))
		}
	}
	return problems
}

func seqs(ss []stored) []uint64 {
	out := make([]uint64, len(ss))
	for i, s := range ss {
		out[i] = s.seq
	}
	return out
}
