// random_bytes: 16 bytes from glibc's getrandom and 16 from /dev/urandom.
use std::fs::File;
use std::io::Read;

extern "C" {
    fn getrandom(buf: *mut u8, len: usize, flags: u32) -> isize;
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn main() {
    let mut b = [0u8; 16];
    if unsafe { getrandom(b.as_mut_ptr(), b.len(), 0) } != 16 {
        eprintln!("getrandom failed");
        std::process::exit(1);
    }
    println!("getrandom={}", hex(&b));
    File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b)).unwrap_or_else(|e| {
        eprintln!("/dev/urandom: {e}");
        std::process::exit(1)
    });
    println!("urandom={}", hex(&b));
}
