package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// member runs one member of the cluster: hashicorp/raft over its TCP
// transport, in-memory log and stable stores, an in-memory snapshot store,
// the chain state machine, and the admin port (see admin).
func member(args []string) error {
	fs := flag.NewFlagSet("member", flag.ExitOnError)
	id := fs.String("id", "", "this member's server ID (one of -peers)")
	peers := fs.String("peers", "", "every member as ID=HOST:RAFTPORT, comma-separated")
	adminAddr := fs.String("admin", "", "HOST:PORT of the admin port")
	heartbeat := fs.Duration("heartbeat", 300*time.Millisecond, "raft HeartbeatTimeout")
	election := fs.Duration("election", 300*time.Millisecond, "raft ElectionTimeout")
	lease := fs.Duration("lease", 150*time.Millisecond, "raft LeaderLeaseTimeout")
	commit := fs.Duration("commit", 25*time.Millisecond, "raft CommitTimeout")
	snapThreshold := fs.Uint64("snapshot-threshold", 8, "raft SnapshotThreshold: entries since the last snapshot before the next")
	snapInterval := fs.Duration("snapshot-interval", 200*time.Millisecond, "raft SnapshotInterval: how often the threshold is checked")
	trailing := fs.Uint64("trailing", 2, "raft TrailingLogs: entries kept after a snapshot")
	logLevel := fs.String("log", "info", "raft's log level")
	lightState := fs.Bool("light-state", false, "GET /state reads raft's atomics only (no Stats, which asks raft's main loop)")
	recordTerms := fs.Bool("led-terms", false, "record the terms in which this member becomes leader (GET /led)")
	fs.Parse(args)

	servers, err := parsePeers(*peers)
	if err != nil {
		return err
	}
	var self *raft.Server
	for i := range servers {
		if string(servers[i].ID) == *id {
			self = &servers[i]
		}
	}
	if self == nil {
		return fmt.Errorf("-id %q is not among -peers", *id)
	}

	cfg := raft.DefaultConfig()
	cfg.LocalID = self.ID
	cfg.HeartbeatTimeout = *heartbeat
	cfg.ElectionTimeout = *election
	cfg.LeaderLeaseTimeout = *lease
	cfg.CommitTimeout = *commit
	cfg.SnapshotThreshold = *snapThreshold
	cfg.SnapshotInterval = *snapInterval
	cfg.TrailingLogs = *trailing
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: "raft-" + *id, Level: hclog.LevelFromString(*logLevel), Output: os.Stderr})

	addr, err := net.ResolveTCPAddr("tcp", string(self.Address))
	if err != nil {
		return fmt.Errorf("raft address %s: %w", self.Address, err)
	}
	trans, err := raft.NewTCPTransport(string(self.Address), addr, 3, 2*time.Second, os.Stderr)
	if err != nil {
		return fmt.Errorf("raft transport: %w", err)
	}
	logs, stable, snaps := raft.NewInmemStore(), raft.NewInmemStore(), raft.NewInmemSnapshotStore()
	if err := raft.BootstrapCluster(cfg, logs, stable, snaps, trans, raft.Configuration{Servers: servers}); err != nil {
		return fmt.Errorf("bootstrapping: %w", err)
	}
	fsm := &chain{}
	r, err := raft.NewRaft(cfg, fsm, logs, stable, snaps, trans)
	if err != nil {
		return fmt.Errorf("starting raft: %w", err)
	}
	led := &terms{}
	if *recordTerms {
		registerLed(r, led)
	}
	return http.ListenAndServe(*adminAddr, admin(*id, r, fsm, led, *lightState))
}

// registerLed records in led the term of each election this member wins.
func registerLed(r *raft.Raft, led *terms) {
	// The filter runs in the goroutine that changes raft's state (its main
	// loop, on winning an election), so the term it reads is the one the
	// member leads in; it sends nothing (no channel) and adds no syscall.
	r.RegisterObserver(raft.NewObserver(nil, false, func(o *raft.Observation) bool {
		if st, ok := o.Data.(raft.RaftState); ok && st == raft.Leader {
			led.add(r.CurrentTerm())
		}
		return false
	}))
}

