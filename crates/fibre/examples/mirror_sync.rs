//! Times a mirror's full sync of a namespace's routing state:
//! `cargo run --release -p fibre --example mirror_sync -- [NETNS]`.
use fibre::io::netlink::Mirror;
use std::time::Instant;

fn main() {
    let netns = std::env::args().nth(1);
    let start = Instant::now();
    match Mirror::open(netns.as_deref()) {
        Ok((mirror, report)) => {
            let secs = start.elapsed().as_secs_f64();
            let routes: usize = mirror.router().family::<std::net::Ipv4Addr>().route_count()
                + mirror.router().family::<std::net::Ipv6Addr>().route_count();
            println!("synced in {secs:.3} s: {report:?}; {routes} routes held");
        }
        Err(e) => {
            eprintln!("mirror_sync: {e}");
            std::process::exit(1);
        }
    }
}
