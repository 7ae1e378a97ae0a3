// callsite_lines PORT: for the call-site tests. Accepts one connection
// and reads it line by line with std's lines(), printing "got LINE" for
// each, then "done N". Built as a debug build (as cargo build makes),
// std's Lines::next stays out of line: a read's first frame past libc is
// std's generic, compiled into this crate, and serve_commands is further
// up the stack.
use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};

#[inline(never)]
fn serve_commands(conn: TcpStream) -> usize {
    let mut n = 0;
    for line in BufReader::new(conn).lines() {
        let line = line.expect("read");
        println!("got {}", line);
        n += 1;
    }
    n
}

fn main() {
    let port = std::env::args().nth(1).expect("usage: callsite_lines PORT");
    let listener = TcpListener::bind(("0.0.0.0", port.parse::<u16>().expect("port"))).expect("bind");
    let (conn, _) = listener.accept().expect("accept");
    let n = serve_commands(conn);
    println!("done {}", n);
}
