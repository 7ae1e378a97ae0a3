"""move-1: a shard moves from one server to another while a write is in flight.

One program with modes (see README.md): coord, a, b, client. Line protocol
over TCP; every process is one thread around a selector (epoll), so every
send of a process leaves through one call site of the interpreter.
"""

import selectors
import socket
import sys
import time


def log(*parts):
    print(*parts, flush=True)


def dial(hostport):
    host, port = hostport.rsplit(":", 1)
    for _ in range(1000):
        try:
            return socket.create_connection((host, int(port)))
        except OSError:
            time.sleep(0.005)
    sys.exit(f"cannot connect to {hostport}")


class Conn:
    """A connection read line by line."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def send(self, line):
        self.sock.sendall(line.encode() + b"\n")

    def lines(self):
        """Reads once; returns the complete lines, or None at the end."""
        data = self.sock.recv(4096)
        if not data:
            return None
        self.buf += data
        *done, self.buf = self.buf.split(b"\n")
        return [d.decode() for d in done]

    def line(self):
        """Blocks for the next line (clients' request-reply)."""
        while b"\n" not in self.buf:
            data = self.sock.recv(4096)
            if not data:
                sys.exit("connection closed")
            self.buf += data
        first, self.buf = self.buf.split(b"\n", 1)
        return first.decode()


def serve(port, on_line, on_start=None, at=None):
    """Accepts on port and calls on_line(conn, line) for every line; at,
    if given, is (seconds from now, callback), called once."""
    sel = selectors.DefaultSelector()
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", port))
    ls.listen(16)
    sel.register(ls, selectors.EVENT_READ, None)

    def watch(sock):
        c = Conn(sock)
        sel.register(sock, selectors.EVENT_READ, c)
        return c

    if on_start:
        on_start(watch)
    due = None
    if at:
        due = time.monotonic() + at[0]
    while True:
        timeout = None
        if due is not None:
            timeout = max(0, due - time.monotonic())
        ready = sel.select(timeout)
        if due is not None and time.monotonic() >= due:
            due = None
            at[1]()
        for key, _ in ready:
            if key.data is None:
                s, _ = ls.accept()
                watch(s)
                continue
            c = key.data
            got = c.lines()
            if got is None:
                sel.unregister(c.sock)
                c.sock.close()
                continue
            for line in got:
                on_line(c, line)


def coord(port, a, b, after):
    """Owns the map of the shard: on a at first; after the given pause it
    tells a to move it to b (a rebalance)."""
    st = {"owner": a, "state": "moving", "a": None}

    def start(watch):
        st["a"] = watch(dial(a))

    def move():
        st["a"].send(f"MOVE {b}")
        log(f"coord: moving the shard from {a} to {b}")

    def on_line(c, line):
        if line == "WHERE":
            c.send(f"OWNER {st['owner']} {st['state']}")
        elif line == "MOVED":
            st["owner"], st["state"] = b, "settled"
            log(f"coord: the shard is on {b}")

    serve(port, on_line, start, (after, move))


def server_a(port, fixed):
    """The shard's first owner. On MOVE it sends its table to b and stops
    taking writes once b has it (the bug: writes between the snapshot and
    b's TAKEN are acknowledged and lost). Fixed: it stops taking writes
    before it takes the snapshot."""
    st = {"table": {}, "gone": False, "coord": None, "watch": None}

    def start(watch):
        st["watch"] = watch

    def on_line(c, line):
        w = line.split()
        if w[0] == "SET":
            if st["gone"]:
                c.send("MOVED")
                return
            st["table"][w[1]] = w[2]
            log(f"a: set {w[1]}={w[2]}")
            c.send("OK")
        elif w[0] == "GET":
            c.send(f"VAL {st['table'].get(w[1], '-')}")
        elif w[0] == "MOVE":
            st["coord"] = c
            if fixed:
                st["gone"] = True
            to = dial(w[1])
            snap = ",".join(f"{k}={v}" for k, v in sorted(st["table"].items()))
            log(f"a: snapshot of {len(st['table'])} keys to {w[1]}")
            to.sendall(f"SNAP {snap or '-'}\n".encode())
            st["watch"](to)  # b's TAKEN comes back on this connection
        elif w[0] == "TAKEN":
            st["gone"] = True
            log("a: b took the shard")
            st["coord"].send("MOVED")

    serve(port, on_line, start)


def server_b(port):
    """The shard's new owner: takes writes once a's snapshot is in."""
    st = {"table": None}

    def on_line(c, line):
        w = line.split()
        if w[0] == "SNAP":
            st["table"] = {}
            if w[1] != "-":
                for kv in w[1].split(","):
                    k, v = kv.split("=")
                    st["table"][k] = v
            log(f"b: took {len(st['table'])} keys")
            c.send("TAKEN")
        elif st["table"] is None:
            c.send("NOTYET")
        elif w[0] == "SET":
            st["table"][w[1]] = w[2]
            log(f"b: set {w[1]}={w[2]}")
            c.send("OK")
        elif w[0] == "GET":
            c.send(f"VAL {st['table'].get(w[1], '-')}")

    serve(port, on_line)


def client(coordaddr, n, think):
    """Writes keys k1..kn wherever the shard is, one every think seconds,
    then reads each back from the shard's owner once the move is over: an
    acknowledged write must be there."""
    co = Conn(dial(coordaddr))
    servers = {}

    def at(addr):
        if addr not in servers:
            servers[addr] = Conn(dial(addr))
        return servers[addr]

    acked = {}
    for i in range(1, n + 1):
        if i > 1:
            time.sleep(think)
        while True:
            co.send("WHERE")
            owner = co.line().split()[1]
            s = at(owner)
            s.send(f"SET k{i} {i}")
            r = s.line()
            if r == "OK":
                acked[f"k{i}"] = owner
                log(f"client: k{i}={i} acknowledged by {owner}")
                break
            time.sleep(0.005)
    while True:
        co.send("WHERE")
        _, owner, state = co.line().split()
        if state == "settled":
            break
        time.sleep(0.005)
    s = at(owner)
    for i in range(1, n + 1):
        s.send(f"GET k{i}")
        v = s.line().split()[1]
        if v != str(i):
            sys.exit(f"lost write: k{i}={i} was acknowledged by {acked[f'k{i}']}, the shard's owner {owner} has {v}")
    log(f"client: all {n} writes are on {owner}")


def main(argv):
    mode = argv[1] if len(argv) > 1 else ""
    fixed = "--fixed" in argv
    args = [a for a in argv[2:] if a != "--fixed"]
    if mode == "coord" and len(args) == 4:
        coord(int(args[0]), args[1], args[2], float(args[3]) / 1000)
    elif mode == "a" and len(args) == 1:
        server_a(int(args[0]), fixed)
    elif mode == "b" and len(args) == 1:
        server_b(int(args[0]))
    elif mode == "client" and len(args) == 3:
        client(args[0], int(args[1]), float(args[2]) / 1000)
    else:
        sys.exit("usage: move1 coord PORT A B PAUSE_MS | a PORT [--fixed] | b PORT | client COORD N THINK_MS")


if __name__ == "__main__":
    main(sys.argv)
