// gproc-1: a delayed failure report removes a member that has already
// re-joined with a newer incarnation, so n1 and n2 disagree on the view.
//
//   gproc n1 PORT [--fixed]          group leader: keeps the view
//   gproc n2 PORT N1ADDR DIR         member: joins with the incarnation kept in DIR/inc
//   gproc monitor N1ADDR N2ADDR      failure detector: n2's connection closed -> DOWN to n1
//   gproc driver N1ADDR N2ADDR SETTLE_MS
//
// n2's crash and restart are lockstep faults (spec.yaml), not messages.
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::process::exit;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

struct Conn {
    r: BufReader<TcpStream>,
    w: TcpStream,
}

impl Conn {
    fn new(s: TcpStream) -> Conn {
        let w = s.try_clone().expect("clone");
        Conn { r: BufReader::new(s), w }
    }
    // try_send writes one line; false if the peer is gone.
    fn try_send(&mut self, line: &str) -> bool {
        self.w.write_all(format!("{}\n", line).as_bytes()).is_ok()
    }
    fn send(&mut self, line: &str) {
        if let Err(e) = self.w.write_all(format!("{}\n", line).as_bytes()) {
            eprintln!("write: {}", e);
            exit(2);
        }
    }
    // recv returns the next line without its newline, or None on EOF/error.
    fn recv(&mut self) -> Option<String> {
        let mut s = String::new();
        match self.r.read_line(&mut s) {
            Ok(n) if n > 0 => Some(s.trim_end().to_string()),
            _ => None,
        }
    }
    fn expect(&mut self, who: &str, want: &str) -> String {
        match self.recv() {
            Some(l) if l.starts_with(want) => l,
            other => {
                eprintln!("{}: wanted {}, got {:?}", who, want, other);
                exit(1);
            }
        }
    }
}

fn dial(addr: &str) -> Conn {
    for _ in 0..500 {
        if let Ok(mut addrs) = addr.to_socket_addrs() {
            if let Some(a) = addrs.next() {
                if let Ok(s) = TcpStream::connect(a) {
                    return Conn::new(s);
                }
            }
        }
        thread::sleep(Duration::from_millis(10));
    }
    eprintln!("cannot connect to {}", addr);
    exit(2);
}

fn listen(port: &str) -> TcpListener {
    // std sets SO_REUSEADDR on Unix listeners.
    match TcpListener::bind(format!("0.0.0.0:{}", port)) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("bind {}: {}", port, e);
            exit(2);
        }
    }
}

fn view_string(view: &BTreeMap<String, u64>) -> String {
    view.keys().cloned().collect::<Vec<_>>().join(",")
}

// n1: one thread per connection, shared view name -> incarnation.
fn run_n1(port: &str, fixed: bool) {
    let l = listen(port);
    let view = Arc::new(Mutex::new(BTreeMap::new()));
    view.lock().unwrap().insert("n1".to_string(), 0u64);
    println!("n1: listening on {} (fixed={})", port, fixed);
    for s in l.incoming() {
        let s = match s {
            Ok(s) => s,
            Err(_) => continue,
        };
        let view = view.clone();
        thread::spawn(move || {
            let mut c = Conn::new(s);
            while let Some(line) = c.recv() {
                let f: Vec<&str> = line.split_whitespace().collect();
                match f.as_slice() {
                    ["HELLO", name, inc] => {
                        let inc: u64 = inc.parse().unwrap_or(0);
                        let v = {
                            let mut v = view.lock().unwrap();
                            v.insert(name.to_string(), inc);
                            view_string(&v)
                        };
                        println!("n1: HELLO {} {} -> view {}", name, inc, v);
                        c.send("WELCOME");
                    }
                    ["DOWN", name, inc] => {
                        let inc: u64 = inc.parse().unwrap_or(0);
                        let mut v = view.lock().unwrap();
                        let joined = v.get(*name).copied();
                        match joined {
                            Some(j) if fixed && inc < j => {
                                println!("n1: DOWN {} {} is stale (joined as {}), ignored", name, inc, j)
                            }
                            Some(_) => {
                                v.remove(*name);
                                println!("n1: DOWN {} {} -> view {}", name, inc, view_string(&v));
                            }
                            None => println!("n1: DOWN {} {}: not a member", name, inc),
                        }
                    }
                    ["VIEW"] => {
                        let v = view_string(&view.lock().unwrap());
                        println!("n1: VIEW -> {}", v);
                        c.send(&format!("VIEW {}", v));
                    }
                    _ => println!("n1: unknown {:?}", line),
                }
            }
        });
    }
}

