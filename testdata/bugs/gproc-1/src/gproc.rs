// gproc-1: a delayed failure report removes a member that has already
// re-joined with a newer incarnation, so n1 and n2 disagree on the view.
//
//   gproc n1 PORT [--fixed]        group leader: keeps the view
//   gproc n2 PORT N1ADDR           member: joins, re-joins on RESTART
//   gproc monitor PORT N1ADDR      failure detector: REPORT -> DOWN to n1
//   gproc driver N1ADDR N2ADDR MONADDR
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

fn run_n2(port: &str, n1: &str) {
    let l = listen(port);
    let mut conns = vec![join(n1, 1)];
    let mut inc = 1u64;
    for s in l.incoming() {
        let s = match s {
            Ok(s) => s,
            Err(_) => continue,
        };
        let mut c = Conn::new(s);
        while let Some(line) = c.recv() {
            match line.as_str() {
                "RESTART" => {
                    println!("n2: RESTART (crash + restart)");
                    inc += 1;
                    conns.push(join(n1, inc));
                    c.send("RESTARTED");
                }
                "VIEW" => {
                    println!("n2: VIEW -> n1,n2");
                    c.send("VIEW n1,n2");
                }
                _ => println!("n2: unknown {:?}", line),
            }
        }
    }
}

fn run_monitor(port: &str, n1: &str) {
    // Connect to n1 before listening, so the driver can only report once the
    // monitor's connection to n1 is established.
    let mut to_n1 = dial(n1);
    println!("monitor: connected to n1");
    let l = listen(port);
    for s in l.incoming() {
        let s = match s {
            Ok(s) => s,
            Err(_) => continue,
        };
        let mut c = Conn::new(s);
        while let Some(line) = c.recv() {
            let f: Vec<&str> = line.split_whitespace().collect();
            match f.as_slice() {
                ["REPORT", name, inc] => {
                    to_n1.send(&format!("DOWN {} {}", name, inc));
                    println!("monitor: REPORT {} {} -> sent DOWN to n1", name, inc);
                    c.send("ACK");
                }
                _ => println!("monitor: unknown {:?}", line),
            }
        }
    }
}

fn run_driver(n1a: &str, n2a: &str, mona: &str) {
    let mut n1 = dial(n1a);
    let mut mon = dial(mona);
    let mut n2 = dial(n2a);
    println!("driver: connected");
    loop {
        n1.send("VIEW");
        let v = n1.expect("driver", "VIEW ");
        if v[5..].split(',').any(|m| m == "n2") {
            println!("driver: n2 joined ({})", v);
            break;
        }
        thread::sleep(Duration::from_millis(10));
    }
    mon.send("REPORT n2 1");
    mon.expect("driver", "ACK");
    println!("driver: monitor acked REPORT n2 1");
    n2.send("RESTART");
    n2.expect("driver", "RESTARTED");
    println!("driver: n2 restarted");
    n1.send("VIEW");
    let v1 = n1.expect("driver", "VIEW ");
    n2.send("VIEW");
    let v2 = n2.expect("driver", "VIEW ");
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
        ["n2", port, n1] => run_n2(port, n1),
        ["monitor", port, n1] => run_monitor(port, n1),
        ["driver", n1, n2, mon] => run_driver(n1, n2, mon),
        _ => {
            eprintln!("usage: gproc n1 PORT [--fixed] | n2 PORT N1 | monitor PORT N1 | driver N1 N2 MON");
            exit(2);
        }
    }
}
