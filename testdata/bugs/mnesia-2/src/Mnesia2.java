// mnesia-2: a node-down notice taken as a commit ack lets a deleted record
// come back when the replica restarts.
//
//   Mnesia2 coord PORT R1 R2 [--fixed]
//   Mnesia2 replica NAME PORT COORD
//   Mnesia2 client COORD R1 R2
//
// The client deletes k through the coordinator, which sends DEL to r2 first,
// then r1, and waits for both acks. When r1 has applied it tells the client,
// which then restarts r2 (a rolling restart). A restarting r2 reports DOWN to
// the coordinator, reloads from its persisted copy and loses what it
// receives until the coordinator lets it REJOIN. The coordinator counts
// DOWN as r2's ack. If DEL to r2 is delayed past DEL to r1, APPLIED and
// RESTART, r2 drops it while down, the transaction still commits, and the
// client reads k back from r2. --fixed: on DOWN the coordinator re-sends
// the pending DEL after REJOIN and waits for the real ack.
import java.io.*;
import java.net.*;
import java.util.*;

public class Mnesia2 {
    static final int TIMEOUT_MS = 5000;

    static Socket dial(String hostPort) throws Exception {
        String[] hp = hostPort.split(":");
        for (int i = 0; i < 500; i++) {
            try {
                Socket s = new Socket(hp[0], Integer.parseInt(hp[1]));
                s.setTcpNoDelay(true);
                return s;
            } catch (IOException e) { // refused, or the name not resolvable yet
                Thread.sleep(10);
            }
        }
        throw new IOException("cannot connect to " + hostPort);
    }

    static ServerSocket listen(int port) throws IOException {
        ServerSocket l = new ServerSocket();
        l.setReuseAddress(true);
        l.bind(new InetSocketAddress(port));
        return l;
    }

    /** A line-oriented connection; send is safe from several threads. */
    static final class Conn {
        final Socket s;
        final BufferedReader in;
        final PrintWriter out;

        Conn(Socket s) throws IOException {
            this.s = s;
            s.setTcpNoDelay(true);
            in = new BufferedReader(new InputStreamReader(s.getInputStream()));
            out = new PrintWriter(new OutputStreamWriter(s.getOutputStream()), false);
        }

        synchronized void send(String line) {
            out.print(line + "\n");
            out.flush();
        }

        String recv() throws IOException {
            String l = in.readLine();
            if (l == null) throw new EOFException("connection closed");
            return l;
        }
    }

    static void log(String who, String what) {
        System.out.println(who + ": " + what);
        System.out.flush();
    }

    // ---- replica ----------------------------------------------------------
    static void replica(String name, int port, String coord) throws Exception {
        Map<String, String> store = new HashMap<>(), persisted = new HashMap<>();
        store.put("k", "v");
        persisted.put("k", "v");
        Object mu = new Object();
        boolean[] down = {false};
        Conn[] client = {null};
        Conn[] toCoord = {null};
        List<String> unreported = new ArrayList<>(); // APPLIED notes waiting for the client's HELLO
        ServerSocket l = listen(port);
        if (name.equals("r2")) toCoord[0] = new Conn(dial(coord));
        List<Conn> conns = new ArrayList<>(); // every peer, for the drain on RESTART
        while (true) {
            Conn c = new Conn(l.accept());
            synchronized (mu) {
                conns.add(c);
            }
            Thread t = new Thread(() -> {
                try {
                    while (true) {
                        String line = c.recv();
                        synchronized (mu) {
                            log(name, line);
                            String[] w = line.split(" ");
                            mu.notifyAll(); // a RESTART may be draining
                            switch (w[0]) {
                                case "HELLO": // the client
                                    client[0] = c;
                                    for (String k : unreported) c.send("APPLIED " + k);
                                    unreported.clear();
                                    break;
                                case "DEL":
                                    if (down[0]) {
                                        log(name, "down: lost " + line);
                                        break;
                                    }
                                    store.remove(w[1]);
                                    persisted.remove(w[1]);
                                    c.send("ACK " + w[2] + " " + name);
                                    if (!name.equals("r1")) break;
                                    if (client[0] != null) client[0].send("APPLIED " + w[1]);
                                    else unreported.add(w[1]);
                                    break;
                                case "RESTART":
                                    // What already reached this node is handled before it
                                    // goes down; only what arrives later is lost.
                                    while (unread(conns, c)) mu.wait();
                                    down[0] = true;
                                    toCoord[0].send("DOWN " + name);
                                    store.clear();
                                    store.putAll(persisted); // what survives a crash
                                    break;
                                case "REJOIN":
                                    down[0] = false;
                                    if (client[0] != null) client[0].send("UP");
                                    break;
                                case "GET":
                                    String v = store.get(w[1]);
                                    c.send(v == null ? "NONE " + w[1] : "VAL " + w[1] + " " + v);
                                    break;
                            }
                        }
                    }
                } catch (IOException | InterruptedException e) {
                    synchronized (mu) { // peer gone
                        conns.remove(c);
                    }
                }
            });
            t.start();
        }
    }

