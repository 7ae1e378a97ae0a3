// PingPongClient HOST PORT ROUNDS SIZE: ROUNDS round trips of SIZE bytes.
import java.io.DataInputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.Socket;
import java.util.Arrays;

public class PingPongClient {
    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: PingPongClient HOST PORT ROUNDS SIZE");
            System.exit(1);
        }
        int rounds = Integer.parseInt(args[2]), size = Integer.parseInt(args[3]);
        Socket s = null;
        for (int i = 0; s == null; i++) {
            try {
                s = new Socket(args[0], Integer.parseInt(args[1]));
            } catch (ConnectException e) {
                if (i == 500) throw e;
                Thread.sleep(10);
            }
        }
        s.setTcpNoDelay(true);
        byte[] msg = new byte[size];
        Arrays.fill(msg, (byte) 'x');
        byte[] buf = new byte[size];
        OutputStream out = s.getOutputStream();
        DataInputStream in = new DataInputStream(s.getInputStream());
        for (int r = 0; r < rounds; r++) {
            out.write(msg);
            in.readFully(buf);
        }
        System.out.println("done " + rounds);
        s.close();
    }
}
