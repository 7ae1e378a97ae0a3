// PingPongServer PORT: echo server, a thread per connection.
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;

public class PingPongServer {
    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: PingPongServer PORT");
            System.exit(1);
        }
        ServerSocket l = new ServerSocket();
        l.setReuseAddress(true);
        l.bind(new InetSocketAddress("0.0.0.0", Integer.parseInt(args[0])));
        for (;;) {
            Socket c = l.accept();
            new Thread(() -> serve(c)).start();
        }
    }

    static void serve(Socket c) {
        try (c) {
            InputStream in = c.getInputStream();
            OutputStream out = c.getOutputStream();
            byte[] buf = new byte[4096];
            int n;
            while ((n = in.read(buf)) > 0) {
                out.write(buf, 0, n);
            }
        } catch (Exception e) {
            // the client went away
        }
    }
}
