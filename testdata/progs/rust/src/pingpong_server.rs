// pingpong_server PORT: echo server, a thread per connection.
use std::io::{Read, Write};
use std::net::TcpListener;
use std::thread;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 2 {
        eprintln!("usage: pingpong_server PORT");
        std::process::exit(2);
    }
    let l = TcpListener::bind(format!("0.0.0.0:{}", args[1])).unwrap_or_else(|e| {
        eprintln!("bind: {e}");
        std::process::exit(1)
    });
    for conn in l.incoming() {
        let mut c = match conn {
            Ok(c) => c,
            Err(e) => {
                eprintln!("accept: {e}");
                std::process::exit(1)
            }
        };
        thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                match c.read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        if c.write_all(&buf[..n]).is_err() {
                            return;
                        }
                    }
                }
            }
        });
    }
}
