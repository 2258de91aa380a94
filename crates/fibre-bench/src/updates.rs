//! The update benchmark: random routes of the full view deleted and put back one change at a
//! time while a reader thread on another core looks up in the published FIB.
//!
//! Two paths are timed per change (each its own publication):
//! - `fibre-router`: `Router::change` (a change set of one: the RIB edit with the kernel's
//!   semantics, the commit, the FIBs of table main and of merged local+main following it);
//! - `fibre-fib-<algorithm>`: the bare FIB (`Fib::set` + `Fib::publish`).
//!
//! The reader loads the current version for each batch of 64 lookups (as a forwarding loop
//! between quiescent points); its lookup rate during the updates is reported too.
use crate::scenario::{route_prefix, BenchRoute, StudyFamily};
use fibre::addr::Bits;
use fibre::fib::{Fib, LpmView, Poptrie, Reader};
use fibre::io::iproute2::Batch;
use fibre::nexthop::NextHop;
use fibre::rib::{InsertMode, RouteSelector};
use fibre::route::TABLE_MAIN;
use fibre::router::{Change, FamilyChange};
use fibre::{RouteQuery, RouteSpec, Router};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Per-change times of one path, ns.
#[derive(Debug, Default)]
pub struct Timings {
    pub delete: Vec<f64>,
    pub insert: Vec<f64>,
    /// ns per lookup of the reader while the changes ran.
    pub reader_ns: f64,
    /// Where the reader ran ([`ReaderRun::on`]).
    pub reader_on: String,
    /// The slowest changes: ns, what changed, and what the FIB did for it (where known).
    pub slowest: Vec<(f64, String)>,
}

impl Timings {
    pub fn all(&self) -> Vec<f64> {
        self.delete.iter().chain(&self.insert).copied().collect()
    }

    /// Keeps `what` among the `SLOWEST` slowest changes if `ns` is slow enough.
    fn note_slow(&mut self, ns: f64, what: impl FnOnce() -> String) {
        const SLOWEST: usize = 8;
        if self.slowest.len() < SLOWEST || ns > self.slowest[SLOWEST - 1].0 {
            self.slowest.push((ns, what()));
            self.slowest.sort_by(|a, b| b.0.total_cmp(&a.0));
            self.slowest.truncate(SLOWEST);
        }
    }

    /// The slowest changes, as a note.
    pub fn slowest_note(&self) -> String {
        self.slowest
            .iter()
            .map(|(ns, what)| format!("{:.1} µs {what}", ns / 1e3))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// What the benchmark measured.
#[derive(Debug, Default)]
pub struct UpdateRun {
    pub router: Timings,
    pub fib: Timings,
    /// Seconds to load the whole table into a router (one change set, one FIB build).
    pub router_load: f64,
    /// ns per `Router::route_get` (plain flows, W1 addresses): through the FIB, and with the
    /// FIBs off (the RIB walk every non-plain flow falls back to).
    pub route_get_fib: f64,
    pub route_get_rib: f64,
    /// ns: the 99.9th percentile of fixed work as long as the router's median change, timed as
    /// often as the router's changes, on the same thread with the reader running (see
    /// [`fixed_work_times`]).
    pub router_p999_floor: f64,
}

/// Work whose time depends on nothing but the core: a multiply-xor chain over 512 words
/// (4 KiB, in L1), `units` times.
#[inline(never)]
fn fixed_work(words: &mut [u64; 512], units: usize) -> u64 {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..units {
        for w in words.iter_mut() {
            x = x.wrapping_mul(0x5851_F42D_4C95_7F2D).wrapping_add(*w);
            *w ^= x >> 29;
        }
    }
    x
}

/// The times (ns) of `samples` runs of fixed work calibrated to take `target_ns` each.
///
/// The tail of these times is what the machine adds to anything that takes as long: timer
/// interrupts, the hypervisor's preemptions, the other core's traffic. A change's p99.9 can be
/// no better than this floor measured beside it (on the VM of issue 15, 4 µs of arithmetic had
/// a p99.9 of 43-57 µs in a throwaway program; the bench's floor there was 21-113 µs, see
/// docs/bench.md).
pub fn fixed_work_times(target_ns: f64, samples: usize) -> Vec<f64> {
    let mut words = [0u64; 512];
    for (i, w) in words.iter_mut().enumerate() {
        *w = i as u64;
    }
    // Calibration: the median time of one unit over a few hundred.
    let mut unit = Vec::with_capacity(301);
    for _ in 0..301 {
        let t = Instant::now();
        std::hint::black_box(fixed_work(&mut words, 1));
        unit.push(t.elapsed().as_nanos() as f64);
    }
    let unit_ns = crate::stats::median(&unit).max(1.0);
    let units = ((target_ns / unit_ns).round() as usize).max(1);
    (0..samples)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(fixed_work(&mut words, units));
            t.elapsed().as_nanos() as f64
        })
        .collect()
}

