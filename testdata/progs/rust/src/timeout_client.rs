// timeout_client HOST PORT MS: send "ping", wait at most MS ms for a reply
// with a read timeout; exit 3 on timeout.
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        eprintln!("usage: timeout_client HOST PORT MS");
        std::process::exit(2);
    }
    let ms: u64 = args[3].parse().unwrap();
    let mut c = TcpStream::connect(format!("{}:{}", args[1], args[2])).unwrap_or_else(|e| {
        eprintln!("connect: {e}");
        std::process::exit(1)
    });
    c.set_read_timeout(Some(Duration::from_millis(ms))).unwrap();
    let start = Instant::now();
    c.write_all(b"ping").unwrap();
    let mut buf = [0u8; 64];
    let r = c.read(&mut buf);
    let elapsed = start.elapsed().as_millis();
    match r {
        Ok(n) if n > 0 => println!("reply elapsed_ms={elapsed}"),
        Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::TimedOut => {
            println!("timeout elapsed_ms={elapsed}");
            std::process::exit(3);
        }
        Ok(_) => {
            eprintln!("connection closed");
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("read: {e}");
            std::process::exit(1);
        }
    }
}
