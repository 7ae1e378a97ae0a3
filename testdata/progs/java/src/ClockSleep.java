// ClockSleep N: sleep 1 s N times, printing monotonic and real clocks.
public class ClockSleep {
    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 10;
        long start = System.nanoTime();
        for (int i = 1; i <= n; i++) {
            Thread.sleep(1000);
            long mono = System.nanoTime() - start;
            long real = System.currentTimeMillis() * 1_000_000L;
            System.out.println("i=" + i + " mono_ns=" + mono + " real_ns=" + real);
        }
    }
}