/// The bench's link: `veth0`, up, with the first address of the reserved subnet, where the
/// routes' gateways are.
fn setup<A: StudyFamily>() -> String {
    let (net, len) = A::RESERVED;
    let own = A::from_bits(net | A::K::from_u64(1));
    format!(
        "link add veth0 type veth peer name veth1\nlink set veth0 up\nlink set veth1 up\n\
         addr add {own}/{len} dev veth0\n"
    )
}

/// The route the bench installs for `r`: via a gateway on the connected subnet of `dev`.
pub fn spec<A: StudyFamily>(r: &BenchRoute<A::K>, dev: u32) -> RouteSpec<A> {
    let gw = A::from_bits(A::RESERVED.0 | A::K::from_u64(10 + r.nh as u64));
    RouteSpec::new(route_prefix::<A>(r), vec![NextHop::via(gw, dev)])
}

/// The change that puts the bench's route `spec` in table main.
pub fn add<A: StudyFamily>(spec: RouteSpec<A>) -> Change {
    FamilyChange::Route(spec, InsertMode::Add).into()
}

/// The change that takes the bench's route `spec` out of table main.
pub fn del<A: StudyFamily>(spec: &RouteSpec<A>) -> Change {
    FamilyChange::RouteDel(TABLE_MAIN, RouteSelector::exact(spec)).into()
}

/// Full re-encodings of the router's FIBs that plain lookups read (IPv4's merged local+main,
/// and main's), with the FIBs' identity: a FIB made anew counts as a change too.
fn fib_rebuilds<A: StudyFamily>(router: &Router) -> (u64, usize) {
    let st = router.family::<A>();
    let mut n = 0;
    let mut id = 0;
    for f in [st.merged_fib(), st.table_fib(TABLE_MAIN)]
        .into_iter()
        .flatten()
    {
        n += f.fib().rebuilds();
        id ^= f.fib() as *const _ as usize;
    }
    (n, id)
}

/// What a [`reader`] thread measured, and where it ran.
#[derive(Clone, Debug, Default)]
pub struct ReaderRun {
    /// ns per lookup.
    pub ns: f64,
    /// `cpu N`, or why it was not pinned there (for the records' notes).
    pub on: String,
}

/// A reader thread on `cpu` doing bulk lookups of `keys` until `stop` (`cpu` is `None` where
/// one cpu is online: the reader then shares it with the writer).
pub fn reader<A: StudyFamily, V: LpmView<A>>(
    reader: Reader<V>,
    keys: Arc<Vec<A::K>>,
    stop: Arc<AtomicBool>,
    cpu: Option<usize>,
    sink: Arc<AtomicU64>,
) -> std::thread::JoinHandle<ReaderRun> {
    std::thread::spawn(move || {
        // Unpinned, the reader still runs: the figures are then noisier, not wrong, and the
        // notes say so.
        let on = match cpu.map(|c| (c, crate::host::pin_thread(c))) {
            Some((c, Ok(()))) => format!("cpu {c}"),
            Some((c, Err(e))) => format!("cpu {c} (not pinned: {e})"),
            None => "the writer's cpu (one cpu online)".to_string(),
        };
        let mut out = [0u32; 64];
        let (mut n, mut acc) = (0u64, 0u32);
        let start = Instant::now();
        // (Fewer than 64 keys make no batch: the stop is checked between passes too.)
        'outer: while !stop.load(Ordering::Relaxed) {
            for chunk in keys.chunks_exact(64) {
                if stop.load(Ordering::Relaxed) {
                    break 'outer;
                }
                reader.load().lookup_bulk(chunk, &mut out);
                acc = acc.wrapping_add(out[0]);
                n += 64;
            }
        }
        sink.fetch_add(acc as u64, Ordering::Relaxed);
        ReaderRun {
            ns: start.elapsed().as_nanos() as f64 / n.max(1) as f64,
            on,
        }
    })
}

