# common/native.sh: sourced by the native.sh of the bug suite (runs of a bug
# without lockstep, on loopback). Not run on its own.

# listening PORT: something accepts on 127.0.0.1:PORT.
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# ms N: N milliseconds as seconds, for sleep.
ms() { printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)); }

# ports_free PORT...: exits 2 when one is in use; another run would mix with this one.
ports_free() {
  local port
  for port in "$@"; do
    if listening $port; then
      echo "native.sh: port $port is in use; another run would mix with this one" >&2
      exit 2
    fi
  done
}

# kill_restart_runs N BIN PORT DIR CLEAN...: the native runs of crash-1,
# power-1 and rename-1, with the fault injected as a Jepsen nemesis would.
# Each run removes the files CLEAN (DIR/...) left by the last, starts
# "BIN kvd PORT DIR $fixed" and "BIN client 127.0.0.1:PORT 5 1300", kills
# kvd (SIGKILL) at a uniformly random moment between 0.1 s and 1 s after
# the client starts (the spec's from..until) and restarts it on the same
# DIR after an outage of 50-500 ms (a tenth of max_outage to all of it), at
# 1 s at the latest (the quiet period). It counts runs where the client
# exits non-zero (a lost acknowledged write, or no answer) or hangs, prints
# the client's complaint of each, and the count at the end.
kill_restart_runs() {
  local n=$1 bin=$2 port=$3 f
  dir=$4 # global: the EXIT trap removes it
  shift 4
  pk= pc=
  trap 'kill -9 $pk $pc 2>/dev/null; rm -rf "$dir"' EXIT
  local hits=0 i at down
  for ((i = 0; i < n; i++)); do
    for f in "$@"; do rm -f "$dir/"$f; done
    "$bin" kvd $port "$dir" $fixed >/dev/null 2>&1 &
    pk=$!
    until listening $port; do sleep 0.01; done
    timeout 10 "$bin" client 127.0.0.1:$port 5 1300 >/dev/null 2>"$dir/client.err" &
    pc=$!
    at=$((100 + RANDOM % 900))                  # the kill: 0.1-1 s after the client's start
    down=$((50 + RANDOM % 451))                 # the outage: 50-500 ms
    ((at + down > 1000)) && down=$((1000 - at)) # restarted by the quiet period at 1 s
    sleep "$(ms $at)"
    kill -9 $pk 2>/dev/null
    wait $pk 2>/dev/null
    sleep "$(ms $down)"
    "$bin" kvd $port "$dir" $fixed >/dev/null 2>&1 &
    pk=$!
    if ! wait $pc; then
      hits=$((hits + 1))
      echo "run $i: $(cat "$dir/client.err")" >&2
    fi
    kill -9 $pk 2>/dev/null
    wait $pk 2>/dev/null
    pk= pc=
  done
  echo "native: $hits hits in $n runs"
}

# tally I OK LOG PID...: after run I, whose client exited OK (0: it failed),
# counts a hit in $hits when the client failed or a server in PID... died,
# prints the client's complaint (LOG), and stops the servers.
tally() {
  local i=$1 ok=$2 log=$3 p
  shift 3
  for p in "$@"; do kill -0 "$p" 2>/dev/null || ok=0; done
  if [ "$ok" = 0 ]; then
    hits=$((hits + 1))
    echo "run $i: $(cat "$log")" >&2
  fi
  kill "$@" 2>/dev/null
  wait "$@" 2>/dev/null
}
