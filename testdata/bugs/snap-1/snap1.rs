// snap-1 (Rust, std only): a replicated key-value store whose follower
// catches up two ways, from the leader's stream of appends and from
// checkpoints that a snapshot service ships to it. The follower installs a
// checkpoint whatever it has already applied, so one that comes after newer
// appends rolls it back, and a write the leader acknowledged (after the
// follower applied it) is gone from the follower. See README.md.
//
//   snap1 follower PORT [--fixed]          applies APPENDs and SNAPs, answers READ
//   snap1 snapsvc PORT FOLLOWER            stores checkpoints, ships them to the follower
//   snap1 leader PORT SNAPSVC FOLLOWER     takes PUTs, streams them, checkpoints every K
//   snap1 client LEADER FOLLOWER ROUNDS    writes through the leader, reads the follower
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::process::exit;
use std::thread;
use std::time::Duration;

/// The leader checkpoints its state every K writes (a round's three, a b c).
const K: u64 = 3;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    match a[1..] {
        ["follower", port] => follower(port, false),
        ["follower", port, "--fixed"] => follower(port, true),
        ["snapsvc", port, fol] => snapsvc(port, fol),
        ["leader", port, svc, fol] => leader(port, svc, fol),
        ["client", lead, fol, rounds] => client(lead, fol, rounds.parse().unwrap_or(6)),
        _ => {
            eprintln!(
                "usage: snap1 follower PORT [--fixed] | snap1 snapsvc PORT FOLLOWER | \
                 snap1 leader PORT SNAPSVC FOLLOWER | snap1 client LEADER FOLLOWER ROUNDS"
            );
            exit(2)
        }
    }
}

// ---- connections, line by line

struct Conn {
    s: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    fn new(s: TcpStream) -> Conn {
        s.set_nodelay(true).ok();
        Conn { s, buf: Vec::new() }
    }
    /// fill reads once; false when the peer closed the connection.
    fn fill(&mut self) -> bool {
        let mut b = [0u8; 4096];
        match self.s.read(&mut b) {
            Ok(n) if n > 0 => {
                self.buf.extend_from_slice(&b[..n]);
                true
            }
            _ => false,
        }
    }
    /// take returns the next complete line already read, without its newline.
    fn take(&mut self) -> Option<String> {
        let p = self.buf.iter().position(|&c| c == b'\n')?;
        let line: Vec<u8> = self.buf.drain(..=p).collect();
        Some(String::from_utf8_lossy(&line[..p]).to_string())
    }
    /// line blocks for the next line; None when the peer closed.
    fn line(&mut self) -> Option<String> {
        loop {
            if let Some(l) = self.take() {
                return Some(l);
            }
            if !self.fill() {
                return None;
            }
        }
    }
}

/// send_line: every message of every mode leaves here, one write per line.
/// A failed write is logged, never fatal: a server lives on.
fn send_line(who: &str, c: &mut Conn, line: &str) {
    println!("{who}: send {line}");
    if let Err(e) = c.s.write_all(format!("{line}\n").as_bytes()) {
        println!("{who}: write {line:?} failed: {e}");
    }
}

fn dial(who: &str, addr: &str) -> Conn {
    for _ in 0..500 {
        if let Ok(s) = TcpStream::connect(addr) {
            return Conn::new(s);
        }
        thread::sleep(Duration::from_millis(10));
    }
    eprintln!("{who}: cannot connect to {addr}");
    exit(2)
}

fn listen(who: &str, port: &str) -> TcpListener {
    TcpListener::bind(format!("0.0.0.0:{port}")).unwrap_or_else(|e| {
        eprintln!("{who}: bind {port}: {e}");
        exit(2)
    })
}

// ---- one poll() loop per server: the listener, then the connections in
// the order they were made; the oldest connection with data is served first.

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

/// next_lines waits for the listener or a connection in conns to be ready.
/// A new connection is accepted and nothing else (its data competes in the
/// next poll); otherwise it returns every complete line of each readable
/// connection, oldest connection first, with the connection's index. A
/// closed connection stays in conns, off the poll (fd -1), to keep indexes.
fn next_lines(who: &str, l: &TcpListener, conns: &mut Vec<Option<Conn>>) -> Vec<(usize, String)> {
    let mut fds = vec![PollFd { fd: l.as_raw_fd(), events: POLLIN, revents: 0 }];
    for c in conns.iter() {
        let fd = c.as_ref().map_or(-1, |c| c.s.as_raw_fd());
        fds.push(PollFd { fd, events: POLLIN, revents: 0 });
    }
    while unsafe { poll(fds.as_mut_ptr(), fds.len() as u64, -1) } < 0 {
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            eprintln!("{who}: poll: {e}");
            exit(2)
        }
    }
    if fds[0].revents != 0 {
        if let Ok((s, _)) = l.accept() {
            conns.push(Some(Conn::new(s)));
        }
        return Vec::new();
    }
    let mut out = Vec::new();
    for (i, f) in fds[1..].iter().enumerate() {
        if f.revents == 0 {
            continue;
        }
        let c = conns[i].as_mut().unwrap();
        let open = c.fill();
        while let Some(line) = c.take() {
            out.push((i, line));
        }
        if !open {
            conns[i] = None;
        }
    }
    out
}