    /** Whether a peer other than self has bytes this node received but not yet read. */
    static boolean unread(List<Conn> conns, Conn self) {
        for (Conn o : conns) {
            try {
                if (o != self && o.s.getInputStream().available() > 0) return true;
            } catch (IOException e) {
                // closed: nothing to drain
            }
        }
        return false;
    }

    // ---- coordinator --------------------------------------------------------
    static void coord(int port, String r1, String r2, boolean fixed) throws Exception {
        ServerSocket l = listen(port);
        Conn c1 = new Conn(dial(r1)), c2 = new Conn(dial(r2));
        Object mu = new Object();
        Set<String> acks = new HashSet<>();
        String[] pending = {null}; // the DEL line awaiting acks
        Conn[] requester = {null};
        Runnable maybeCommit = () -> {
            if (pending[0] != null && acks.contains("r1") && acks.contains("r2")) {
                String tx = pending[0].split(" ")[2];
                pending[0] = null;
                log("coord", "commit " + tx);
                requester[0].send("OK " + tx);
            }
        };
        // r2's notices (DOWN) arrive on the connection r2 opened to us.
        java.util.function.Consumer<Conn> reader = c -> {
            try {
                while (true) {
                    String line = c.recv();
                    log("coord", line);
                    String[] w = line.split(" ");
                    synchronized (mu) {
                        switch (w[0]) {
                            case "DEL": { // from the client
                                requester[0] = c;
                                String tx = "t1";
                                pending[0] = "DEL " + w[1] + " " + tx;
                                acks.clear();
                                c2.send(pending[0]);
                                c1.send(pending[0]);
                                break;
                            }
                            case "ACK":
                                if (pending[0] != null && pending[0].endsWith(" " + w[1])) acks.add(w[2]);
                                maybeCommit.run();
                                break;
                            case "DOWN":
                                c2.send("REJOIN");
                                if (pending[0] != null) {
                                    if (fixed) {
                                        c2.send(pending[0]); // redo it on the restarted replica
                                    } else {
                                        acks.add(w[1]); // the bug: down taken as committed
                                        maybeCommit.run();
                                    }
                                }
                                break;
                        }
                    }
                }
            } catch (IOException e) {
                // peer gone
            }
        };
        new Thread(() -> reader.accept(c1)).start();
        new Thread(() -> reader.accept(c2)).start();
        while (true) {
            Conn c = new Conn(l.accept());
            new Thread(() -> reader.accept(c)).start();
        }
    }

    // ---- client ---------------------------------------------------------------
    static String expect(Conn c, String prefix) throws IOException {
        while (true) {
            String line = c.recv();
            log("client", "got " + line);
            if (line.startsWith(prefix)) return line;
        }
    }

    static int client(String coord, String r1, String r2) throws Exception {
        Conn co = new Conn(dial(coord)), c1 = new Conn(dial(r1)), c2 = new Conn(dial(r2));
        for (Conn c : new Conn[] {co, c1, c2}) c.s.setSoTimeout(TIMEOUT_MS);
        c1.send("HELLO");
        c2.send("HELLO");
        co.send("DEL k");
        try {
            expect(c1, "APPLIED k");
            c2.send("RESTART"); // r1 has it: restart r2
            expect(c2, "UP");
            expect(co, "OK");
            c2.send("GET k");
            String got = expect(c2, "");
            if (got.startsWith("VAL")) {
                log("client", "deleted record came back: " + got);
                return 1;
            }
            log("client", "k stays deleted");
            return 0;
        } catch (SocketTimeoutException e) {
            log("client", "timed out after " + TIMEOUT_MS + " ms");
            return 1;
        }
    }

    public static void main(String[] a) throws Exception {
        if (a.length >= 4 && a[0].equals("coord")) {
            coord(Integer.parseInt(a[1]), a[2], a[3], a.length == 5 && a[4].equals("--fixed"));
        } else if (a.length == 4 && a[0].equals("replica")) {
            replica(a[1], Integer.parseInt(a[2]), a[3]);
        } else if (a.length == 4 && a[0].equals("client")) {
            System.exit(client(a[1], a[2], a[3]));
        } else {
            System.err.println("usage: Mnesia2 coord PORT R1 R2 [--fixed] | Mnesia2 replica NAME PORT COORD | Mnesia2 client COORD R1 R2");
            System.exit(2);
        }
    }
}