/// A router with the bench's link and subnet and `routes` in table main, loaded as one change
/// set; the device index of the gateways' link, and the seconds the load took.
pub fn loaded_router<A: StudyFamily>(
    routes: &[BenchRoute<A::K>],
) -> Result<(Router, u32, f64), String> {
    let mut batch = Batch::new(Router::new());
    let out = batch.run_text(&setup::<A>());
    if !out.success() {
        return Err(format!("update bench set-up: {}", out.stderr));
    }
    let mut router = batch.router;
    let dev = router
        .links()
        .by_name("veth0")
        .ok_or("update bench set-up: no veth0")?
        .index;
    let changes: Vec<Change> = routes.iter().map(|r| add(spec::<A>(r, dev))).collect();
    let start = Instant::now();
    router
        .apply(&changes)
        .map_err(|(i, e)| format!("loading route {i}: {e:?}"))?;
    Ok((router, dev, start.elapsed().as_secs_f64()))
}

/// Deletes and puts back `count` random routes of `routes`, one change at a time, through the
/// router and through a bare FIB, with a reader on `reader_cpu`.
pub fn run<A: StudyFamily>(
    routes: &[BenchRoute<A::K>],
    keys: &[A::K],
    count: usize,
    seed: u64,
    reader_cpu: Option<usize>,
) -> Result<UpdateRun, String> {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let chosen: Vec<&BenchRoute<A::K>> = routes
        .choose_multiple(&mut rng, count.min(routes.len()))
        .collect();
    let keys = Arc::new(keys.to_vec());
    let sink = Arc::new(AtomicU64::new(0));
    let mut run = UpdateRun::default();

    // Through the router.
    let (mut router, dev, load) = loaded_router::<A>(routes)?;
    run.router_load = load;
    let queries: Vec<RouteQuery<A>> = keys
        .iter()
        .take(20_000)
        .map(|&k| RouteQuery::to(A::from_bits(k)))
        .collect();
    // As the lookups are timed: a pass to warm the caches, then the median of three. A single
    // cold pass right after the load measured the misses of a table the load had just pushed
    // out of the caches (IPv4: 219 ns a get against 70-80 warm).
    let time_gets = |router: &Router| {
        let pass = || {
            let t = Instant::now();
            let mut ok = 0usize;
            for q in &queries {
                ok += router.route_get(q).is_ok() as usize;
            }
            std::hint::black_box(ok);
            t.elapsed().as_nanos() as f64 / queries.len().max(1) as f64
        };
        pass();
        let mut passes = [pass(), pass(), pass()];
        passes.sort_by(f64::total_cmp);
        passes[1]
    };
    run.route_get_fib = time_gets(&router);
    router.set_fibs_enabled(false);
    run.route_get_rib = time_gets(&router);
    router.set_fibs_enabled(true);
    // What a plain lookup probes: IPv4's merged local+main FIB, IPv6 main's.
    let st = router.family::<A>();
    let fib_reader = st
        .merged_fib_reader()
        .or_else(|| st.fib_reader(TABLE_MAIN))
        .ok_or("table main has no FIB")?;
    let stop = Arc::new(AtomicBool::new(false));
    let handle = reader::<A, _>(
        fib_reader,
        keys.clone(),
        stop.clone(),
        reader_cpu,
        sink.clone(),
    );
    for (i, r) in chosen.iter().enumerate() {
        let s = spec::<A>(r, dev);
        let del = del(&s);
        let add = add(s);
        let p = route_prefix::<A>(r);
        let before = fib_rebuilds::<A>(&router);
        let t = Instant::now();
        router.change(&del).map_err(|e| format!("delete: {e:?}"))?;
        let ns = t.elapsed().as_nanos() as f64;
        run.router.delete.push(ns);
        let why = |router: &Router, before| {
            if fib_rebuilds::<A>(router) != before {
                " (a FIB rebuilt)"
            } else {
                ""
            }
        };
        run.router
            .note_slow(ns, || format!("delete {p} (#{i}){}", why(&router, before)));
        let before = fib_rebuilds::<A>(&router);
        let t = Instant::now();
        router.change(&add).map_err(|e| format!("insert: {e:?}"))?;
        let ns = t.elapsed().as_nanos() as f64;
        run.router.insert.push(ns);
        run.router
            .note_slow(ns, || format!("insert {p} (#{i}){}", why(&router, before)));
    }
    // The machine's floor under the router's tail, measured beside it (the reader still runs).
    let median = crate::stats::median(&run.router.all());
    let floor = fixed_work_times(median, run.router.delete.len() + run.router.insert.len());
    run.router_p999_floor = crate::stats::quantile(&floor, 0.999);
    stop.store(true, Ordering::Relaxed);
    let read = handle.join().map_err(|_| "reader panicked")?;
    (run.router.reader_ns, run.router.reader_on) = (read.ns, read.on);
    drop(router);

    // The bare FIB.
    let mut fib: Fib<A, Poptrie<A>> =
        Fib::from_routes(routes.iter().map(|r| (route_prefix::<A>(r), r.nh as u32)))
            .expect("next-hop indexes are small");
    let stop = Arc::new(AtomicBool::new(false));
    let handle = reader::<A, _>(fib.reader(), keys, stop.clone(), reader_cpu, sink);
    for (i, r) in chosen.iter().enumerate() {
        let p = route_prefix::<A>(r);
        let rebuilds = fib.rebuilds();
        let t = Instant::now();
        fib.set(p, None).expect("next-hop indexes are small");
        fib.publish();
        let ns = t.elapsed().as_nanos() as f64;
        run.fib.delete.push(ns);
        let rebuilt = |fib: &Fib<A, Poptrie<A>>, before: u64| {
            if fib.rebuilds() > before {
                " (full rebuild)"
            } else {
                ""
            }
        };
        run.fib.note_slow(ns, || {
            format!("delete {p} (#{i}){}", rebuilt(&fib, rebuilds))
        });
        let rebuilds = fib.rebuilds();
        let t = Instant::now();
        fib.set(p, Some(r.nh as u32))
            .expect("next-hop indexes are small");
        fib.publish();
        let ns = t.elapsed().as_nanos() as f64;
        run.fib.insert.push(ns);
        run.fib.note_slow(ns, || {
            format!("insert {p} (#{i}){}", rebuilt(&fib, rebuilds))
        });
    }
    stop.store(true, Ordering::Relaxed);
    let read = handle.join().map_err(|_| "reader panicked")?;
    (run.fib.reader_ns, run.fib.reader_on) = (read.ns, read.on);
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fibre::Prefix;
    use std::net::Ipv4Addr;

    /// The reader says where it ran: the notes must not claim a cpu it was refused.
    #[test]
    fn a_reader_says_where_it_ran() {
        let fib: Fib<Ipv4Addr, Poptrie<Ipv4Addr>> =
            Fib::from_routes([(Prefix::new(Ipv4Addr::new(10, 0, 0, 0), 8), 1)]).unwrap();
        let run = |cpu| {
            let stop = Arc::new(AtomicBool::new(true));
            let keys = Arc::new(vec![0x0A00_0001u32; 64]);
            let sink = Arc::new(AtomicU64::new(0));
            reader::<Ipv4Addr, _>(fib.reader(), keys, stop, cpu, sink)
                .join()
                .unwrap()
                .on
        };
        // A cpu this process may run on (a cpuset or taskset may leave out cpu 0).
        let allowed = first_cpu(true);
        assert_eq!(run(Some(allowed)), format!("cpu {allowed}"));
        let other = first_cpu(false);
        let refused = run(Some(other));
        assert!(
            refused.starts_with(&format!("cpu {other} (not pinned: ")),
            "{refused}"
        );
        let past = run(Some(usize::MAX));
        assert!(past.contains("(not pinned: "), "{past}");
        assert_eq!(run(None), "the writer's cpu (one cpu online)");
    }

    /// The first cpu this process may (`allowed`) or may not run on: the set's last cpus are
    /// past any machine this runs on.
    fn first_cpu(allowed: bool) -> usize {
        // SAFETY: a zeroed cpu_set_t is a valid empty set, filled by the call with its size.
        let set = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            let size = std::mem::size_of::<libc::cpu_set_t>();
            assert_eq!(libc::sched_getaffinity(0, size, &mut set), 0);
            set
        };
        // SAFETY: `c` is below the set's size; the call only reads the set.
        (0..libc::CPU_SETSIZE as usize)
            .find(|&c| unsafe { libc::CPU_ISSET(c, &set) } == allowed)
            .expect("some cpu is in the set and some is not")
    }
}
