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
	return http.ListenAndServe(*adminAddr, admin(*id, r, fsm))
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
func admin(id string, r *raft.Raft, fsm *chain) http.Handler {
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
		stats := r.Stats()
		commit, _ := strconv.ParseUint(stats["commit_index"], 10, 64)
		json.NewEncoder(w).Encode(State{ID: id, State: r.State().String(), Term: stats["term"],
			Leader: string(leader), Commit: commit, Applied: last, Hash: hash, Restores: restores})
	})
	mux.HandleFunc("POST /transfer", func(w http.ResponseWriter, req *http.Request) {
		if err := r.LeadershipTransfer().Error(); err != nil {
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
