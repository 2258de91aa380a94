//! Real churn (`fibre bench --replay FILE`): a BGP4MP update file (MRT, as RIPE RIS and
//! RouteViews publish them) replayed into a router that holds the full view, one update at a
//! time, while a reader on the other core looks up in the published FIB.
//!
//! An announcement is `route replace` of its prefix in table main (a new prefix is added, a
//! known one gets its new next hop); a withdrawal is `route del` of the prefix, and a
//! withdrawal of a prefix the table does not hold is counted and skipped, as a BGP speaker
//! ignores it. The update file's BGP next hops are mapped onto the bench's gateways (the
//! router's connected subnet), so that every announced route is reachable: the same next hop
//! always maps to the same gateway.
use crate::scenario::{route_prefix, BenchRoute, StudyFamily};
use crate::updates::{loaded_router, reader};
use fibre::addr::Bits;
use fibre::fib::Reader;
use fibre::io::mrt::UpdateEvent;
use fibre::nexthop::NextHop;
use fibre::rib::{InsertMode, RouteSelector};
use fibre::route::TABLE_MAIN;
use fibre::router::{Change, FamilyChange};
use fibre::{Prefix, RouteSpec, Router};
use std::hash::{Hash, Hasher};
use std::net::IpAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// What a replay measured.
#[derive(Debug, Default)]
pub struct ReplayRun {
    /// Updates applied (announcements and withdrawals of held prefixes), over all passes.
    pub applied: usize,
    pub announcements: usize,
    pub withdrawals: usize,
    /// Withdrawals of prefixes the table did not hold: skipped, not timed.
    pub unknown_withdrawals: usize,
    /// ns per applied update.
    pub per_update: Vec<f64>,
    /// Wall time of the whole replay (the updates only), s.
    pub secs: f64,
    /// ns per lookup of the reader meanwhile.
    pub reader_ns: f64,
    /// Where the reader ran (`updates::ReaderRun::on`).
    pub reader_on: String,
}

/// The events of an MRT update file (gzip-compressed or plain); an error names the file.
pub fn read_events(path: &Path) -> Result<Vec<UpdateEvent>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut reader = std::io::BufReader::new(file);
    let gz = std::io::BufRead::fill_buf(&mut reader)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .starts_with(&[0x1f, 0x8b]);
    let input: Box<dyn std::io::Read> = if gz {
        Box::new(flate2::read::MultiGzDecoder::new(reader))
    } else {
        Box::new(reader)
    };
    fibre::io::mrt::update_events(input).map_err(|e| format!("{}: MRT: {e}", path.display()))
}

/// The bench gateway a BGP next hop maps to: one of 10 ..= 209 on the bench's subnet, always
/// the same for the same next hop.
fn gateway_of<A: StudyFamily>(next_hop: Option<IpAddr>) -> A {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    next_hop.hash(&mut h);
    A::from_bits(A::RESERVED.0 | A::K::from_u64(10 + h.finish() % 200))
}

/// The change an event of family `A` makes, or `None` for a withdrawal of a prefix `held`
/// says the table does not hold (and for a prefix longer than the family allows).
fn change_of<A: StudyFamily>(
    e: &UpdateEvent,
    dev: u32,
    held: &mut std::collections::HashSet<Prefix<A>>,
) -> Option<Change> {
    let addr = A::from_ip(e.addr)?;
    let dst = Prefix::from_bits(addr.to_bits(), e.len)?;
    if e.announce {
        held.insert(dst);
        let spec = RouteSpec::new(dst, vec![NextHop::via(gateway_of::<A>(e.next_hop), dev)]);
        Some(FamilyChange::Route(spec, InsertMode::Replace).into())
    } else if held.remove(&dst) {
        Some(FamilyChange::RouteDel(TABLE_MAIN, RouteSelector::prefix(dst)).into())
    } else {
        None
    }
}

