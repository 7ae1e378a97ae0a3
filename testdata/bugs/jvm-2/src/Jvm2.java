// jvm-2: a web shop's checkout submits an order to the order service
// without waiting for it (an asynchronous client: the call returns a
// future nobody waits on) and then asks the payment service to charge it.
// The payment service confirms the order with the order service first, on
// a connection of its own: if that CONFIRM overtakes the CREATE, the order
// is unknown and a good payment is declined.
//
//   Jvm2 orders PORT                     the order service, one event loop
//   Jvm2 payments PORT ORDERS            the payment service
//   Jvm2 app ORDERS PAYMENTS N [--fixed] checks out N orders, one at a time
//
// Orders: CREATE id amount -> CREATED id; CONFIRM id amount -> CONFIRMED id
// when the order exists with that amount and is unpaid (it is then paid),
// else UNKNOWN id. One thread with a selector; when several connections
// have data it serves them in the order they were opened.
//
// Payments: PAY id amount -> CONFIRM id amount to the order service, then
// CHARGED id amount, or DECLINED id unknown-order. A thread per
// connection; its connection to the order service is opened at the first
// payment (so the app's, opened at its start, is the older one).
//
// The app, for each order: a new id (a random UUID), CREATE on its
// pipelined connection to the order service (a reader thread completes
// the futures in order), then PAY, waiting for the answer. A declined
// payment is logged with a timestamp and the order's id, as a service's
// error log would have it: exit 1. Both differ from run to run.
//
// --fixed (app): waits for CREATED before it asks for the payment.
import java.io.*;
import java.net.*;
import java.nio.ByteBuffer;
import java.nio.channels.*;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.*;
import java.util.concurrent.*;

public class Jvm2 {
    static void log(String who, String what) {
        System.out.println(who + ": " + what);
        System.out.flush();
    }

    // ---- order service ----------------------------------------------------------
    /** One client connection of the order service: its channel and an unfinished line. */
    static final class Conn {
        final SocketChannel ch;
        final StringBuilder partial = new StringBuilder();

        Conn(SocketChannel ch) {
            this.ch = ch;
        }
    }

    /** An order: its amount, and whether it was paid. */
    static final class Order {
        final long amount;
        boolean paid;

        Order(long amount) {
            this.amount = amount;
        }
    }

