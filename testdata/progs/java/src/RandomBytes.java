// RandomBytes: 16 bytes from SecureRandom (NativePRNGNonBlocking) and 16
// read from /dev/urandom.
import java.io.FileInputStream;
import java.security.SecureRandom;

public class RandomBytes {
    static String hex(byte[] b) {
        StringBuilder sb = new StringBuilder();
        for (byte x : b) sb.append(String.format("%02x", x));
        return sb.toString();
    }

    public static void main(String[] args) throws Exception {
        byte[] b = new byte[16];
        SecureRandom.getInstance("NativePRNGNonBlocking").nextBytes(b);
        System.out.println("getrandom=" + hex(b));
        try (FileInputStream f = new FileInputStream("/dev/urandom")) {
            if (f.readNBytes(b, 0, 16) != 16) throw new Exception("short read");
        }
        System.out.println("urandom=" + hex(b));
    }
}
