// TcpSmall: a server thread and a client thread in one JVM exchange five
// lines over loopback, with socket timeouts and sleeps in between.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;

public class TcpSmall {
    public static void main(String[] args) throws Exception {
        ServerSocket l = new ServerSocket(0, 8, InetAddress.getLoopbackAddress());
        l.setSoTimeout(5000);
        int port = l.getLocalPort();
        Thread server = new Thread(() -> {
            try (Socket c = l.accept()) {
                c.setSoTimeout(5000);
                BufferedReader in = new BufferedReader(new InputStreamReader(c.getInputStream()));
                PrintWriter out = new PrintWriter(c.getOutputStream(), true);
                String line;
                while ((line = in.readLine()) != null) out.println(line);
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        final boolean[] ok = {false};
        Thread client = new Thread(() -> {
            try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port)) {
                s.setSoTimeout(5000);
                BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream()));
                PrintWriter out = new PrintWriter(s.getOutputStream(), true);
                for (int i = 0; i < 5; i++) {
                    out.println("line " + i);
                    if (!("line " + i).equals(in.readLine())) throw new Exception("bad echo");
                    Thread.sleep(100);
                }
                ok[0] = true;
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        server.start();
        client.start();
        client.join();
        server.join();
        System.out.println(ok[0] ? "ok" : "failed");
        System.exit(ok[0] ? 0 : 1);
    }
}