/// Replays the events of family `A` `passes` times into a router loaded with `routes`, with a
/// reader doing bulk lookups of `keys` on `reader_cpu`. Returns the router too (the tests
/// compare its table with a model of the replay).
pub fn run<A: StudyFamily>(
    routes: &[BenchRoute<A::K>],
    events: &[UpdateEvent],
    passes: usize,
    keys: &[A::K],
    reader_cpu: Option<usize>,
) -> Result<(ReplayRun, Router), String> {
    let (mut router, dev, _) = loaded_router::<A>(routes)?;
    let mut held: std::collections::HashSet<Prefix<A>> =
        routes.iter().map(route_prefix::<A>).collect();
    let mine: Vec<&UpdateEvent> = events
        .iter()
        .filter(|e| {
            matches!(
                (e.addr, A::WIDTH),
                (IpAddr::V4(_), 32) | (IpAddr::V6(_), 128)
            )
        })
        .collect();
    let st = router.family::<A>();
    let fib: Reader<_> = st
        .merged_fib_reader()
        .or_else(|| st.fib_reader(TABLE_MAIN))
        .ok_or("table main has no FIB")?;
    let stop = Arc::new(AtomicBool::new(false));
    let sink = Arc::new(AtomicU64::new(0));
    let handle = reader::<A, _>(fib, Arc::new(keys.to_vec()), stop.clone(), reader_cpu, sink);
    let mut run = ReplayRun::default();
    let start = Instant::now();
    let result = (|| {
        for _ in 0..passes.max(1) {
            for e in &mine {
                let Some(change) = change_of::<A>(e, dev, &mut held) else {
                    run.unknown_withdrawals += !e.announce as usize;
                    continue;
                };
                let t = Instant::now();
                router.change(&change).map_err(|err| {
                    format!(
                        "{} {}/{}: {err:?}",
                        if e.announce { "announce" } else { "withdraw" },
                        e.addr,
                        e.len
                    )
                })?;
                run.per_update.push(t.elapsed().as_nanos() as f64);
                if e.announce {
                    run.announcements += 1;
                } else {
                    run.withdrawals += 1;
                }
            }
        }
        Ok::<(), String>(())
    })();
    run.secs = start.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let read = handle.join().map_err(|_| "reader panicked")?;
    (run.reader_ns, run.reader_on) = (read.ns, read.on);
    result?;
    run.applied = run.per_update.len();
    Ok((run, router))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::load_table;
    use std::collections::HashMap;
    use std::net::Ipv4Addr;

    fn shared(name: &str) -> Option<std::path::PathBuf> {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/data/mrt")
            .join(name);
        if p.exists() {
            return Some(p);
        }
        assert!(
            std::env::var_os("FIBRE_DATA_REQUIRED").is_none(),
            "FIBRE_DATA_REQUIRED is set but {} is absent",
            p.display()
        );
        eprintln!(
            "skipped: {} absent (shared data not beside the repo)",
            p.display()
        );
        None
    }

    /// What each prefix of `events` holds after `passes` replays on top of `routes`: its
    /// gateway, or nothing (withdrawn). Written apart from the replay: a set of held prefixes.
    fn model(
        routes: &[BenchRoute<u32>],
        events: &[UpdateEvent],
        passes: usize,
    ) -> HashMap<(Ipv4Addr, u8), Option<Ipv4Addr>> {
        let mut held: std::collections::HashSet<(Ipv4Addr, u8)> = routes
            .iter()
            .map(|r| (Ipv4Addr::from(r.addr), r.len))
            .collect();
        let mut model = HashMap::new();
        for _ in 0..passes {
            for e in events {
                let IpAddr::V4(a) = e.addr else { continue };
                let key = (a, e.len);
                if e.announce {
                    held.insert(key);
                    model.insert(key, Some(gateway_of::<Ipv4Addr>(e.next_hop)));
                } else if held.remove(&key) {
                    model.insert(key, None);
                }
            }
        }
        model
    }

    /// The RIS updates file replayed on top of the 2000 bview: twice whole, and once up to its
    /// first withdrawal of a held prefix (every withdrawal of the file is announced again
    /// later, so only a cut shows one). Afterwards the router's table main holds every prefix
    /// of the replay as the model says: withdrawn prefixes are gone, announced ones route via
    /// their next hop's gateway.
    #[test]
    fn a_replay_leaves_the_table_the_model_says() {
        let (Some(rib), Some(updates)) = (
            shared("ripe-rrc00-bview.20000111.0032.gz"),
            shared("ripe-rrc03-updates.20100227.1600.first-796-records.gz"),
        ) else {
            return;
        };
        let views = load_table(&rib).unwrap();
        let routes: Vec<BenchRoute<u32>> = views
            .v4
            .prefixes
            .iter()
            .take(20_000)
            .enumerate()
            .map(|(i, &(addr, len))| BenchRoute {
                addr,
                len,
                nh: (i % 7) as u8,
            })
            .collect();
        let events = read_events(&updates).unwrap();
        let keys: Vec<u32> = routes.iter().map(|r| r.addr).take(4096).collect();
        // The cut: up to the first withdrawal of a prefix the bview or an earlier
        // announcement holds.
        let mut held: std::collections::HashSet<(IpAddr, u8)> = routes
            .iter()
            .map(|r| (IpAddr::V4(Ipv4Addr::from(r.addr)), r.len))
            .collect();
        let cut = events
            .iter()
            .position(|e| {
                if e.announce {
                    held.insert((e.addr, e.len));
                    false
                } else {
                    e.addr.is_ipv4() && held.contains(&(e.addr, e.len))
                }
            })
            .expect("the file withdraws a held prefix");
        for (events, passes) in [(&events[..], 2), (&events[..=cut], 1)] {
            let (run, router) = run::<Ipv4Addr>(&routes, events, passes, &keys, None).unwrap();
            assert!(
                run.withdrawals > 0,
                "{} announcements, {} withdrawals, {} unknown",
                run.announcements,
                run.withdrawals,
                run.unknown_withdrawals
            );
            assert_eq!(run.applied, run.announcements + run.withdrawals);
            let model = model(&routes, events, passes);
            assert!(model.values().any(Option::is_some));
            if passes == 1 {
                assert!(
                    model.values().any(Option::is_none),
                    "the cut ends in a withdrawal"
                );
            }
            let mut batch = fibre::io::iproute2::Batch::new(router);
            for ((addr, len), want) in &model {
                let out = batch.run_text(&format!("route show table main exact {addr}/{len}\n"));
                assert!(out.success(), "{}", out.stderr);
                let got = out.stdout;
                match want {
                    Some(gw) => assert!(
                        got.contains(&format!("via {gw} ")),
                        "{addr}/{len}: want via {gw}, the router shows {got:?}"
                    ),
                    None => assert!(got.trim().is_empty(), "{addr}/{len} withdrawn: {got:?}"),
                }
            }
        }
    }
}