// parsePeers reads ID=HOST:PORT,... into a voter configuration.
func parsePeers(s string) ([]raft.Server, error) {
	var out []raft.Server
	for _, p := range strings.Split(s, ",") {
		id, addr, ok := strings.Cut(p, "=")
		if !ok || id == "" || addr == "" {
			return nil, fmt.Errorf("-peers: %q is not ID=HOST:PORT", p)
		}
		out = append(out, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(id), Address: raft.ServerAddress(addr)})
	}
	return out, nil
}

// State is what GET /state answers.
type State struct {
	ID       string `json:"id"`
	State    string `json:"state"`
	Term     string `json:"term"`
	Leader   string `json:"leader"`
	Commit   uint64 `json:"commit"`  // raft's commit index
	Applied  uint64 `json:"applied"` // index of the last command applied
	Hash     string `json:"hash"`
	Restores int    `json:"restores"` // snapshots restored
}

// admin serves the member's admin port:
//
//	POST /apply     body: commands, one a line; applies them, answers the
//	                last one's index (409 "not leader LEADER-ID" when not leader)
//	GET  /state     the State as JSON
//	POST /transfer  asks the leader to hand its leadership to another member
//	GET  /log       every applied Entry as JSON
//	GET  /led       the terms in which this member became leader, as JSON
//
// POST /transfer?to=ID hands the leadership to member ID (at its raft
// address on the same host as its admin port), else to the member raft
// picks. With light, GET /state reads raft's atomics only; raft's Stats
// asks its main loop for the configuration, which wakes that loop.
func admin(id string, r *raft.Raft, fsm *chain, led *terms, light bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /apply", func(w http.ResponseWriter, req *http.Request) {
		var futures []raft.ApplyFuture
		sc := bufio.NewScanner(req.Body)
		for sc.Scan() {
			if cmd := strings.TrimSpace(sc.Text()); cmd != "" {
				futures = append(futures, r.Apply([]byte(cmd), 2*time.Second))
			}
		}
		var last uint64
		for _, f := range futures {
			if err := f.Error(); err != nil {
				fail(w, r, err)
				return
			}
			last = f.Index()
		}
		fmt.Fprintf(w, "%d\n", last)
	})
	mux.HandleFunc("GET /state", func(w http.ResponseWriter, req *http.Request) {
		_, leader := r.LeaderWithID()
		last, hash, restores := fsm.state()
		var term string
		var commit uint64
		if light {
			term, commit = strconv.FormatUint(r.CurrentTerm(), 10), r.CommitIndex()
		} else {
			stats := r.Stats()
			term = stats["term"]
			commit, _ = strconv.ParseUint(stats["commit_index"], 10, 64)
		}
		json.NewEncoder(w).Encode(State{ID: id, State: r.State().String(), Term: term,
			Leader: string(leader), Commit: commit, Applied: last, Hash: hash, Restores: restores})
	})
	mux.HandleFunc("GET /led", func(w http.ResponseWriter, req *http.Request) {
		json.NewEncoder(w).Encode(led.list())
	})
	mux.HandleFunc("POST /transfer", func(w http.ResponseWriter, req *http.Request) {
		var f raft.Future
		if to := req.URL.Query().Get("to"); to == "" {
			f = r.LeadershipTransfer()
		} else {
			var addr raft.ServerAddress
			for _, s := range r.GetConfiguration().Configuration().Servers {
				if string(s.ID) == to {
					addr = s.Address
				}
			}
			if addr == "" {
				http.Error(w, "no member "+to, http.StatusBadRequest)
				return
			}
			f = r.LeadershipTransferToServer(raft.ServerID(to), addr)
		}
		if err := f.Error(); err != nil {
			fail(w, r, err)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /log", func(w http.ResponseWriter, req *http.Request) {
		json.NewEncoder(w).Encode(fsm.log())
	})
	return mux
}

// fail answers an error: 409 with the known leader for ErrNotLeader, else 503.
func fail(w http.ResponseWriter, r *raft.Raft, err error) {
	if errors.Is(err, raft.ErrNotLeader) {
		_, leader := r.LeaderWithID()
		http.Error(w, "not leader "+string(leader), http.StatusConflict)
		return
	}
	http.Error(w, err.Error(), http.StatusServiceUnavailable)
}

// terms records the terms in which a member became leader.
type terms struct {
	mu sync.Mutex
	t  []uint64
}

func (l *terms) add(t uint64) {
	l.mu.Lock()
	l.t = append(l.t, t)
	l.mu.Unlock()
}

func (l *terms) list() []uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]uint64{}, l.t...)
}
