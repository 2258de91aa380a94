//! Address sets the engines look up, and the files the harnesses read.
//!
//! - `study`: the study's lookup-time set: addresses drawn semi-randomly (uniformly) inside the
//!   scenario's scanned range, in passes of [`STUDY_PASS`], keeping only those that hit a route,
//!   until [`STUDY_HITS`] hits or [`STUDY_MAX_TRIES`] tries.
//! - `w1`: addresses inside random prefixes of the table (random host bits).
//! - `w2`: uniform random addresses (IPv4: all of it but the bench's reserved /24; IPv6: 2000::/3).
use crate::key::Key;
use crate::scenario::{inside, BenchRoute, StudyFamily};
use fibre::addr::Bits;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::path::Path;

pub const STUDY_PASS: usize = 5000;
pub const STUDY_HITS: usize = 5000;
pub const STUDY_MAX_TRIES: usize = 1_000_000;

/// The study's hit set and how many tries it took.
pub struct StudySet<K> {
    pub addrs: Vec<K>,
    pub tries: usize,
}

/// Draws the study's set; `hits` says whether an address has a route (the reference engine).
pub fn study_set<A: StudyFamily>(
    range: (A::K, A::K),
    seed: u64,
    hits: impl Fn(A::K) -> bool,
) -> StudySet<A::K> {
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x57d7);
    let mut addrs = Vec::with_capacity(STUDY_HITS);
    let mut tries = 0;
    while addrs.len() < STUDY_HITS && tries < STUDY_MAX_TRIES {
        for _ in 0..STUDY_PASS {
            let a = A::K::random_in(&mut rng, range.0, range.1);
            if !inside(a, A::WIDTH, A::RESERVED) && hits(a) {
                addrs.push(a);
            }
        }
        tries += STUDY_PASS;
    }
    addrs.truncate(STUDY_HITS);
    StudySet { addrs, tries }
}

/// W1: `n` addresses inside random prefixes of `routes`.
pub fn inside_prefixes<A: StudyFamily>(
    routes: &[BenchRoute<A::K>],
    n: usize,
    seed: u64,
) -> Vec<A::K> {
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x0001);
    if routes.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let r = &routes[rng.gen_range(0..routes.len())];
        let host = A::K::random_in(&mut rng, A::K::ZERO, A::K::ONES);
        let a = r.addr | (host & !A::K::mask(r.len));
        // A covering route (198.0.0.0/8) may reach into the kernel harness's own subnet, where
        // the kernel answers with its connected route.
        if !inside(a, A::WIDTH, A::RESERVED) {
            out.push(a);
        }
    }
    out
}

/// W2: `n` uniform random addresses of the family's uniform range, outside the reserved subnet.
pub fn uniform<A: StudyFamily>(n: usize, seed: u64) -> Vec<A::K> {
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x0002);
    let (lo, hi) = A::UNIFORM_RANGE;
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let a = A::K::random_in(&mut rng, lo, hi);
        if !inside(a, A::WIDTH, A::RESERVED) {
            out.push(a);
        }
    }
    out
}

/// Writes addresses back to back in network byte order (the harness workload format).
pub fn write_addrs<K: Key>(path: &Path, addrs: &[K]) -> std::io::Result<()> {
    let mut bytes = Vec::with_capacity(addrs.len() * (K::WIDTH as usize / 8));
    for &a in addrs {
        a.put_be(&mut bytes);
    }
    std::fs::write(path, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    #[test]
    fn study_set_keeps_hits_only_and_stops_at_the_try_limit() {
        // Every address of the range hits: one pass suffices.
        let all = study_set::<Ipv4Addr>((0, 1000), 1, |_| true);
        assert_eq!((all.addrs.len(), all.tries), (STUDY_HITS, STUDY_PASS));
        // One in ~4096 hits: 10^6 tries yield ~244 hits, all of them real.
        let sparse = study_set::<Ipv4Addr>((0, u32::MAX), 1, |a| a & 0xfff == 0);
        assert_eq!(sparse.tries, STUDY_MAX_TRIES);
        assert!(
            (150..350).contains(&sparse.addrs.len()),
            "{}",
            sparse.addrs.len()
        );
        assert!(sparse.addrs.iter().all(|a| a & 0xfff == 0));
    }

    #[test]
    fn w1_lies_inside_and_w2_avoids_the_reserved_subnet() {
        let routes = [BenchRoute {
            addr: 0x0a00_0000u32,
            len: 8,
            nh: 1,
        }];
        assert!(inside_prefixes::<Ipv4Addr>(&routes, 1000, 3)
            .iter()
            .all(|a| a >> 24 == 10));
        let w2 = uniform::<Ipv6Addr>(10_000, 3);
        assert!(w2.iter().all(|a| a >> 125 == 1));
        assert!(uniform::<Ipv4Addr>(10_000, 3)
            .iter()
            .all(|&a| !inside(a, 32, Ipv4Addr::RESERVED)));
    }

    #[test]
    fn address_files_are_network_order() {
        let dir = std::env::temp_dir().join(format!("fibre-bench-addrs-{}", std::process::id()));
        write_addrs(&dir, &[0x0102_0304u32, 0xc000_0201]).unwrap();
        assert_eq!(std::fs::read(&dir).unwrap(), [1, 2, 3, 4, 192, 0, 2, 1]);
        std::fs::remove_file(dir).unwrap();
    }
}