/// kv_text is a state as it travels: "a=v1 b=v2 c=v3", keys in order.
fn kv_text(m: &BTreeMap<String, String>) -> String {
    m.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
}

fn kv_parse<'a>(words: impl Iterator<Item = &'a str>) -> BTreeMap<String, String> {
    words.filter_map(|w| w.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

// ---- follower: `APPEND i k v` from the leader → `ACK i` once applied;
// `SNAP n state` from the snapshot service → the state at index n;
// `READ` from the client → `STATE applied state`.
fn follower(port: &str, fixed: bool) {
    let l = listen("follower", port);
    println!("follower: listening on {port}, fixed={fixed}");
    let mut conns: Vec<Option<Conn>> = Vec::new();
    let mut state: BTreeMap<String, String> = BTreeMap::new();
    let mut applied: u64 = 0;
    loop {
        for (i, line) in next_lines("follower", &l, &mut conns) {
            println!("follower: got {line}");
            let mut w = line.split(' ');
            let reply = match w.next() {
                Some("APPEND") => {
                    let (n, k, v) = (w.next(), w.next(), w.next());
                    let n: u64 = n.and_then(|n| n.parse().ok()).unwrap_or(0);
                    if n <= applied {
                        // Its checkpoint came first and holds it already.
                        println!("follower: append {n} is in the checkpoint at {applied}: skipped");
                    } else {
                        // Appends come in order on one stream: one above
                        // applied is the next one.
                        state.insert(k.unwrap_or("?").to_string(), v.unwrap_or("?").to_string());
                        applied = n;
                        println!("follower: applied {n}, state {}", kv_text(&state));
                    }
                    Some(format!("ACK {n}"))
                }
                Some("SNAP") => {
                    let n: u64 = w.next().and_then(|n| n.parse().ok()).unwrap_or(0);
                    if fixed && n <= applied {
                        println!("follower: checkpoint {n} is not newer than applied {applied}: ignored");
                    } else {
                        // The bug (without --fixed): the checkpoint replaces
                        // the state whatever the follower has applied since.
                        state = kv_parse(w);
                        println!("follower: installed checkpoint {n} over applied {applied}, state {}", kv_text(&state));
                        applied = n;
                    }
                    None
                }
                Some("READ") => Some(format!("STATE {applied} {}", kv_text(&state))),
                _ => Some(format!("ERR {line}")),
            };
            if let (Some(r), Some(c)) = (reply, conns[i].as_mut()) {
                send_line("follower", c, &r);
            }
        }
    }
}

// ---- snapshot service: `CKPT n ship|keep state` from the leader → stores
// it (the latest checkpoint), ships `SNAP n state` to the follower when the
// leader says ship, then answers `STORED n`.
fn snapsvc(port: &str, fol: &str) {
    // Dial the follower before listening: the leader, which dials us first,
    // reaches the follower after us.
    let mut to_fol = dial("snapsvc", fol);
    let l = listen("snapsvc", port);
    println!("snapsvc: listening on {port}, follower {fol}");
    let mut conns: Vec<Option<Conn>> = Vec::new();
    let mut latest: String; // the checkpoint held (one is enough here)
    loop {
        for (i, line) in next_lines("snapsvc", &l, &mut conns) {
            println!("snapsvc: got {line}");
            let mut w = line.splitn(4, ' ');
            if w.next() != Some("CKPT") {
                continue;
            }
            let (n, how, st) = (w.next().unwrap_or("0"), w.next().unwrap_or(""), w.next().unwrap_or(""));
            latest = format!("{n} {st}");
            println!("snapsvc: stored checkpoint {latest}");
            if how == "ship" {
                // Shipped before the leader hears it is stored: the leader
                // goes on (and acknowledges the write) only after STORED.
                send_line("snapsvc", &mut to_fol, &format!("SNAP {n} {st}"));
            }
            if let Some(c) = conns[i].as_mut() {
                send_line("snapsvc", c, &format!("STORED {n}"));
            }
        }
    }
}

// ---- leader: `PUT k v` → the write gets the next index i, `APPEND i k v`
// to the follower, and `OK i` to the writer once the follower's `ACK i`
// is in (the write is then on both). Every K-th write is checkpointed.
fn leader(port: &str, svc: &str, fol: &str) {
    let mut to_svc = dial("leader", svc);
    // conns[0] is the follower's stream; the writers' connections follow.
    let mut conns: Vec<Option<Conn>> = vec![Some(dial("leader", fol))];
    let l = listen("leader", port);
    println!("leader: listening on {port}, snapshot service {svc}, follower {fol}");
    let mut state: BTreeMap<String, String> = BTreeMap::new();
    let (mut index, mut acked) = (0u64, 0u64);
    let mut waiting: Vec<(u64, usize)> = Vec::new(); // (index, writer's connection)
    loop {
        for (i, line) in next_lines("leader", &l, &mut conns) {
            println!("leader: got {line}");
            let w: Vec<&str> = line.split(' ').collect();
            match w[..] {
                ["PUT", k, v] => {
                    index += 1;
                    state.insert(k.to_string(), v.to_string());
                    if let Some(f) = conns[0].as_mut() {
                        send_line("leader", f, &format!("APPEND {index} {k} {v}"));
                    }
                    if index % K == 0 {
                        // The checkpoint replaces the log up to index. A
                        // follower that has not acknowledged index may lack
                        // some of it, as far as the leader can tell, so it
                        // is shipped the checkpoint. (The APPEND that just
                        // went out is not acknowledged yet: it always is.)
                        let how = if acked < index { "ship" } else { "keep" };
                        send_line("leader", &mut to_svc, &format!("CKPT {index} {how} {}", kv_text(&state)));
                        // Synchronous: a leader drops its log up to index
                        // once the checkpoint is stored (this one keeps none).
                        match to_svc.line() {
                            Some(r) => println!("leader: got {r}"),
                            None => {
                                eprintln!("leader: the snapshot service closed the connection");
                                exit(2)
                            }
                        }
                    }
                    waiting.push((index, i));
                }
                ["ACK", n] if i == 0 => acked = acked.max(n.parse().unwrap_or(0)),
                _ => println!("leader: unexpected {line}"),
            }
            // Acknowledge every write the follower has applied.
            while let Some(&(n, c)) = waiting.first() {
                if n > acked {
                    break;
                }
                waiting.remove(0);
                if let Some(c) = conns[c].as_mut() {
                    send_line("leader", c, &format!("OK {n}"));
                }
            }
        }
    }
}

// ---- client: ROUNDS rounds of three writes (a, b, c; write i's value is
// vi) through the leader; after each acknowledged write it reads the
// follower's whole state, which must hold every acknowledged write
// (the acknowledgement waited for the follower to apply it).
fn client(lead: &str, fol: &str, rounds: u64) {
    let mut ld = dial("client", lead);
    let mut fl = dial("client", fol);
    let mut model: BTreeMap<String, String> = BTreeMap::new();
    let mut i = 0u64;
    for _ in 0..rounds {
        for k in ["a", "b", "c"] {
            i += 1;
            let v = format!("v{i}");
            send_line("client", &mut ld, &format!("PUT {k} {v}"));
            let ok = recv("client", &mut ld, "leader");
            if ok != format!("OK {i}") {
                fail(&format!("write {i} ({k}={v}): the leader answers {ok}, expected OK {i}"));
            }
            model.insert(k.to_string(), v.clone());
            send_line("client", &mut fl, "READ");
            let st = recv("client", &mut fl, "follower");
            let mut w = st.split(' ');
            let (tag, at) = (w.next(), w.next().unwrap_or("?"));
            let got = kv_parse(w);
            if tag != Some("STATE") {
                fail(&format!("after write {i} ({k}={v}): the follower answers {st}, expected STATE"));
            }
            for (mk, mv) in &model {
                let g = got.get(mk).map_or("nothing", String::as_str);
                if g != mv {
                    fail(&format!(
                        "write {i} ({k}={v}) acknowledged, then the follower (at index {at}) has {mk}={g}, \
                         expected {mk}={mv}: an acknowledged write rolled back"
                    ));
                }
            }
        }
    }
    println!("client: {i} writes, all read back from the follower");
}

fn recv(who: &str, c: &mut Conn, peer: &str) -> String {
    match c.line() {
        Some(l) => {
            println!("{who}: got {l} from {peer}");
            l
        }
        None => fail(&format!("the {peer} closed the connection")),
    }
}

fn fail(msg: &str) -> ! {
    eprintln!("client: {msg}");
    exit(1)
}
