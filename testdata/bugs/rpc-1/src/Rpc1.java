// rpc-1: a reply that arrives after its requester's read timeout is taken as
// the answer to the next request on the same connection.
//
//   Rpc1 server PORT KEY=VALUE...
//   Rpc1 client SERVER KEY=VALUE... [--fixed]
//
// The server is a small key-value store with a line protocol in the style of
// Redis or memcached: "GET k" is answered "VAL v" (or "NONE"), in order, and
// a reply does not name its request. The client reads the keys it is given
// one after another over one connection, each read bounded by a socket read
// timeout (setSoTimeout). A timed-out GET is given up - a timeout is allowed,
// the network may be slow - and the client goes on with the next key on the
// same connection. If a reply is late past that timeout, it is still on its
// way: the next GET reads it as its own answer, and every later GET reads its
// predecessor's. The client checks each value it got against the expected
// one and exits 1 on a mismatch.
//
// --fixed (client): every request carries an id ("#3 GET k"), which the
// server echoes ("#3 VAL v"); the client drops replies whose id is not the
// one it waits for. That is correct however late a reply is.
import java.io.*;
import java.net.*;
import java.util.*;

public class Rpc1 {
    /** The client's read timeout: below the 1 s lockstep may hold a message for. */
    static final int TIMEOUT_MS = 200;
    /** How often the client reports that the server's greeting is late: a cold JVM is slow. */
    static final int HELLO_TIMEOUT_MS = 5000;

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

    static void log(String who, String what) {
        System.out.println(who + ": " + what);
        System.out.flush();
    }

    /** Parses KEY=VALUE arguments, in order. */
    static LinkedHashMap<String, String> pairs(String[] a, int from) {
        LinkedHashMap<String, String> m = new LinkedHashMap<>();
        for (int i = from; i < a.length; i++) {
            if (a[i].startsWith("--")) continue;
            int eq = a[i].indexOf('=');
            if (eq <= 0) throw new IllegalArgumentException("want KEY=VALUE, got " + a[i]);
            m.put(a[i].substring(0, eq), a[i].substring(eq + 1));
        }
        return m;
    }

    // ---- server ---------------------------------------------------------------
    static void server(int port, Map<String, String> store) throws Exception {
        ServerSocket l = new ServerSocket();
        l.setReuseAddress(true);
        l.bind(new InetSocketAddress(port));
        while (true) {
            Socket s = l.accept();
            new Thread(() -> serve(s, store)).start();
        }
    }

    /** Answers one connection's requests in order; a "#id " prefix is echoed. */
    static void serve(Socket s, Map<String, String> store) {
        try (s) {
            s.setTcpNoDelay(true);
            BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream()));
            Writer out = new OutputStreamWriter(s.getOutputStream());
            String line;
            while ((line = in.readLine()) != null) {
                log("server", line);
                String tag = "";
                if (line.startsWith("#")) {
                    int sp = line.indexOf(' ');
                    tag = line.substring(0, sp + 1);
                    line = line.substring(sp + 1);
                }
                String[] w = line.split(" ");
                String reply;
                if (w.length == 1 && w[0].equals("PING")) {
                    reply = "PONG";
                } else if (w.length == 2 && w[0].equals("GET")) {
                    String v;
                    synchronized (store) {
                        v = store.get(w[1]);
                    }
                    reply = v == null ? "NONE" : "VAL " + v;
                } else {
                    reply = "ERR bad request";
                }
                out.write(tag + reply + "\n");
                out.flush();
            }
        } catch (IOException e) {
            log("server", "connection: " + e.getMessage());
        }
    }

    // ---- client ---------------------------------------------------------------
    /** The client's connection: one request at a time, each read bounded by the timeout. */
    static final class Client {
        final BufferedReader in;
        final Writer out;
        final boolean fixed;
        int next = 1;

        Client(Socket s, boolean fixed) throws IOException {
            in = new BufferedReader(new InputStreamReader(s.getInputStream()));
            out = new OutputStreamWriter(s.getOutputStream());
            this.fixed = fixed;
            // A first round trip with a generous timeout: natively, the server's
            // connection thread is then running and its classes are loaded, so
            // only a slow network, not a cold JVM, makes a GET time out.
            // The greeting is awaited however late it is: nothing else is in
            // flight yet, so waiting on cannot mix replies up.
            s.setSoTimeout(HELLO_TIMEOUT_MS);
            out.write("PING\n");
            out.flush();
            String pong;
            while (true) {
                try {
                    pong = in.readLine();
                    break;
                } catch (SocketTimeoutException e) {
                    log("client", "no PONG in " + HELLO_TIMEOUT_MS + " ms, waiting on");
                }
            }
            if (!"PONG".equals(pong)) throw new IOException("bad greeting: " + pong);
            s.setSoTimeout(TIMEOUT_MS);
        }

        /** Returns key's value, null if the server has none; throws SocketTimeoutException. */
        String get(String key) throws IOException {
            String id = "#" + next++ + " ";
            out.write((fixed ? id : "") + "GET " + key + "\n");
            out.flush();
            while (true) {
                String line = in.readLine();
                if (line == null) throw new EOFException("server closed the connection");
                log("client", "got " + line);
                if (fixed) {
                    if (!line.startsWith(id)) {
                        log("client", "dropping a stale reply: " + line);
                        continue;
                    }
                    line = line.substring(id.length());
                }
                if (line.equals("NONE")) return null;
                if (line.startsWith("VAL ")) return line.substring(4);
                throw new IOException("bad reply: " + line);
            }
        }
    }

    static int client(String server, Map<String, String> want, boolean fixed) throws Exception {
        Client c = new Client(dial(server), fixed);
        int wrong = 0;
        for (Map.Entry<String, String> e : want.entrySet()) {
            String got;
            try {
                got = c.get(e.getKey());
            } catch (SocketTimeoutException t) {
                // The reply may still come; this client gives the key up.
                log("client", "GET " + e.getKey() + ": no reply in " + TIMEOUT_MS + " ms, skipped");
                continue;
            }
            if (e.getValue().equals(got)) {
                log("client", e.getKey() + " = " + got);
            } else {
                log("client", "GET " + e.getKey() + " returned " + got + ", want " + e.getValue() + " (a stale reply)");
                wrong++;
            }
        }
        return wrong == 0 ? 0 : 1;
    }

    public static void main(String[] a) throws Exception {
        boolean fixed = Arrays.asList(a).contains("--fixed");
        if (a.length >= 2 && a[0].equals("server")) {
            server(Integer.parseInt(a[1]), pairs(a, 2));
        } else if (a.length >= 3 && a[0].equals("client")) {
            System.exit(client(a[1], pairs(a, 2), fixed));
        } else {
            System.err.println("usage: Rpc1 server PORT KEY=VALUE... | Rpc1 client SERVER KEY=VALUE... [--fixed]");
            System.exit(2);
        }
    }
}