fn join(n1: &str, inc: u64) -> Conn {
    let mut c = dial(n1);
    c.send(&format!("HELLO n2 {}", inc));
    println!("n2: sent HELLO n2 {}", inc);
    c.expect("n2", "WELCOME");
    println!("n2: WELCOME (incarnation {})", inc);
    c
}

// next_incarnation reads the last incarnation from DIR/inc, stores and
// returns the next: the file survives a crash, as a disk would.
fn next_incarnation(dir: &str) -> u64 {
    let path = format!("{}/inc", dir);
    let last: u64 = std::fs::read_to_string(&path).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0);
    if let Err(e) = std::fs::write(&path, format!("{}\n", last + 1)) {
        eprintln!("{}: {}", path, e);
        exit(2);
    }
    last + 1
}

// n2: joins, and only then listens, so whoever reaches it finds it a member.
// One thread per connection: WATCH -> ALIVE n2 INC; PING -> PONG; VIEW ->
// its belief, VIEW n1,n2.
fn run_n2(port: &str, n1: &str, dir: &str) {
    let inc = next_incarnation(dir);
    println!("n2: incarnation {}", inc);
    let _to_n1 = join(n1, inc);
    let l = listen(port);
    for s in l.incoming() {
        let s = match s {
            Ok(s) => s,
            Err(_) => continue,
        };
        thread::spawn(move || {
            let mut c = Conn::new(s);
            while let Some(line) = c.recv() {
                println!("n2: {}", line);
                match line.as_str() {
                    "WATCH" => c.send(&format!("ALIVE n2 {}", inc)),
                    "PING" => c.send("PONG"),
                    "VIEW" => c.send("VIEW n1,n2"),
                    _ => println!("n2: unknown {:?}", line),
                }
            }
        });
    }
}

// monitor: watches n2 over one connection, with a heartbeat every 10 ms (the
// connection's end, EOF or ECONNRESET, is the failure, not a timeout), and
// reports DOWN n2 INC for the incarnation that connection reached; then it
// watches the next one.
fn run_monitor(n1: &str, n2: &str) {
    let mut to_n1 = dial(n1);
    println!("monitor: connected to n1");
    loop {
        let mut w = dial(n2);
        w.send("WATCH");
        let inc = match w.recv() {
            Some(l) if l.starts_with("ALIVE n2 ") => {
                println!("monitor: got {}", l);
                l["ALIVE n2 ".len()..].to_string()
            }
            other => {
                println!("monitor: n2 closed before ALIVE ({:?})", other);
                continue;
            }
        };
        loop {
            thread::sleep(Duration::from_millis(10));
            if !w.try_send("PING") || w.recv().is_none() {
                break;
            }
        }
        to_n1.send(&format!("DOWN n2 {}", inc));
        println!("monitor: n2 connection closed -> sent DOWN n2 {} to n1", inc);
    }
}

// driver: leaves the faults time to happen and the system time to recover
// (SETTLE_MS, past the spec's quiet period), then asks n1 and n2 for their
// views.
fn run_driver(n1a: &str, n2a: &str, settle_ms: u64) {
    let mut n1 = dial(n1a);
    println!("driver: connected");
    thread::sleep(Duration::from_millis(settle_ms));
    let mut n2 = dial(n2a); // a restarted n2 listens only once it has re-joined
    n1.send("VIEW");
    let v1 = n1.expect("driver", "VIEW ");
    println!("driver: n1 says {}", v1);
    n2.send("VIEW");
    let v2 = n2.expect("driver", "VIEW ");
    println!("driver: n2 says {}", v2);
    if v1 != v2 {
        println!("split views: n1 says {:?}, n2 says {:?}", &v1[5..], &v2[5..]);
        exit(1);
    }
    println!("driver: views agree: {}", &v1[5..]);
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let a: Vec<&str> = a.iter().map(|s| s.as_str()).collect();
    match a.get(1..).unwrap_or(&[]) {
        ["n1", port] => run_n1(port, false),
        ["n1", port, "--fixed"] => run_n1(port, true),
        ["n2", port, n1, dir] => run_n2(port, n1, dir),
        ["monitor", n1, n2] => run_monitor(n1, n2),
        ["driver", n1, n2, settle] => run_driver(n1, n2, settle.parse().unwrap_or(300)),
        _ => {
            eprintln!("usage: gproc n1 PORT [--fixed] | n2 PORT N1 DIR | monitor N1 N2 | driver N1 N2 SETTLE_MS");
            exit(2);
        }
    }
}
