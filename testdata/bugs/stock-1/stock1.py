"""stock-1: order front ends decide "in stock" from a cache that the stock
server keeps up to date by pushing UPDATEs, and the stock server's
reservation trusts that decision.

One program with modes (see README.md): stock, front (run twice, as a and
b) and client. Line protocol over TCP. Every server is one thread around a
selector (epoll) that serves the oldest connection first; every message of
every mode leaves through send_msg.
"""

import selectors
import socket
import sys
import time

NAME = "stock1"


def log(text):
    print(f"{NAME}: {text}", flush=True)


def dial(hostport):
    """Connects, retrying while the peer is not up yet (native runs start
    every process at once; under lockstep the spec's ready: orders them)."""
    host, port = hostport.rsplit(":", 1)
    for _ in range(1000):
        try:
            s = socket.create_connection((host, int(port)))
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return s
        except OSError:
            time.sleep(0.005)
    sys.exit(f"{NAME}: cannot connect to {hostport}")


class Conn:
    """A connection read line by line; peer names it in the log."""

    def __init__(self, sock, peer):
        self.sock = sock
        self.peer = peer
        self.buf = b""
        self.age = 0

    def lines(self):
        """Reads once; returns the complete lines, or None at the end."""
        data = self.sock.recv(4096)
        if not data:
            return None
        self.buf += data
        *done, self.buf = self.buf.split(b"\n")
        return [d.decode() for d in done]

    def line(self):
        """Blocks for the next line (request-reply)."""
        while b"\n" not in self.buf:
            data = self.sock.recv(4096)
            if not data:
                sys.exit(f"{NAME}: {self.peer} closed the connection")
            self.buf += data
        first, self.buf = self.buf.split(b"\n", 1)
        line = first.decode()
        log(f"got {line} from {self.peer}")
        return line


def send_msg(conn, line):
    """Every message of every mode leaves here."""
    log(f"send {line} to {conn.peer}")
    conn.sock.sendall(line.encode() + b"\n")


class Loop:
    """A server's event loop: one thread, one selector. Of the connections
    that are readable at once, the oldest (accepted or dialled first) is
    served first, so which of two waiting messages a server reads first
    depends on the connections they came on, never on the order of the
    kernel's ready list. A new connection is accepted and nothing else in
    that turn, so that its data competes in the next select."""

    def __init__(self, port, peers="conn"):
        self.peers = peers  # what the log calls an accepted connection
        self.sel = selectors.DefaultSelector()
        self.ls = socket.socket()
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.ls.bind(("0.0.0.0", port))
        self.ls.listen(16)
        self.sel.register(self.ls, selectors.EVENT_READ, None)
        self.ages = 0

    def add(self, conn):
        self.ages += 1
        conn.age = self.ages
        self.sel.register(conn.sock, selectors.EVENT_READ, conn)

    def run(self, on_line):
        while True:
            ready = [key.data for key, _ in self.sel.select()]
            if None in ready:
                s, _ = self.ls.accept()
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self.add(Conn(s, self.peers))
                continue
            for c in sorted(ready, key=lambda c: c.age):
                got = c.lines()
                if got is None:
                    self.sel.unregister(c.sock)
                    c.sock.close()
                    continue
                for line in got:
                    log(f"got {line} from {c.peer}")
                    on_line(c, line)


def stock(port, items, fixed):
    """The stock server: the authority on how many units of each item are
    left. WATCH name makes a connection a push stream: SNAP with every
    count, then UPDATE item count after every change. RESERVE o item n takes
    n units for order o; COUNT item answers the count (the client's audit);
    HELLO name only names a connection in the log."""
    count = {}
    for kv in items.split(","):
        k, v = kv.split("=")
        count[k] = int(v)
    watchers = []  # the push streams, in the order they subscribed
    loop = Loop(port)
    log(f"listening on {port}, stock {items}")

    def on_line(c, line):
        w = line.split()
        if w[0] == "HELLO":
            c.peer = w[1]  # names the connection in the log, nothing else
        elif w[0] == "WATCH":
            c.peer = w[1]
            watchers.append(c)
            send_msg(c, "SNAP " + ",".join(f"{k}={v}" for k, v in sorted(count.items())))
        elif w[0] == "RESERVE":
            o, item, n = w[1], w[2], int(w[3])
            left = count.get(item, 0)
            if fixed and left < n:
                # The fix: the decrement is conditional, here, where the
                # count is the truth; the front end answers from this.
                send_msg(c, f"SOLDOUT {o} {item} {left}")
                return
            # The bug: the front end has checked its cache before asking,
            # so the reservation is a plain decrement ("n = n - ?" without
            # "where n >= ?"). The check and the act are in two processes,
            # and the check reads a copy.
            count[item] = left - n
            log(f"order {o}: {item} {left} -> {count[item]}")
            # Every cache hears of the change before the front end that
            # ordered hears the answer: the pushes go out first. That
            # orders nothing between a push and the client's next ORDER to
            # the other front end, which travel on different connections.
            for wc in watchers:
                send_msg(wc, f"UPDATE {item} {count[item]}")
            send_msg(c, f"RESERVED {o} {item} {count[item]}")
        elif w[0] == "COUNT":
            send_msg(c, f"COUNT {w[1]} {count.get(w[1], 0)}")

    loop.run(on_line)


