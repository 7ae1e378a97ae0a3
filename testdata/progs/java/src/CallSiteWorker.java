// CallSiteWorker PORT [helper]: for the call-site tests. Accepts one connection and reads
// it on a thread named "lock-worker" (the name explain shows), printing "got LINE" for
// each line (through a socket stream: the JDK's libnio), then "done"; with "helper", each
// line is read by a small static method (nextLine) the JIT may inline into its caller.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

public class CallSiteWorker {
    public static void main(String[] args) throws Exception {
        ServerSocket server = new ServerSocket();
        server.setReuseAddress(true);
        server.bind(new java.net.InetSocketAddress(Integer.parseInt(args[0])));
        Socket conn = server.accept();
        Thread worker = new Thread(args.length > 1 ? () -> serveByHelper(conn) : () -> serve(conn), "lock-worker");
        worker.start();
        worker.join();
        server.close();
        System.out.println("done");
        System.out.flush();
    }

    static void serve(Socket conn) {
        try (conn) {
            BufferedReader in = new BufferedReader(new InputStreamReader(conn.getInputStream(), StandardCharsets.UTF_8));
            for (String line; (line = in.readLine()) != null; ) {
                System.out.println("got " + line);
                System.out.flush();
            }
        } catch (Exception e) {
            e.printStackTrace();
            System.exit(1);
        }
    }

    // serveByHelper is serve reading through nextLine, a method small enough
    // to be inlined where it is called: a compiled frame of serveByHelper
    // then holds nextLine's call of readLine.
    static void serveByHelper(Socket conn) {
        try (conn) {
            BufferedReader in = new BufferedReader(new InputStreamReader(conn.getInputStream(), StandardCharsets.UTF_8));
            for (String line; (line = nextLine(in)) != null; ) {
                System.out.println("got " + line);
                System.out.flush();
            }
        } catch (Exception e) {
            e.printStackTrace();
            System.exit(1);
        }
    }

    static String nextLine(BufferedReader in) throws java.io.IOException {
        return in.readLine();
    }

    // With -Dcallsite.reload=true, a line on stdin loads OtherReader, a
    // BufferedReader overriding readLine, and prints "loaded": compiled code
    // that inlined BufferedReader.readLine (the only one until then) is
    // invalidated, and a frame of it waiting in a read is deoptimized.
    static {
        if (Boolean.getBoolean("callsite.reload")) {
            Thread reloader = new Thread(() -> {
                try {
                    new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
                    Class.forName("CallSiteWorker$OtherReader");
                    System.out.println("loaded");
                    System.out.flush();
                } catch (Exception e) {
                    e.printStackTrace();
                    System.exit(1);
                }
            }, "reloader");
            reloader.setDaemon(true);
            reloader.start();
        }
    }

    static class OtherReader extends BufferedReader {
        OtherReader(java.io.Reader in) {
            super(in);
        }

        @Override
        public String readLine() {
            return "";
        }
    }
}
