// pingpong_client HOST PORT ROUNDS SIZE: ROUNDS round trips of SIZE bytes.
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

fn dial(addr: &str) -> TcpStream {
    for _ in 0..500 {
        match TcpStream::connect(addr) {
            Ok(c) => return c,
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                std::thread::sleep(Duration::from_millis(10))
            }
            Err(e) => {
                eprintln!("connect {addr}: {e}");
                std::process::exit(1)
            }
        }
    }
    eprintln!("connect {addr}: refused");
    std::process::exit(1)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 5 {
        eprintln!("usage: pingpong_client HOST PORT ROUNDS SIZE");
        std::process::exit(2);
    }
    let rounds: usize = args[3].parse().unwrap();
    let size: usize = args[4].parse().unwrap();
    let mut c = dial(&format!("{}:{}", args[1], args[2]));
    c.set_nodelay(true).ok();
    let msg = vec![b'x'; size];
    let mut buf = vec![0u8; size];
    for r in 0..rounds {
        if let Err(e) = c.write_all(&msg).and_then(|_| c.read_exact(&mut buf)) {
            eprintln!("round {r}: {e}");
            std::process::exit(1);
        }
    }
    println!("done {rounds}");
}
