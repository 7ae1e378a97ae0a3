// tpc-1 (Rust, std only): a lock server that serves each connection on a
// thread of its own, and a client that trusts its LOCK to be first. See
// README.md.
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("server") if args.len() == 3 => server(&args[2]),
        Some("client") if args.len() == 6 => client(&args[2], &args[3], &args[4], &args[5]),
        _ => {
            eprintln!("usage: tpc1 server PORT | tpc1 client NAME HOST PORT retry|ignore");
            std::process::exit(2);
        }
    }
}

fn server(port: &str) {
    let l = TcpListener::bind(format!("0.0.0.0:{port}")).unwrap_or_else(|e| {
        eprintln!("bind: {e}");
        std::process::exit(1)
    });
    println!("listening on {port}");
    let owner: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
    for conn in l.incoming() {
        let c = match conn {
            Ok(c) => c,
            Err(e) => {
                eprintln!("accept: {e}");
                std::process::exit(1)
            }
        };
        let owner = Arc::clone(&owner);
        thread::spawn(move || serve(c, owner));
    }
}

// serve answers one connection's lines: LOCK, WRITE and UNLOCK of one lock.
fn serve(c: TcpStream, owner: Arc<Mutex<Option<String>>>) {
    let mut w = c.try_clone().expect("clone");
    for line in BufReader::new(c).lines() {
        let Ok(line) = line else { return };
        println!("got {line}");
        let (cmd, name) = line.split_once(' ').unwrap_or((&line, ""));
        let mut o = owner.lock().unwrap();
        let reply = match cmd {
            "LOCK" if o.is_none() => {
                *o = Some(name.to_string());
                format!("GRANTED {name}")
            }
            "LOCK" => format!("BUSY {name}"),
            "WRITE" if o.as_deref() == Some(name) => format!("WROTE {name}"),
            "WRITE" => panic!("write by {name} without the lock"),
            "UNLOCK" => {
                *o = None;
                format!("UNLOCKED {name}")
            }
            _ => format!("ERR {line}"),
        };
        drop(o);
        println!("sent {reply}");
        // One write per line: a line is one message, not a line and a newline.
        if w.write_all(format!("{reply}\n").as_bytes()).is_err() {
            return;
        }
    }
}

fn client(name: &str, host: &str, port: &str, mode: &str) {
    let c = loop {
        match TcpStream::connect(format!("{host}:{port}")) {
            Ok(c) => break c,
            Err(_) => thread::sleep(Duration::from_millis(10)),
        }
    };
    let mut w = c.try_clone().expect("clone");
    let mut r = BufReader::new(c);
    let mut ask = |req: String| -> String {
        w.write_all(format!("{req}\n").as_bytes()).expect("send");
        println!("sent {req}");
        let mut reply = String::new();
        if r.read_line(&mut reply).unwrap_or(0) == 0 {
            eprintln!("server closed the connection after {req}");
            std::process::exit(1);
        }
        let reply = reply.trim_end().to_string();
        println!("got {reply}");
        reply
    };
    loop {
        let reply = ask(format!("LOCK {name}"));
        // The bug: an "ignore" client trusts that its LOCK came first.
        if reply.starts_with("GRANTED") || mode == "ignore" {
            break;
        }
        thread::sleep(Duration::from_millis(10));
    }
    ask(format!("WRITE {name}"));
    ask(format!("UNLOCK {name}"));
    println!("done");
}
