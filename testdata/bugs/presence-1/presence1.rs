// presence-1 (Rust, std only): a chat hub with a thread per connection
// unregisters a user by name when one of her connections ends; the old
// connection's end, handled after the user came back on a new one, removes
// the new registration. See README.md.
//
//   presence1 hub PORT [--fixed]
//   presence1 alice HUB    registers, moves to a new connection, waits for bob, says ready
//   presence1 bob HUB      registers, answers alice's ready with hi
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::process::exit;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    match a[1..] {
        ["hub", port] => hub(port, false),
        ["hub", port, "--fixed"] => hub(port, true),
        ["alice", addr] => alice(addr),
        ["bob", addr] => bob(addr),
        _ => {
            eprintln!("usage: presence1 hub PORT [--fixed] | presence1 alice HUB | presence1 bob HUB");
            exit(2)
        }
    }
}

/// A registered user: the connection she is on, and a handle to write to it.
struct Entry {
    conn: u64,
    out: TcpStream,
}

/// What the hub knows: who is on which connection, and who waits to be
/// told that a user came online.
#[derive(Default)]
struct Registry {
    users: HashMap<String, Entry>,
    watchers: HashMap<String, Vec<TcpStream>>,
}

type Shared = Arc<Mutex<Registry>>;

fn hub(port: &str, fixed: bool) {
    let l = TcpListener::bind(format!("0.0.0.0:{port}")).unwrap_or_else(|e| {
        eprintln!("hub: bind: {e}");
        exit(2)
    });
    println!("hub: listening on {port}, fixed={fixed}");
    let reg: Shared = Arc::default();
    for (id, c) in (1..).zip(l.incoming()) {
        let c = c.unwrap_or_else(|e| {
            eprintln!("hub: accept: {e}");
            exit(2)
        });
        let reg = Arc::clone(&reg);
        thread::spawn(move || serve(id, c, reg, fixed));
    }
}

fn write_line(mut out: &TcpStream, line: &str) -> bool {
    // One write per line: a line is one message.
    out.write_all(format!("{line}\n").as_bytes()).is_ok()
}

/// serve runs one connection: HELLO name, then WATCH who and SEND to
/// text, until BYE; when it ends, its user is unregistered.
fn serve(id: u64, c: TcpStream, reg: Shared, fixed: bool) {
    c.set_nodelay(true).ok();
    let out = c.try_clone().expect("clone");
    let mut name: Option<String> = None;
    for line in BufReader::new(c).lines() {
        let Ok(line) = line else { break };
        println!("hub: conn {id}: {line}");
        // Every write happens under the registry's lock: a connection's
        // lines go out in the order the hub decided them.
        let mut r = reg.lock().unwrap();
        let ok = match line.split_once(' ') {
            Some(("HELLO", who)) => {
                let ok = write_line(&out, &format!("WELCOME {who}"));
                r.users.insert(who.to_string(), Entry { conn: id, out: out.try_clone().expect("clone") });
                for w in r.watchers.remove(who).unwrap_or_default() {
                    write_line(&w, &format!("ONLINE {who}"));
                }
                name = Some(who.to_string());
                ok
            }
            Some(("WATCH", who)) if r.users.contains_key(who) => write_line(&out, &format!("ONLINE {who}")),
            Some(("WATCH", who)) => {
                r.watchers.entry(who.to_string()).or_default().push(out.try_clone().expect("clone"));
                true
            }
            Some(("SEND", rest)) => {
                let (to, text) = rest.split_once(' ').unwrap_or((rest, ""));
                let from = name.as_deref().unwrap_or("?");
                let sent = r.users.get(to).is_some_and(|e| write_line(&e.out, &format!("FROM {from} {text}")));
                write_line(&out, &format!("{} {to}", if sent { "SENT" } else { "NOUSER" }))
            }
            None if line == "BYE" => {
                write_line(&out, "BYE");
                break;
            }
            _ => write_line(&out, &format!("ERR {line}")),
        };
        if !ok {
            break;
        }
    }
    // The connection ended (BYE, or the client went away): the reader's
    // end is closed as the loop drops it, and its user is offline.
    if let Some(who) = name {
        let mut r = reg.lock().unwrap();
        if fixed && r.users.get(&who).is_some_and(|e| e.conn != id) {
            println!("hub: conn {id} ended; {who} is on conn {} now: kept", r.users[&who].conn);
        } else if r.users.remove(&who).is_some() {
            // The bug: whichever connection the name is on now.
            println!("hub: conn {id} ended; {who} unregistered");
        }
    }
}

/// A client's connection to the hub, line by line.
struct Conn {
    r: BufReader<TcpStream>,
    w: TcpStream,
}

fn connect(addr: &str) -> Conn {
    for _ in 0..500 {
        if let Ok(c) = TcpStream::connect(addr) {
            c.set_nodelay(true).ok();
            return Conn { w: c.try_clone().expect("clone"), r: BufReader::new(c) };
        }
        thread::sleep(Duration::from_millis(10));
    }
    eprintln!("cannot connect to {addr}");
    exit(2)
}

impl Conn {
    fn send(&mut self, who: &str, line: &str) {
        println!("{who}: send {line}");
        if !write_line(&self.w, line) {
            eprintln!("{who}: the hub closed the connection");
            exit(2)
        }
    }

    fn recv(&mut self, who: &str) -> String {
        let mut s = String::new();
        if self.r.read_line(&mut s).unwrap_or(0) == 0 {
            eprintln!("{who}: the hub closed the connection");
            exit(2)
        }
        let s = s.trim_end().to_string();
        println!("{who}: got {s}");
        s
    }

    fn hello(&mut self, who: &str) {
        self.send(who, &format!("HELLO {who}"));
        if self.recv(who) != format!("WELCOME {who}") {
            exit(2)
        }
    }
}

fn alice(addr: &str) {
    let mut c = connect(addr);
    c.hello("alice");
    // Move to a new connection, as a client does after a network change:
    // the old one is ended first (BYE, answered), the new one registers
    // the same name.
    c.send("alice", "BYE");
    if c.recv("alice") != "BYE" {
        exit(2)
    }
    drop(c);
    let mut c = connect(addr);
    c.hello("alice");
    // Wait until bob is online, then tell him she is ready.
    c.send("alice", "WATCH bob");
    while c.recv("alice") != "ONLINE bob" {}
    c.send("alice", "SEND bob ready");
    // SENT bob and bob's hi, in either order: two hub threads write them.
    let (mut sent, mut hi) = (false, false);
    while !(sent && hi) {
        match c.recv("alice").as_str() {
            "SENT bob" => sent = true,
            "FROM bob hi" => hi = true,
            other => {
                eprintln!("alice: unexpected {other}");
                exit(2)
            }
        }
    }
    println!("alice: done");
}

fn bob(addr: &str) {
    let mut c = connect(addr);
    c.hello("bob");
    while c.recv("bob") != "FROM alice ready" {}
    c.send("bob", "SEND alice hi");
    match c.recv("bob").as_str() {
        "SENT alice" => println!("bob: done"),
        other => {
            eprintln!("bob: alice is connected and registered, but the hub answers {other}");
            exit(1)
        }
    }
}