def front(name, port, stockaddr):
    """An order front end (two of them, a and b, behind the client as
    behind a load balancer). It keeps a cache of every count, filled by the
    stock server's SNAP and kept by its UPDATEs. ORDER o item n: when the
    cache says fewer than n are left, SOLDOUT at once (the cache's point: a
    sold-out item costs no trip to the stock server); otherwise RESERVE at
    the stock server and CONFIRMED (or SOLDOUT, when it refuses)."""
    cache = {}

    def on_line(c, line):
        w = line.split()
        if w[0] == "UPDATE":
            cache[w[1]] = int(w[2])
        elif w[0] == "ORDER":
            o, item, n = w[1], w[2], int(w[3])
            have = cache.get(item, 0)
            if have < n:
                send_msg(c, f"SOLDOUT {o}")
                return
            log(f"order {o}: the cache has {have} of {item}, reserving {n}")
            send_msg(req, f"RESERVE {o} {item} {n}")
            r = req.line().split()
            send_msg(c, f"CONFIRMED {o}" if r[0] == "RESERVED" else f"SOLDOUT {o}")

    # Subscribe before listening: no order is taken before the cache is.
    watch = Conn(dial(stockaddr), "stock")
    send_msg(watch, f"WATCH {name}")
    for kv in watch.line().split()[1].split(","):
        k, v = kv.split("=")
        cache[k] = int(v)
    # An UPDATE read along with the SNAP sits in the line buffer, where
    # epoll never reports it: apply it now.
    while b"\n" in watch.buf:
        on_line(watch, watch.line())
    req = Conn(dial(stockaddr), "stock")  # reservations, one at a time
    send_msg(req, f"HELLO {name}")
    loop = Loop(port, "client")
    log(f"listening on {port}, stock at {stockaddr}")
    # The push stream is the loop's oldest connection: an UPDATE waiting
    # beside an ORDER is read first. Only one still on its way is not.
    loop.add(watch)
    loop.run(on_line)


def client(aaddr, baddr, stockaddr, items):
    """A shopper behind a load balancer that sends each order to a or b,
    and the test's checker: it keeps its own model of the stock, checks
    every answer against it and audits the stock server after every order.
    Per item (one round each), with c units at the start (c >= 2):
      1 unit via b (CONFIRMED, c-1 left), c units via a (SOLDOUT),
      c-1 units via a (CONFIRMED, 0 left), 1 unit via b (SOLDOUT)."""
    fe = {"a": Conn(dial(aaddr), "a"), "b": Conn(dial(baddr), "b")}
    st = Conn(dial(stockaddr), "stock")
    send_msg(st, "HELLO client")
    o = 0

    def audit(item):
        send_msg(st, f"COUNT {item}")
        return int(st.line().split()[2])

    for item in items.split(","):
        left = audit(item)  # the round's start: the stock as the server has it
        for via, n in (("b", 1), ("a", left), ("a", left - 1), ("b", 1)):
            o += 1
            send_msg(fe[via], f"ORDER {o} {item} {n}")
            got = fe[via].line()
            want = f"CONFIRMED {o}" if left >= n else f"SOLDOUT {o}"
            if got != want:
                what = "oversold" if got == f"CONFIRMED {o}" else "a wrong answer"
                sys.exit(f"{NAME}: order {o} ({n} of {item} via {via}, {left} left): "
                         f"{via} answers {got}, expected {want}: {what}")
            if got == f"CONFIRMED {o}":
                left -= n
            have = audit(item)
            if have != left:
                sys.exit(f"{NAME}: after order {o}: the stock server counts {item}={have}, expected {left}")
    log(f"all {o} orders answered as the model says")


def main(argv):
    global NAME
    mode = argv[1] if len(argv) > 1 else ""
    fixed = "--fixed" in argv
    args = [a for a in argv[2:] if a != "--fixed"]
    if mode == "stock" and len(args) == 2:
        NAME = "stock"
        stock(int(args[0]), args[1], fixed)
    elif mode == "front" and len(args) == 3:
        NAME = args[0]
        front(args[0], int(args[1]), args[2])
    elif mode == "client" and len(args) == 4:
        NAME = "client"
        client(args[0], args[1], args[2], args[3])
    else:
        sys.exit("usage: stock1 stock PORT ITEM=N,... [--fixed] | front NAME PORT STOCK | client A B STOCK ITEM,...")


if __name__ == "__main__":
    main(sys.argv)