    static void orders(int port) throws IOException {
        Map<String, Order> orders = new HashMap<>();
        Selector sel = Selector.open();
        ServerSocketChannel l = ServerSocketChannel.open();
        l.setOption(StandardSocketOptions.SO_REUSEADDR, true);
        l.bind(new InetSocketAddress(port));
        l.configureBlocking(false);
        l.register(sel, SelectionKey.OP_ACCEPT);
        List<Conn> conns = new ArrayList<>(); // in the order they were opened
        ByteBuffer buf = ByteBuffer.allocate(4096);
        log("orders", "listening on " + port);
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
                    String ans = answer(orders, req);
                    log("orders", req + " -> " + ans);
                    conn.ch.write(ByteBuffer.wrap((ans + "\n").getBytes(StandardCharsets.UTF_8)));
                }
            }
            ready.clear();
        }
    }

    static String answer(Map<String, Order> orders, String req) {
        String[] w = req.split(" ");
        if (w.length == 3 && w[0].equals("CREATE")) {
            orders.put(w[1], new Order(Long.parseLong(w[2])));
            return "CREATED " + w[1];
        }
        if (w.length == 3 && w[0].equals("CONFIRM")) {
            Order o = orders.get(w[1]);
            if (o == null || o.paid || o.amount != Long.parseLong(w[2])) return "UNKNOWN " + w[1];
            o.paid = true;
            return "CONFIRMED " + w[1];
        }
        return "ERR " + req;
    }

    // ---- payment service --------------------------------------------------------
    /** The payment service's connection to the order service, opened at the first payment. */
    static final class OrderLink {
        final String addr;
        BufferedReader in;
        OutputStream out;

        OrderLink(String addr) {
            this.addr = addr;
        }

        synchronized String confirm(String id, String amount) throws Exception {
            if (out == null) {
                Socket s = dial(addr);
                in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
                out = s.getOutputStream();
            }
            out.write(("CONFIRM " + id + " " + amount + "\n").getBytes(StandardCharsets.UTF_8));
            out.flush();
            String ans = in.readLine();
            if (ans == null) throw new IOException("the order service closed the connection");
            return ans;
        }
    }

    static void payments(int port, String ordersAddr) throws Exception {
        OrderLink link = new OrderLink(ordersAddr);
        ServerSocket l = new ServerSocket();
        l.setReuseAddress(true);
        l.bind(new InetSocketAddress(port));
        log("payments", "listening on " + port);
        while (true) {
            Socket s = l.accept();
            s.setTcpNoDelay(true);
            Thread t = new Thread(() -> {
                try (s) {
                    BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
                    OutputStream out = s.getOutputStream();
                    String req;
                    while ((req = in.readLine()) != null) {
                        String[] w = req.split(" ");
                        String ans;
                        if (w.length == 3 && w[0].equals("PAY")) {
                            String c = link.confirm(w[1], w[2]);
                            ans = c.equals("CONFIRMED " + w[1]) ? "CHARGED " + w[1] + " " + w[2] : "DECLINED " + w[1] + " unknown-order";
                        } else {
                            ans = "ERR " + req;
                        }
                        log("payments", req + " -> " + ans);
                        out.write((ans + "\n").getBytes(StandardCharsets.UTF_8));
                        out.flush();
                    }
                } catch (Exception e) {
                    log("payments", "connection failed: " + e);
                }
            }, "payments-conn");
            t.start();
        }
    }

    // ---- app --------------------------------------------------------------------
    /** A pipelined connection: requests go out in order, answers complete their futures in order. */
    static final class Pipe {
        final OutputStream out;
        final BlockingQueue<CompletableFuture<String>> waiting = new LinkedBlockingQueue<>();

        Pipe(Socket s, String name) throws IOException {
            out = s.getOutputStream();
            BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
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

    static int app(String ordersAddr, String paymentsAddr, int n, boolean fixed) throws Exception {
        Pipe orders = new Pipe(dial(ordersAddr), "orders");
        Socket ps = dial(paymentsAddr);
        BufferedReader pin = new BufferedReader(new InputStreamReader(ps.getInputStream(), StandardCharsets.UTF_8));
        OutputStream pout = ps.getOutputStream();
        List<CompletableFuture<String>> created = new ArrayList<>();
        for (int j = 1; j <= n; j++) {
            String id = UUID.randomUUID().toString();
            long amount = 1000L * j;
            CompletableFuture<String> c = orders.call("CREATE " + id + " " + amount);
            created.add(c);
            log("app", "order " + id + " submitted");
            // The bug: the payment is asked for before the order service has the order.
            if (fixed && !c.get().equals("CREATED " + id)) throw new IOException("CREATE answered " + c.get());
            pout.write(("PAY " + id + " " + amount + "\n").getBytes(StandardCharsets.UTF_8));
            pout.flush();
            String ans = pin.readLine();
            log("app", "PAY " + id + " " + amount + " -> " + ans);
            if (!("CHARGED " + id + " " + amount).equals(ans)) {
                System.err.println(Instant.now() + " ERROR checkout: order " + id + " was submitted before its payment, but the payment was declined: " + ans);
                return 1;
            }
        }
        for (CompletableFuture<String> c : created) c.get();
        log("app", "all " + n + " orders created and paid");
        return 0;
    }

    public static void main(String[] a) throws Exception {
        if (a.length == 2 && a[0].equals("orders")) {
            orders(Integer.parseInt(a[1]));
        } else if (a.length == 3 && a[0].equals("payments")) {
            payments(Integer.parseInt(a[1]), a[2]);
        } else if ((a.length == 4 || a.length == 5 && a[4].equals("--fixed")) && a[0].equals("app")) {
            System.exit(app(a[1], a[2], Integer.parseInt(a[3]), a.length == 5));
        } else {
            System.err.println("usage: Jvm2 orders PORT | Jvm2 payments PORT ORDERS | Jvm2 app ORDERS PAYMENTS N [--fixed]");
            System.exit(2);
        }
    }
}
