// ms-1: a membership list read, then a member crashes before it answers:
// the caller reads EOF on the dead member's connection and crashes itself.
//
//   ms registry PORT                                  membership registry
//   ms member NAME PORT REGISTRY                      member w1 / w2
//   ms caller PORT REGISTRY [--fixed] NAME=ADDR...    calls every listed member
//   ms client CALLER                                  asks for one call round
//
// The member's crash is a lockstep fault (spec.yaml), not a message.
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::AsRawFd;
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
        let _ = s.set_nodelay(true);
        let w = s.try_clone().expect("clone");
        Conn { r: BufReader::new(s), w }
    }
    // send writes one line; a failed write is reported, never fatal (servers must live).
    fn send(&mut self, line: &str) -> bool {
        match self.w.write_all(format!("{}\n", line).as_bytes()) {
            Ok(()) => true,
            Err(e) => {
                println!("write {:?} failed: {}", line, e);
                false
            }
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
            Some(l) if l.starts_with(want) => {
                println!("{}: got {}", who, l);
                l
            }
            other => {
                println!("{}: wanted {}, got {:?}", who, want, other);
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
    println!("cannot connect to {}", addr);
    exit(2);
}

fn listen(port: &str) -> TcpListener {
    // std sets SO_REUSEADDR on Unix listeners.
    match TcpListener::bind(format!("0.0.0.0:{}", port)) {
        Ok(l) => l,
        Err(e) => {
            println!("bind {}: {}", port, e);
            exit(2);
        }
    }
}

// ---- registry: JOIN NAME -> JOINED; LIST -> MEMBERS a,b. A member is
// removed when the connection it joined on closes (it died); a restarted
// member joins again on a new connection.
fn registry(port: &str) {
    let l = listen(port);
    // (name, id of the connection it joined on), sorted by name
    let members: Arc<Mutex<Vec<(String, u64)>>> = Arc::new(Mutex::new(Vec::new()));
    for (id, s) in l.incoming().flatten().enumerate() {
        let id = id as u64;
        let members = members.clone();
        thread::spawn(move || {
            let mut c = Conn::new(s);
            while let Some(line) = c.recv() {
                println!("registry: {}", line);
                let mut m = members.lock().unwrap();
                if let Some(n) = line.strip_prefix("JOIN ") {
                    m.retain(|(x, _)| x != n);
                    m.push((n.to_string(), id));
                    m.sort();
                    c.send(&format!("JOINED {}", n));
                } else if line == "LIST" {
                    let names: Vec<&str> = m.iter().map(|(x, _)| x.as_str()).collect();
                    c.send(&format!("MEMBERS {}", names.join(",")));
                }
            }
            let mut m = members.lock().unwrap();
            if m.iter().any(|(_, i)| *i == id) {
                m.retain(|(_, i)| *i != id);
                let names: Vec<&str> = m.iter().map(|(x, _)| x.as_str()).collect();
                println!("registry: a member's connection closed, members now {}", names.join(","));
            }
        });
    }
}

// ---- member: one poll() loop over its listener and connections.
// PING -> PONG NAME.
#[repr(C)]
struct PollFd {
    fd: i32,
    events: i16,
    revents: i16,
}
extern "C" {
    fn poll(fds: *mut PollFd, nfds: u64, timeout: i32) -> i32;
}
const POLLIN: i16 = 1;

// ready returns, for each fd, whether poll() says it is readable (or closed);
// negative fds (connections already closed by the peer) are ignored.
fn ready(fds: &[i32], timeout: i32) -> Vec<bool> {
    let mut p: Vec<PollFd> = fds.iter().map(|&fd| PollFd { fd, events: POLLIN, revents: 0 }).collect();
    loop {
        let n = unsafe { poll(p.as_mut_ptr(), p.len() as u64, timeout) };
        if n >= 0 {
            return p.iter().map(|x| x.revents != 0).collect();
        }
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            println!("poll: {}", std::io::Error::last_os_error());
            exit(2);
        }
    }
}

struct MConn {
    s: TcpStream,
    buf: Vec<u8>,
    open: bool,
}

struct Member {
    name: String,
    conns: Vec<MConn>,
}

impl Member {
    fn send(&mut self, i: usize, line: &str) {
        if let Err(e) = self.conns[i].s.write_all(format!("{}\n", line).as_bytes()) {
            println!("{}: write {:?} failed: {}", self.name, line, e);
        }
    }
    // read_ready reads once from every readable connection and handles each
    // complete line.
    fn read_ready(&mut self, ok: &[bool]) {
        for i in 0..ok.len() {
            if !ok[i] || !self.conns[i].open {
                continue;
            }
            let mut b = [0u8; 1024];
            match self.conns[i].s.read(&mut b) {
                Ok(n) if n > 0 => self.conns[i].buf.extend_from_slice(&b[..n]),
                _ => {
                    self.conns[i].open = false;
                    continue;
                }
            }
            while let Some(p) = self.conns[i].buf.iter().position(|&c| c == b'\n') {
                let line: Vec<u8> = self.conns[i].buf.drain(..=p).collect();
                let line = String::from_utf8_lossy(&line).trim_end().to_string();
                self.handle(i, &line);
            }
        }
    }
    fn handle(&mut self, i: usize, line: &str) {
        println!("{}: {}", self.name, line);
        if line == "PING" {
            let pong = format!("PONG {}", self.name);
            self.send(i, &pong);
        }
    }
}

fn member(name: &str, port: &str, reg_addr: &str) {
    // Register first, listen after: nobody can reach a member before it is listed.
    // reg stays open: its closing is how the registry learns of a crash.
    let mut reg = dial(reg_addr);
    reg.send(&format!("JOIN {}", name));
    reg.expect(name, "JOINED");
    let l = listen(port);
    let mut m = Member { name: name.to_string(), conns: Vec::new() };
    loop {
        let mut fds = vec![l.as_raw_fd()];
        fds.extend(m.conns.iter().map(|c| if c.open { c.s.as_raw_fd() } else { -1 }));
        let ok = ready(&fds, -1);
        if ok[0] {
            if let Ok((s, _)) = l.accept() {
                let _ = s.set_nodelay(true);
                m.conns.push(MConn { s, buf: Vec::new(), open: true });
            }
        }
        m.read_ready(&ok[1..]);
    }
}

// ---- caller: CALLALL -> LIST, PING every listed member (reverse list
// order), read every PONG, reply DONE n. It connects to the registry and to
// every member it knows before it listens, so its member connections exist
// (and the members are registered) before anyone can send it CALLALL. The
// client connection is served on the main thread, so a panic kills the process.
fn caller(port: &str, reg_addr: &str, fixed: bool, dir: &[(String, String)]) {
    let mut reg = dial(reg_addr);
    let mut mconns: Vec<(String, Conn)> = dir.iter().map(|(n, a)| (n.clone(), dial(a))).collect();
    let l = listen(port);
    for s in l.incoming().flatten() {
        let mut c = Conn::new(s);
        while let Some(line) = c.recv() {
            println!("caller: {}", line);
            if line != "CALLALL" {
                continue;
            }
            reg.send("LIST");
            let m = reg.expect("caller", "MEMBERS");
            let mut names: Vec<String> =
                m["MEMBERS".len()..].trim().split(',').filter(|x| !x.is_empty()).map(String::from).collect();
            names.reverse();
            let mut called = Vec::new();
            for n in &names {
                match mconns.iter().position(|(k, _)| k == n) {
                    Some(i) => {
                        mconns[i].1.send("PING");
                        println!("caller: PING -> {}", n);
                        called.push(i);
                    }
                    None => println!("caller: no connection to {}", n),
                }
            }
            let mut done = 0;
            for i in called {
                let (n, mc) = &mut mconns[i];
                match mc.recv() {
                    Some(r) => {
                        println!("caller: {} answered {}", n, r);
                        done += 1;
                    }
                    None if fixed => println!("caller: {} closed without answering: departed, skipped", n),
                    None => panic!("caller: connection to listed member {} closed before its PONG", n),
                }
            }
            c.send(&format!("DONE {}", done));
        }
    }
}

// ---- client: one call round, 50 ms after it connected (the fault window
// starts at 50 ms, spec.yaml: after the cluster's start-up, even when
// lockstep delays that by a few timeouts).
fn client(caller_addr: &str) {
    let mut c = dial(caller_addr);
    thread::sleep(Duration::from_millis(50));
    c.send("CALLALL");
    println!("client: CALLALL -> caller");
    c.expect("client", "DONE");
    println!("client: done");
    exit(0);
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let a: Vec<&str> = a.iter().map(|s| s.as_str()).collect();
    match a.get(1..).unwrap_or(&[]) {
        ["registry", port] => registry(port),
        ["member", name, port, reg] => member(name, port, reg),
        ["caller", port, reg, rest @ ..] => {
            let fixed = rest.contains(&"--fixed");
            let dir: Vec<(String, String)> = rest
                .iter()
                .filter_map(|x| x.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            caller(port, reg, fixed, &dir)
        }
        ["client", caller_addr] => client(caller_addr),
        _ => {
            eprintln!("usage: ms registry PORT | ms member NAME PORT REGISTRY | ms caller PORT REGISTRY [--fixed] NAME=ADDR... | ms client CALLER");
            exit(2);
        }
    }
}
