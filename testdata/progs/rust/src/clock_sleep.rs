// clock_sleep N: sleep 1 s N times, printing monotonic and real clocks.
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn main() {
    let n: u32 = std::env::args().nth(1).map(|s| s.parse().unwrap()).unwrap_or(10);
    let start = Instant::now();
    for i in 1..=n {
        std::thread::sleep(Duration::from_secs(1));
        let mono = start.elapsed().as_nanos();
        let real = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos();
        println!("i={i} mono_ns={mono} real_ns={real}");
    }
}
