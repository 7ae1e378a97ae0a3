// pool-1: an application writes a job's result through an asynchronous
// client and hands the job to another thread before the write is
// acknowledged; that thread reads the result over another connection of
// the pool and finds nothing.
//
//   Pool1 server PORT              a key-value store, one event loop
//   Pool1 app SERVER N [--fixed]   a producer and a consumer thread, N jobs
//
// The app's client keeps a pool of two connections, each pipelined: a
// request returns a future at once, and a reader thread per connection
// completes the futures in order as the answers come (the shape of Lettuce,
// or of any async driver). The pool gives each thread a connection of its
// own. The producer stores each job's result (PUT resultJ doneJ) and, not
// waiting for the future, puts the job on an in-memory queue; the consumer
// takes it and reads the result (GET resultJ). Read-your-writes holds on
// one connection, not across two: if the GET reaches the store first, it
// answers NONE and the app exits 1.
//
// The store serves its connections from one thread with a selector, in the
// order the connections were opened when several have data: the producer's
// connection is the older one, so natively a PUT that has arrived is always
// served before a GET beside it.
//
// --fixed (app): the producer waits for the PUT's OK before it hands the
// job on.
import java.io.*;
import java.net.*;
import java.nio.ByteBuffer;
import java.nio.channels.*;
import java.nio.charset.StandardCharsets;
import java.util.*;
import java.util.concurrent.*;

public class Pool1 {
    static void log(String who, String what) {
        System.out.println(who + ": " + what);
        System.out.flush();
    }

    // ---- store ----------------------------------------------------------------
    /** One client connection of the store: its channel and the bytes of an unfinished line. */
    static final class Conn {
        final SocketChannel ch;
        final StringBuilder partial = new StringBuilder();

        Conn(SocketChannel ch) {
            this.ch = ch;
        }
    }

    static void store(int port) throws IOException {
        Map<String, String> kv = new HashMap<>();
        Selector sel = Selector.open();
        ServerSocketChannel l = ServerSocketChannel.open();
        l.setOption(StandardSocketOptions.SO_REUSEADDR, true);
        l.bind(new InetSocketAddress(port));
        l.configureBlocking(false);
        l.register(sel, SelectionKey.OP_ACCEPT);
        List<Conn> conns = new ArrayList<>(); // in the order they were opened
        ByteBuffer buf = ByteBuffer.allocate(4096);
        log("store", "listening on " + port);
        while (true) {
            sel.select();
            Set<SelectionKey> ready = sel.selectedKeys();
            for (SelectionKey k : ready) {
                if (k.isAcceptable()) {
                    SocketChannel c = l.accept();
                    if (c == null) continue;
                    c.configureBlocking(false);
                    c.setOption(StandardSocketOptions.TCP_NODELAY, true);
                    Conn conn = new Conn(c);
                    c.register(sel, SelectionKey.OP_READ, conn);
                    conns.add(conn);
                }
            }
            // Oldest connection first (the selector's own order is a hash set's).
            for (Iterator<Conn> it = conns.iterator(); it.hasNext(); ) {
                Conn conn = it.next();
                SelectionKey k = conn.ch.keyFor(sel);
                if (!ready.contains(k) || !k.isReadable()) continue;
                buf.clear();
                int n = conn.ch.read(buf);
                if (n < 0) {
                    k.cancel();
                    conn.ch.close();
                    it.remove();
                    continue;
                }
                conn.partial.append(new String(buf.array(), 0, n, StandardCharsets.UTF_8));
                int nl;
                while ((nl = conn.partial.indexOf("\n")) >= 0) {
                    String req = conn.partial.substring(0, nl);
                    conn.partial.delete(0, nl + 1);
                    String ans = answer(kv, req);
                    log("store", req + " -> " + ans);
                    conn.ch.write(ByteBuffer.wrap((ans + "\n").getBytes(StandardCharsets.UTF_8)));
                }
            }
            ready.clear();
        }
    }

    static String answer(Map<String, String> kv, String req) {
        String[] w = req.split(" ");
        if (w.length == 3 && w[0].equals("PUT")) {
            kv.put(w[1], w[2]);
            return "OK";
        }
        if (w.length == 2 && w[0].equals("GET")) {
            String v = kv.get(w[1]);
            return v == null ? "NONE" : "VAL " + v;
        }
        return "ERR " + req;
    }

    // ---- app ------------------------------------------------------------------
    /** A pipelined connection: requests go out in order, answers complete their futures in order. */
    static final class Pipe {
        final OutputStream out;
        final BlockingQueue<CompletableFuture<String>> waiting = new LinkedBlockingQueue<>();

        Pipe(Socket s, String name) throws IOException {
            out = s.getOutputStream();
            BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream()));
            Thread r = new Thread(() -> {
                try {
                    String line;
                    while ((line = in.readLine()) != null) waiting.take().complete(line);
                } catch (IOException | InterruptedException e) {
                    log("app", name + ": " + e);
                }
            }, name + "-reader");
            r.setDaemon(true);
            r.start();
        }

        synchronized CompletableFuture<String> call(String req) throws IOException {
            CompletableFuture<String> f = new CompletableFuture<>();
            waiting.add(f);
            out.write((req + "\n").getBytes(StandardCharsets.UTF_8));
            out.flush();
            return f;
        }
    }

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

    static int app(String server, int n, boolean fixed) throws Exception {
        // The pool: one connection per thread, the producer's opened first.
        Pipe producerConn = new Pipe(dial(server), "conn0");
        Pipe consumerConn = new Pipe(dial(server), "conn1");
        BlockingQueue<Integer> handoff = new LinkedBlockingQueue<>();
        Thread producer = new Thread(() -> {
            try {
                for (int j = 1; j <= n; j++) {
                    CompletableFuture<String> put = producerConn.call("PUT result" + j + " done" + j);
                    log("producer", "stored result" + j);
                    // The bug: the job goes on before the store has the result.
                    if (fixed && !put.get().equals("OK")) throw new IOException("PUT answered " + put.get());
                    handoff.put(j);
                }
            } catch (Exception e) {
                log("producer", "failed: " + e);
                System.exit(2);
            }
        }, "producer");
        producer.start();
        for (int j = 1; j <= n; j++) {
            int job = handoff.take();
            String got = consumerConn.call("GET result" + job).get();
            log("consumer", "job " + job + ": " + got);
            if (!got.equals("VAL done" + job)) {
                System.err.println("consumer: job " + job + "'s result is missing: GET result" + job + " answered " + got);
                return 1;
            }
        }
        producer.join();
        log("app", "all " + n + " results read back");
        return 0;
    }

    public static void main(String[] a) throws Exception {
        if (a.length == 2 && a[0].equals("server")) {
            store(Integer.parseInt(a[1]));
        } else if ((a.length == 3 || a.length == 4 && a[3].equals("--fixed")) && a[0].equals("app")) {
            System.exit(app(a[1], Integer.parseInt(a[2]), a.length == 4));
        } else {
            System.err.println("usage: Pool1 server PORT | Pool1 app SERVER N [--fixed]");
            System.exit(2);
        }
    }
}
