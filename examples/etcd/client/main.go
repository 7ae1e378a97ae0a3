// Command etcdclient writes keys to an etcd 3.4 cluster through its v3 JSON
// gateway while lockstep crashes, restarts and partitions the members, then
// checks, after the fault window's quiet period, that every acknowledged
// write is there on every member.
//
// Usage:
//
//	etcdclient [-keys N] [-gap D] [-settle D] [-final D] host:port...
//
// Exit status: 0 when every check passed; 1 on a consistency violation (an
// acknowledged write missing or changed, a read older than a write it
// follows, revisions out of order); 2 on bad usage; 3 when no member answered
// the final reads at all, i.e. the cluster did not recover after the quiet
// period. Unavailability while a fault lasts is expected and only logged.
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"time"
)

const prefix = "k/"

func main() {
	keys := flag.Int("keys", 10, "how many keys to write, one after another")
	gap := flag.Duration("gap", 200*time.Millisecond, "pause between two writes, so that they span the fault window")
	settle := flag.Duration("settle", 12*time.Second, "start the final check this long after the client started (after the quiet period began)")
	final := flag.Duration("final", 20*time.Second, "how long the final reads may retry per member")
	timeout := flag.Duration("timeout", time.Second, "timeout of one HTTP request")
	flag.Parse()
	if flag.NArg() == 0 || *keys < 1 {
		fmt.Fprintln(os.Stderr, "usage: etcdclient [-keys N] [-gap D] [-settle D] [-final D] host:port...")
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
	c := &client{
		endpoints: flag.Args(),
		http:      &http.Client{Transport: &http.Transport{DisableKeepAlives: true}},
		timeout:   *timeout,
		log:       log,
	}
	start := time.Now()
	w := c.writeAll(*keys, *gap, start.Add(*settle))
	if wait := time.Until(start.Add(*settle)); wait > 0 {
		log.Info("waiting for the quiet period", "for", wait)
		time.Sleep(wait)
	}
	problems, answered := c.finalCheck(w, *final)
	for _, p := range problems {
		log.Error("VIOLATION", "what", p)
	}
	switch {
	case len(problems) > 0:
		os.Exit(1)
	case answered == 0:
		log.Error("no member answered the final reads: the cluster did not recover")
		os.Exit(3)
	}
	log.Info("ok", "acked", w.acked(), "members_checked", answered)
}

type client struct {
	endpoints []string
	http      *http.Client
	timeout   time.Duration
	log       *slog.Logger
	next      int // round-robin position, so that a down member is skipped on retry
}

// write is what the client knows of one key's put.
type write struct {
	key, value string
	acked      bool
	firstTry   bool  // acked by the first request: no other put of it can apply later
	rev        int64 // the acknowledging response's header revision
}

type writes []*write

func (ws writes) acked() int {
	n := 0
	for _, w := range ws {
		if w.acked {
			n++
		}
	}
	return n
}

// writeAll puts k/00.. one after another. A put that fails or times out is
// retried (with the same value, so a duplicate apply is harmless) on the
// next member until it is acknowledged or the deadline passes; a key whose
// outcome stays unknown may or may not be there at the end. After each
// acknowledgement the key is read back, linearizably, from another member.
func (c *client) writeAll(n int, gap time.Duration, deadline time.Time) writes {
	ws := make(writes, n)
	for i := range ws {
		w := &write{key: fmt.Sprintf("%s%02d", prefix, i), value: fmt.Sprintf("v%02d", i)}
		ws[i] = w
		for try := 0; time.Now().Before(deadline); try++ {
			ep := c.pick()
			rev, err := c.put(ep, w.key, w.value)
			if err != nil {
				c.log.Info("put failed, retrying", "key", w.key, "via", ep, "err", err)
				time.Sleep(50 * time.Millisecond)
				continue
			}
			w.acked, w.firstTry, w.rev = true, try == 0, rev
			c.log.Info("put ok", "key", w.key, "via", ep, "rev", rev, "tries", try+1)
			break
		}
		if !w.acked {
			c.log.Info("put outcome unknown", "key", w.key)
			continue
		}
		c.readBack(w, deadline)
		time.Sleep(gap)
	}
	return ws
}

// readBack reads an acknowledged key from the next member. A read that
// fails is retried until the deadline; one that answers must show the write.
func (c *client) readBack(w *write, deadline time.Time) {
	for time.Now().Before(deadline) {
		ep := c.pick()
		kvs, _, err := c.rangePrefix(ep, w.key, w.key+"\x00")
		if err != nil {
			c.log.Info("read failed, retrying", "key", w.key, "via", ep, "err", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if len(kvs) != 1 || kvs[0].Value != w.value || kvs[0].ModRevision < w.rev {
			// Recorded as a violation by the final check too, unless it heals;
			// a stale linearizable read is a violation either way.
			c.log.Error("VIOLATION", "what", fmt.Sprintf("read of %s via %s after its put was acked at rev %d returned %v", w.key, ep, w.rev, kvs))
			os.Exit(1)
		}
		c.log.Info("read ok", "key", w.key, "via", ep, "mod_rev", kvs[0].ModRevision)
		return
	}
}

// finalCheck reads the whole prefix from every member, retrying each for
// up to per, and returns the violations found and how many members answered.
func (c *client) finalCheck(ws writes, per time.Duration) (problems []string, answered int) {
	byKey := make(map[string]*write, len(ws))
	for _, w := range ws {
		byKey[w.key] = w
	}
	for _, ep := range c.endpoints {
		var (
			kvs []kv
			err error
		)
		for end := time.Now().Add(per); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			if kvs, _, err = c.rangePrefix(ep, prefix, prefixEnd(prefix)); err == nil {
				break
			}
		}
		if err != nil {
			c.log.Info("final read failed", "via", ep, "err", err)
			continue
		}
		answered++
		c.log.Info("final read", "via", ep, "keys", len(kvs))
		got := make(map[string]kv, len(kvs))
		for _, e := range kvs {
			got[e.Key] = e
			w, ok := byKey[e.Key]
			switch {
			case !ok:
				problems = append(problems, fmt.Sprintf("%s: key %s was never written", ep, e.Key))
			case e.Value != w.value:
				problems = append(problems, fmt.Sprintf("%s: key %s = %q, written %q", ep, e.Key, e.Value, w.value))
			}
		}
		var prev *write // the last key acked at its first try, in write order
		for _, w := range ws {
			e, ok := got[w.key]
			if w.acked && !ok {
				problems = append(problems, fmt.Sprintf("%s: acked write %s (rev %d) is missing", ep, w.key, w.rev))
				continue
			}
			if !ok {
				continue
			}
			// A key acked at its first try was applied once, at the acked revision.
			if w.firstTry && e.ModRevision != w.rev {
				problems = append(problems, fmt.Sprintf("%s: %s has mod_revision %d, acked at %d", ep, w.key, e.ModRevision, w.rev))
			}
			// Every put of a later key was sent after prev's only put was acked.
			if prev != nil && e.ModRevision <= prev.rev {
				problems = append(problems, fmt.Sprintf("%s: %s has mod_revision %d, not after %s acked at %d", ep, w.key, e.ModRevision, prev.key, prev.rev))
			}
			if w.firstTry {
				prev = w
			}
		}
	}
	return problems, answered
}

// pick returns the next endpoint in round-robin order.
func (c *client) pick() string {
	ep := c.endpoints[c.next%len(c.endpoints)]
	c.next++
	return ep
}

// The gateway encodes int64 fields as JSON strings and leaves out zeros.
type int64s int64

func (n *int64s) UnmarshalJSON(b []byte) error {
	s := string(bytes.Trim(b, `"`))
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("int64 field %s: %w", b, err)
	}
	*n = int64s(v)
	return nil
}

type header struct {
	Revision int64s `json:"revision"`
	MemberID string `json:"member_id"`
}

type kv struct {
	Key         string
	Value       string
	ModRevision int64
}

func (e kv) String() string { return fmt.Sprintf("%s=%s@%d", e.Key, e.Value, e.ModRevision) }

func (c *client) put(ep, key, value string) (int64, error) {
	var resp struct {
		Header *header `json:"header"`
	}
	err := c.call(ep, "/v3/kv/put", map[string]string{"key": b64(key), "value": b64(value)}, &resp)
	if err != nil {
		return 0, err
	}
	if resp.Header == nil || resp.Header.Revision == 0 {
		return 0, errors.New("put response without a revision")
	}
	return int64(resp.Header.Revision), nil
}

// rangePrefix reads [key, end) linearizably (the gateway's default).
func (c *client) rangePrefix(ep, key, end string) ([]kv, int64, error) {
	var resp struct {
		Header *header `json:"header"`
		Kvs    []struct {
			Key         string `json:"key"`
			Value       string `json:"value"`
			ModRevision int64s `json:"mod_revision"`
		} `json:"kvs"`
	}
	if err := c.call(ep, "/v3/kv/range", map[string]string{"key": b64(key), "range_end": b64(end)}, &resp); err != nil {
		return nil, 0, err
	}
	if resp.Header == nil {
		return nil, 0, errors.New("range response without a header")
	}
	out := make([]kv, 0, len(resp.Kvs))
	for _, e := range resp.Kvs {
		k, err := base64.StdEncoding.DecodeString(e.Key)
		if err != nil {
			return nil, 0, fmt.Errorf("key %q: %w", e.Key, err)
		}
		v, err := base64.StdEncoding.DecodeString(e.Value)
		if err != nil {
			return nil, 0, fmt.Errorf("value of %s: %w", k, err)
		}
		out = append(out, kv{Key: string(k), Value: string(v), ModRevision: int64(e.ModRevision)})
	}
	return out, int64(resp.Header.Revision), nil
}

// call POSTs a JSON request to the gateway and decodes a 200 answer.
func (c *client) call(ep, path string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+ep+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	r.Header.Set("Content-Type", "application/json")
	res, err := c.http.Do(r)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return fmt.Errorf("%s%s: reading the answer: %w", ep, path, err)
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s%s: %s: %s", ep, path, res.Status, bytes.TrimSpace(data))
	}
	if err := json.Unmarshal(data, resp); err != nil {
		return fmt.Errorf("%s%s: %w", ep, path, err)
	}
	return nil
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// prefixEnd is the range end covering every key with the prefix.
func prefixEnd(p string) string {
	b := []byte(p)
	b[len(b)-1]++
	return string(b)
}
