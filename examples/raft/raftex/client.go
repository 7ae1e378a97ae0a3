package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// client drives the cluster and checks it. While faults may happen it
// applies batches of commands through whichever member leads and asks the
// leader, now and then, to hand over its leadership; errors are expected
// then and only counted. After the quiet period it checks:
//
//   - liveness: one more command commits, and every member applies it and
//     has it in its commit index, within -bound;
//   - safety: no two members applied different commands, or hashes, at the
//     same index, and none applied a command at an index where another
//     applied none (every member's applied log is read from its admin port).
//
// It exits 1 with the reason when a check fails.
func client(args []string) error {
	fs := flag.NewFlagSet("client", flag.ExitOnError)
	membersFlag := fs.String("members", "", "every member's admin port as ID=HOST:PORT, comma-separated")
	ops := fs.Int("ops", 30, "batches each worker applies while faults may happen")
	workers := fs.Int("workers", 1, "workers applying batches at once")
	stopAt := fs.Duration("stop-at", 0, "no new batch after this long from the client's start (0: -ops decides)")
	batch := fs.Int("batch", 3, "commands per batch")
	gap := fs.Duration("gap", 100*time.Millisecond, "pause between batches")
	transferEvery := fs.Int("transfer-every", 5, "ask for a leadership transfer after every N batches (0: never)")
	quietAt := fs.Duration("quiet-at", 6*time.Second, "when the checks start, from the client's start (after the spec's faults.until)")
	bound := fs.Duration("bound", 10*time.Second, "liveness bound: the final command must be applied by every member within it")
	timeout := fs.Duration("timeout", time.Second, "timeout of one admin request")
	settle := fs.Duration("settle", 0, "wait this long after a batch before asking for a transfer")
	transferGap := fs.Duration("transfer-gap", 0, "also ask the leader for a leadership transfer every so often while the workers run (0: never)")
	electionSafety := fs.Bool("election-safety", false, "safety also checks that no two members led the same term (members run with -led-terms)")
	rotate := fs.Bool("rotate", false, "liveness also hands the leadership to every member in turn and commits a command through each")
	fs.Parse(args)

	var members []peer
	for _, p := range strings.Split(*membersFlag, ",") {
		id, addr, ok := strings.Cut(p, "=")
		if !ok {
			return fmt.Errorf("-members: %q is not ID=HOST:PORT", p)
		}
		members = append(members, peer{id: id, base: "http://" + addr})
	}
	c := &cluster{members: members, http: &http.Client{Timeout: *timeout}}
	start := time.Now()

	// Each worker applies its batches in turn; several workers keep several
	// batches in flight, so a leader cut off with the client may append more
	// entries than it can commit.
	var mu sync.Mutex
	var applied, failed, transfers, transferFails int
	var wg sync.WaitGroup
	for w := 0; w < *workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < *ops; i++ {
				if *stopAt > 0 && time.Since(start) > *stopAt {
					break
				}
				var cmds []string
				for j := 0; j < *batch; j++ {
					cmds = append(cmds, fmt.Sprintf("w%d.op%d.%d", w, i, j))
				}
				_, err := c.apply(cmds)
				mu.Lock()
				if err != nil {
					failed++
				} else {
					applied++
				}
				mu.Unlock()
				if w == 0 && *transferEvery > 0 && (i+1)%*transferEvery == 0 {
					if *settle > 0 {
						time.Sleep(*settle)
					}
					err := c.transfer()
					mu.Lock()
					if err != nil {
						transferFails++
					} else {
						transfers++
					}
					mu.Unlock()
				}
				time.Sleep(*gap)
			}
		}()
	}
	stopTransfers := make(chan struct{})
	var tg sync.WaitGroup
	if *transferGap > 0 {
		tg.Add(1)
		go func() {
			defer tg.Done()
			for {
				select {
				case <-stopTransfers:
					return
				case <-time.After(*transferGap):
				}
				err := c.transfer()
				mu.Lock()
				if err != nil {
					transferFails++
				} else {
					transfers++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(stopTransfers)
	tg.Wait()
	fmt.Printf("workload: %d batches applied, %d failed; %d transfers, %d failed (%v)\n",
		applied, failed, transfers, transferFails, time.Since(start).Round(time.Millisecond))
	if d := *quietAt - time.Since(start); d > 0 {
		time.Sleep(d)
	}

	liveErr := c.liveness(*bound)
	if liveErr == nil && *rotate {
		liveErr = c.rotate(*bound)
	}
	safeErr := c.safety()
	if safeErr == nil && *electionSafety {
		safeErr = c.electionSafety()
	}
	if liveErr == nil && safeErr == nil {
		fmt.Println("ok: final command applied by every member; applied logs agree")
		return nil
	}
	return errors.Join(liveErr, safeErr)
}

type peer struct{ id, base string }

type cluster struct {
	members []peer
	http    *http.Client
}

// getJSON decodes the JSON answer of member p to GET path into v.
func (c *cluster) getJSON(p peer, path string, v any) error {
	resp, err := c.http.Get(p.base + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}

// state asks one member for its State.
func (c *cluster) state(p peer) (State, error) {
	var s State
	err := c.getJSON(p, "/state", &s)
	return s, err
}

// leader finds the member that says it leads, else the one the others name.
func (c *cluster) leader() (peer, error) {
	named := ""
	for _, p := range c.members {
		s, err := c.state(p)
		if err != nil {
			continue
		}
		if s.State == "Leader" {
			return p, nil
		}
		if s.Leader != "" {
			named = s.Leader
		}
	}
	for _, p := range c.members {
		if p.id == named {
			return p, nil
		}
	}
	return peer{}, errors.New("no member knows a leader")
}

func (c *cluster) post(p peer, path, body string) (string, error) {
	resp, err := c.http.Post(p.base+path, "text/plain", strings.NewReader(body))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s%s: %s", p.id, path, strings.TrimSpace(string(b)))
	}
	return strings.TrimSpace(string(b)), nil
}

// apply applies commands through the leader and returns the last one's index.
func (c *cluster) apply(cmds []string) (uint64, error) {
	p, err := c.leader()
	if err != nil {
		return 0, err
	}
	out, err := c.post(p, "/apply", strings.Join(cmds, "\n"))
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(out, 10, 64)
}

func (c *cluster) transfer() error {
	p, err := c.leader()
	if err != nil {
		return err
	}
	_, err = c.post(p, "/transfer", "")
	return err
}

// rotate hands the leadership to each member in turn and commits a command
// through it, each within bound: a member that leads but never commits
// (raft#696: its leadership-transfer flag stuck from an earlier term)
// fails it.
func (c *cluster) rotate(bound time.Duration) error {
	for _, m := range c.members {
		deadline := time.Now().Add(bound)
		var lastErr error
		for {
			if time.Now().After(deadline) {
				return fmt.Errorf("liveness: %s did not lead and commit a command within %v; last error: %v; %s", m.id, bound, lastErr, c.describe())
			}
			s, err := c.state(m)
			switch {
			case err != nil:
				lastErr = err
			case s.State != "Leader":
				if l, err := c.leader(); err != nil {
					lastErr = err
				} else if _, err := c.post(l, "/transfer?to="+m.id, ""); err != nil {
					lastErr = err
				}
			default:
				if _, err := c.post(m, "/apply", "rotate-"+m.id); err != nil {
					lastErr = fmt.Errorf("%s leads term %s but: %w", m.id, s.Term, err)
				} else {
					lastErr = nil
				}
			}
			if lastErr == nil && s.State == "Leader" {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	fmt.Printf("liveness: every member led and committed a command\n")
	return nil
}

// electionSafety reads the terms each member became leader in: two
// members that led the same term break Raft's Election Safety (raft#695:
// a candidate that a heartbeat's fast path moved to a newer term still
// counts the votes of its older one).
func (c *cluster) electionSafety() error {
	led := map[uint64]string{}
	var problems []string
	for _, p := range c.members {
		var terms []uint64
		if err := c.getJSON(p, "/led", &terms); err != nil {
			return fmt.Errorf("safety: reading %s's terms: %w", p.id, err)
		}
		for _, t := range terms {
			if o, ok := led[t]; ok && o != p.id {
				problems = append(problems, fmt.Sprintf("%s and %s both led term %d", o, p.id, t))
			}
			led[t] = p.id
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("safety: two leaders in one term: %s", strings.Join(problems, "; "))
	}
	fmt.Printf("safety: %d terms, one leader each\n", len(led))
	return nil
}

// liveness applies one final command and waits until every member applied
// it, all within bound.
func (c *cluster) liveness(bound time.Duration) error {
	deadline := time.Now().Add(bound)
	var idx uint64
	var lastErr error
	for idx == 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("liveness: the final command was not committed within %v of the quiet period; last error: %v; %s", bound, lastErr, c.describe())
		}
		if i, err := c.apply([]string{"final"}); err != nil {
			lastErr = err
			time.Sleep(100 * time.Millisecond)
		} else {
			idx = i
		}
	}
	for {
		var behind []string
		for _, p := range c.members {
			// A member's state machine may reach idx through a snapshot
			// while its log cannot follow the leader's (raft#697: it then
			// installs snapshot after snapshot): its commit index must
			// reach idx too.
			if s, err := c.state(p); err != nil || s.Applied < idx || s.Commit < idx {
				behind = append(behind, p.id)
			}
		}
		if len(behind) == 0 {
			fmt.Printf("liveness: final command committed at index %d and applied by every member\n", idx)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("liveness: the final command (index %d) was not both committed and applied by %s within %v; %s", idx, strings.Join(behind, ", "), bound, c.describe())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// describe lists every member's state, for failure messages.
func (c *cluster) describe() string {
	var parts []string
	for _, p := range c.members {
		s, err := c.state(p)
		if err != nil {
			parts = append(parts, fmt.Sprintf("%s: %v", p.id, err))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s: %s term %s leader %q commit %d applied %d hash %s snapshots restored %d", p.id, s.State, s.Term, s.Leader, s.Commit, s.Applied, s.Hash, s.Restores))
	}
	return "members: " + strings.Join(parts, "; ")
}

// safety reads every member's applied log and compares them index by index
// up to the lowest last index any two share.
func (c *cluster) safety() error {
	logs := map[string]map[uint64]Entry{}
	last := map[string]uint64{}
	for _, p := range c.members {
		var entries []Entry
		if err := c.getJSON(p, "/log", &entries); err != nil {
			return fmt.Errorf("safety: reading %s's log: %w", p.id, err)
		}
		m := map[uint64]Entry{}
		for _, e := range entries {
			m[e.Index] = e
			last[p.id] = max(last[p.id], e.Index)
		}
		logs[p.id] = m
	}
	var problems []string
	for i, a := range c.members {
		for _, b := range c.members[i+1:] {
			upto := min(last[a.id], last[b.id])
			var idx []uint64
			for k := range logs[a.id] {
				idx = append(idx, k)
			}
			for k := range logs[b.id] {
				if _, ok := logs[a.id][k]; !ok {
					idx = append(idx, k)
				}
			}
			sort.Slice(idx, func(x, y int) bool { return idx[x] < idx[y] })
			n := len(problems)
			for _, k := range idx {
				if k > upto {
					break
				}
				ea, oka := logs[a.id][k]
				eb, okb := logs[b.id][k]
				switch {
				case !oka || !okb:
					problems = append(problems, fmt.Sprintf("index %d: %s applied %s, %s applied %s", k, a.id, show(ea, oka), b.id, show(eb, okb)))
				case ea.Cmd != eb.Cmd || ea.Hash != eb.Hash:
					problems = append(problems, fmt.Sprintf("index %d: %s applied %s, %s applied %s", k, a.id, show(ea, oka), b.id, show(eb, okb)))
				}
				if len(problems) > n {
					break // the first divergence between two members says it
				}
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("safety: members applied different commands at one index: %s", strings.Join(problems, "; "))
	}
	total := 0
	for _, m := range logs {
		total = max(total, len(m))
	}
	fmt.Printf("safety: %d members' applied logs agree (%d entries at most)\n", len(c.members), total)
	return nil
}

func show(e Entry, ok bool) string {
	if !ok {
		return "nothing"
	}
	return fmt.Sprintf("%q (hash %s)", e.Cmd, e.Hash)
}
