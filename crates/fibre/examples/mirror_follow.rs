//! Follows a namespace for a while, prints what the mirror saw, then answers commands:
//! `cargo run --release -p fibre --example mirror_follow -- NETNS SECONDS [COMMAND...]`.
use fibre::io::iproute2::Query;
use fibre::io::netlink::Mirror;
use std::time::Duration;

fn main() {
    let netns = std::env::args().nth(1);
    let secs: u64 = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let rcvbuf = std::env::var("RCVBUF").ok().and_then(|s| s.parse().ok());
    let (mut mirror, report) = Mirror::open_with(netns.as_deref(), rcvbuf).expect("mirror");
    println!("synced: {report:?}");
    let r = mirror
        .follow(Duration::from_secs(secs), Duration::from_secs(secs))
        .expect("follow");
    println!("followed: {r:?}");
    let router = mirror.router();
    for cmd in std::env::args().skip(3) {
        let mut out = String::new();
        match Query::new(&router, false).run_line(&cmd, &mut out) {
            Ok(()) => print!("{out}"),
            Err(e) => println!("{cmd}: {}", e.message),
        }
    }
}
