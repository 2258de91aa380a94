//! `fibre bench mirror`: the netlink mirror against the kernel it follows. The full view is
//! installed in a namespace; then, in one run:
//!
//! - initial sync: a mirror's full dump into a router (seconds, heap), beside `ip -j route
//!   show table all` (both families) dumping and printing the same table;
//! - snapshots: the synced router saved and loaded;
//! - the query socket of a `fibre mirror` process: `route get` requests/s with 1 and 8 clients;
//! - event lag: while the kernel takes 10^4 changes/s, some added routes are probes, and a
//!   client asks for each until the mirror's answer shows it: from the kernel's
//!   acknowledgement of the change to that answer. Lost probes, and the churn table the mirror
//!   holds at the end against the kernel's, show any loss.
//!
//! Results are records in the study's form (`mirror.json`, `mirror.csv` in `--out`).
pub mod client;
pub mod kernel;

use crate::engine::harness::{netns_available, BenchNamespace};
use crate::report::{Record, Results};
use crate::scenario::FullViews;
use crate::stats::{quantile, Summary};
use clap::Parser;
use client::{Client, MirrorProcess};
use fibre::io::netlink::Mirror;
use kernel::KernelRoutes;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::io::Read;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The netlink mirror beside the kernel: sync, snapshots, socket throughput, event lag.
#[derive(Parser, Debug)]
#[command(name = "fibre bench mirror", bin_name = "fibre bench mirror")]
pub struct MirrorBenchArgs {
    #[command(flatten)]
    pub views: crate::scenario::ViewArgs,
    /// Routes per family at most (the table's first ones)
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Timed repetitions of the sync, the dump and the snapshots
    #[arg(long, default_value = "3")]
    pub runs: usize,
    /// Kernel changes per second while the lag is measured
    #[arg(long, default_value = "10000")]
    pub rate: u32,
    /// Seconds of changes while the lag is measured
    #[arg(long, default_value = "5", value_name = "SECS")]
    pub lag_secs: f64,
    /// `route get` requests per client in the socket benchmark
    #[arg(long, default_value = "20000", value_name = "N")]
    pub requests: usize,
    /// Clients at once in the socket benchmark, one run per count
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1,8",
        value_name = "N,..."
    )]
    pub clients: Vec<usize>,
    /// The mirror's notification buffer in bytes [default: the mirror's, 64 MiB]
    #[arg(long, value_name = "BYTES")]
    pub rcvbuf: Option<usize>,
    /// The fibre program to run as `fibre mirror` [default: this one]
    #[arg(long, value_name = "PATH")]
    pub fibre: Option<PathBuf>,
    /// Seed of the synthetic table and of the addresses asked for
    #[arg(long, default_value = "1")]
    pub seed: u64,
    /// Output directory: mirror.json, mirror.csv
    #[arg(long, default_value = "target/bench-report")]
    pub out: PathBuf,
}

/// The IPv4 gateway of the bench namespace, which the churn routes use.
fn gateway4() -> Ipv4Addr {
    BenchNamespace::GATEWAY4.parse().expect("an IPv4 address")
}
/// The churn of the lag benchmark is host routes in a table of its own, which a rule puts
/// before main (addresses from 100.64.0.0 on: one per addition, none reused).
const CHURN_TABLE: u8 = 250;
/// Each addition that is not a probe is deleted this many additions later; probes stay until
/// the end, so that a slow prober cannot miss one.
const WINDOW: usize = 200;
/// A probe not seen this long after the kernel's acknowledgement is counted lost (a lag that
/// long would be a failure of its own).
const PROBE_PATIENCE: Duration = Duration::from_secs(5);

pub fn run(args: &MirrorBenchArgs) -> Result<Results, String> {
    netns_available().map_err(|e| format!("the mirror bench needs network namespaces: {e}"))?;
    let fibre = match &args.fibre {
        Some(p) => p.clone(),
        None => std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?,
    };
    let views = views(args)?;
    let total = views.v4.prefixes.len() + views.v6.prefixes.len();
    let mut results = Results::default();
    results.meta.insert("host".into(), crate::host::machine());
    results
        .meta
        .insert("IPv4 table".into(), views.v4.origin.clone());
    results
        .meta
        .insert("IPv6 table".into(), views.v6.origin.clone());
    let mut record = |engine: &str, scenario: &str, metric: &str, s: Summary, unit: &str| {
        results.records.push(Record {
            engine: engine.into(),
            family: "all".into(),
            scenario: scenario.into(),
            size: total,
            metric: metric.into(),
            value: s.value,
            unit: unit.into(),
            runs: s.runs,
            spread: s.spread,
            note: None,
        });
    };

    let ns = BenchNamespace::create()?;
    say(&format!(
        "installing {} IPv4 and {} IPv6 routes in {}",
        views.v4.prefixes.len(),
        views.v6.prefixes.len(),
        ns.name
    ));
    let t = Instant::now();
    ns.install(&views.v4.prefixes, &views.v6.prefixes)?;
    record(
        "ip",
        "full-view",
        "kernel_install",
        Summary::once(t.elapsed().as_secs_f64()),
        "s",
    );

    say("dumping with ip -j route show table all, and syncing a mirror");
    let runs = args.runs.max(1);
    let mut dumps = Vec::new();
    let mut syncs = Vec::new();
    let mut heap = 0;
    let mut mirror = None;
    for _ in 0..runs {
        dumps.push(ip_dump(&ns.name)?);
        drop(mirror.take());
        let before = crate::alloc::live_bytes();
        let t = Instant::now();
        let (m, report) = Mirror::open(Some(&ns.name)).map_err(|e| format!("mirror sync: {e}"))?;
        syncs.push(t.elapsed().as_secs_f64());
        heap = crate::alloc::live_bytes().saturating_sub(before);
        if report.routes[0] < views.v4.prefixes.len() || report.routes[1] < views.v6.prefixes.len()
        {
            return Err(format!(
                "the mirror synced {:?} routes of {total}",
                report.routes
            ));
        }
        mirror = Some(m);
    }
    let mirror = mirror.expect("runs > 0");
    record("ip", "full-view", "kernel_dump", Summary::of(&dumps), "s");
    record(
        "fibre-mirror",
        "full-view",
        "mirror_sync",
        Summary::of(&syncs),
        "s",
    );
    if crate::alloc::is_counting() {
        record(
            "fibre-mirror",
            "full-view",
            "mirror_memory",
            Summary::once(heap as f64 / total as f64),
            "bytes/route",
        );
    }

    say("saving and loading snapshots");
    std::fs::create_dir_all(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    let snap = args.out.join("mirror.snap");
    let router = mirror.router();
    let (mut saves, mut loads) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let t = Instant::now();
        fibre::io::snapshot::save(&router, &snap).map_err(|e| e.to_string())?;
        saves.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let loaded = fibre::io::snapshot::load(&snap).map_err(|e| e.to_string())?;
        loads.push(t.elapsed().as_secs_f64());
        let count = |r: &fibre::Router| {
            r.family::<Ipv4Addr>().route_count() + r.family::<Ipv6Addr>().route_count()
        };
        if count(&loaded) != count(&router) {
            return Err("the snapshot loaded another table".into());
        }
    }
    let size = std::fs::metadata(&snap).map(|m| m.len()).unwrap_or(0);
    let _ = std::fs::remove_file(&snap);
    record(
        "fibre-mirror",
        "full-view",
        "snapshot_save",
        Summary::of(&saves),
        "s",
    );
    record(
        "fibre-mirror",
        "full-view",
        "snapshot_load",
        Summary::of(&loads),
        "s",
    );
    record(
        "fibre-mirror",
        "full-view",
        "snapshot_size",
        Summary::once(size as f64 / total as f64),
        "bytes/route",
    );
    drop((router, mirror));

    // The churn table's rule is there before the mirror starts: a rule added on a full table
    // makes its FIBs be built anew (rules customised), which is not what the lag measures.
    for family in ["-4", "-6"] {
        let table = CHURN_TABLE.to_string();
        let rule = [
            "-n", &ns.name, family, "rule", "add", "pref", "100", "lookup", &table,
        ];
        let out = Command::new("ip")
            .args(rule)
            .output()
            .map_err(|e| format!("ip: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "ip rule: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
    }
    say("starting fibre mirror and its socket");
    let socket =
        std::env::temp_dir().join(format!("fibre-bench-mirror-{}.sock", std::process::id()));
    let mut extra = vec!["--status-every".to_string(), "3600".to_string()];
    if let Some(bytes) = args.rcvbuf {
        extra.extend(["--rcvbuf".to_string(), bytes.to_string()]);
    }
    let mut process =
        MirrorProcess::start(&fibre, &ns.name, socket, &extra, Duration::from_secs(300))?;
    let addresses = addresses(&views, args.seed);
    for &clients in &args.clients {
        say(&format!("route get over the socket, {clients} clients"));
        let rate = socket_rate(&process.socket, &addresses, clients.max(1), args.requests)?;
        record(
            "fibre-mirror",
            &format!("clients-{clients}"),
            "socket_route_get",
            Summary::once(rate),
            "req/s",
        );
    }

    say(&format!(
        "event lag at {} changes/s for {} s",
        args.rate, args.lag_secs
    ));
    let lag = event_lag(&ns.name, &process.socket, args.rate, args.lag_secs)?;
    let (_, log) = process.stop();
    let status = log
        .lines()
        .rev()
        .find(|l| l.contains("overruns"))
        .unwrap_or("");
    // "..., 3 overruns, 1 resyncs (drift 12); ...": the number before a word.
    let count_before = |word: &str| -> f64 {
        let words: Vec<&str> = status.split_whitespace().collect();
        words
            .windows(2)
            .find(|w| w[1].trim_end_matches([',', ';']) == word)
            .and_then(|w| w[0].parse().ok())
            .unwrap_or(f64::NAN)
    };
    let us = |d: f64| d * 1e6;
    record(
        "fibre-mirror",
        "churn",
        "event_lag_median",
        Summary::once(us(quantile(&lag.lags, 0.5))),
        "µs",
    );
    record(
        "fibre-mirror",
        "churn",
        "event_lag_p99",
        Summary::once(us(quantile(&lag.lags, 0.99))),
        "µs",
    );
    record(
        "fibre-mirror",
        "churn",
        "event_lag_max",
        Summary::once(us(quantile(&lag.lags, 1.0))),
        "µs",
    );
    record(
        "fibre-mirror",
        "churn",
        "events_lost",
        Summary::once((lag.lost + lag.mismatched) as f64),
        "routes",
    );
    // The mirror's own part: from reading a notification to publishing it.
    let own_lag = status
        .split_once("lag mean ")
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(f64::NAN);
    record(
        "fibre-mirror",
        "churn",
        "publish_lag_mean",
        Summary::once(own_lag),
        "µs",
    );
    record(
        "fibre-mirror",
        "churn",
        "overruns",
        Summary::once(count_before("overruns")),
        "",
    );
    record(
        "fibre-mirror",
        "churn",
        "resyncs",
        Summary::once(count_before("resyncs")),
        "",
    );
    results.notes.push(format!(
        "event lag: {} changes made ({:.0}/s), {} probes, {} not seen within 5 s, {} routes of the churn table differing from the kernel's at the end; the mirror's last status: {}",
        lag.changes,
        lag.rate,
        lag.lags.len() + lag.lost,
        lag.lost,
        lag.mismatched,
        status.trim()
    ));
    results
        .write_json(&args.out.join("mirror.json"))
        .and_then(|()| results.write_csv(&args.out.join("mirror.csv")))
        .map_err(|e| format!("{}: {e}", args.out.display()))?;
    Ok(results)
}

fn say(what: &str) {
    eprintln!("fibre bench mirror: {what}");
}

fn views(args: &MirrorBenchArgs) -> Result<FullViews, String> {
    let mut views = args.views.load(args.seed)?;
    if let Some(n) = args.limit {
        views.v4.prefixes.truncate(n);
        views.v6.prefixes.truncate(n);
    }
    Ok(views)
}

/// Seconds `ip -j route show table all` takes to dump and print both families.
fn ip_dump(netns: &str) -> Result<f64, String> {
    let t = Instant::now();
    for family in ["-4", "-6"] {
        let mut ip = Command::new("ip")
            .args(["-n", netns, family, "-j", "route", "show", "table", "all"])
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("ip: {e}"))?;
        let mut sink = Vec::new();
        ip.stdout
            .take()
            .expect("piped")
            .read_to_end(&mut sink)
            .map_err(|e| format!("ip: {e}"))?;
        if !ip.wait().map_err(|e| e.to_string())?.success() {
            return Err("ip route show failed".into());
        }
    }
    Ok(t.elapsed().as_secs_f64())
}

/// `route get` commands for addresses inside the table's prefixes, both families.
fn addresses(views: &FullViews, seed: u64) -> Vec<String> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let (n4, n6) = (views.v4.prefixes.len(), views.v6.prefixes.len());
    (0..10_000)
        .map(|_| {
            let i = rng.gen_range(0..n4 + n6);
            if i < n4 {
                let (a, len) = views.v4.prefixes[i];
                let host = rng.gen::<u32>() & u32::MAX.checked_shr(len.into()).unwrap_or(0);
                format!("route get {}", Ipv4Addr::from(a | host))
            } else {
                let (a, len) = views.v6.prefixes[i - n4];
                let host = rng.gen::<u128>() & u128::MAX.checked_shr(len.into()).unwrap_or(0);
                format!("route get {}", Ipv6Addr::from(a | host))
            }
        })
        .collect()
}

/// Requests per second from `clients` clients asking `requests` each, one at a time.
fn socket_rate(
    socket: &Path,
    commands: &[String],
    clients: usize,
    requests: usize,
) -> Result<f64, String> {
    // Every client connects before any starts: a failure ends the run before the clock.
    let connected = (0..clients)
        .map(|_| Client::connect(socket))
        .collect::<Result<Vec<_>, _>>()?;
    let barrier = std::sync::Barrier::new(clients + 1);
    let t = std::thread::scope(|s| {
        let runs: Vec<_> = connected
            .into_iter()
            .enumerate()
            .map(|(c, mut client)| {
                let barrier = &barrier;
                s.spawn(move || -> Result<(), String> {
                    barrier.wait();
                    for i in 0..requests {
                        let command = &commands[(c * 7919 + i) % commands.len()];
                        let answer = client.ask(command)?;
                        if !answer.starts_with("[{") {
                            return Err(format!("{command}: {answer}"));
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        barrier.wait();
        let t = Instant::now();
        for r in runs {
            r.join().map_err(|_| "a client panicked".to_string())??;
        }
        Ok::<_, String>(t.elapsed())
    })?;
    Ok((clients * requests) as f64 / t.as_secs_f64())
}

struct Lag {
    changes: usize,
    /// Changes per second, as made.
    rate: f64,
    /// Seconds from the kernel's acknowledgement to an answer showing the route.
    lags: Vec<f64>,
    /// Probes not seen within PROBE_PATIENCE.
    lost: usize,
    /// Probe routes the mirror and the kernel disagree on at the end.
    mismatched: usize,
}

fn churn_host(k: usize) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(Ipv4Addr::new(100, 64, 0, 0)) + k as u32)
}

/// Changes at `rate` per second for `secs` in the churn table: host routes added and, WINDOW
/// additions later, deleted; every 10th addition is a probe, which a client watches for on the
/// socket, and which stays.
fn event_lag(netns: &str, socket: &Path, rate: u32, secs: f64) -> Result<Lag, String> {
    let table = CHURN_TABLE.to_string();
    let mut kernel = KernelRoutes::open(netns).map_err(|e| format!("netlink: {e}"))?;
    let ticks = (f64::from(rate) * secs) as usize;
    let period = Duration::from_secs_f64(1.0 / f64::from(rate.max(1)));
    let (probes, heard) = mpsc::channel::<(Ipv4Addr, Instant)>();
    let mut client = Client::connect(socket)?;
    let prober = std::thread::spawn(move || -> Result<(Vec<f64>, usize), String> {
        let (mut lags, mut lost) = (Vec::new(), 0);
        for (dst, acked) in heard {
            let want = format!("\"dst\":\"{dst}\"");
            loop {
                let answer = client.ask(&format!("route get {dst} fibmatch"))?;
                if answer.contains(&want) {
                    lags.push(acked.elapsed().as_secs_f64());
                    break;
                }
                if acked.elapsed() > PROBE_PATIENCE {
                    lost += 1;
                    break;
                }
            }
        }
        Ok((lags, lost))
    });
    let start = Instant::now();
    let mut changes = 0;
    let is_probe = |k: usize| k.is_multiple_of(10);
    for tick in 0..ticks {
        let due = start + period * tick as u32;
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        // Even ticks add route tick/2; odd ones delete the one added WINDOW additions before.
        let k = tick / 2;
        let (add, host) = if tick % 2 == 0 {
            (true, k)
        } else if k >= WINDOW && !is_probe(k - WINDOW) {
            (false, k - WINDOW)
        } else {
            continue;
        };
        kernel
            .host_route(add, CHURN_TABLE, churn_host(host), gateway4())
            .map_err(|e| {
                format!(
                    "route {} {}: {e}",
                    if add { "add" } else { "del" },
                    churn_host(host)
                )
            })?;
        if add && is_probe(k) {
            let _ = probes.send((churn_host(k), Instant::now()));
        }
        changes += 1;
    }
    let elapsed = start.elapsed().as_secs_f64();
    drop(probes);
    let (lags, lost) = prober
        .join()
        .map_err(|_| "the prober panicked".to_string())??;
    // At rest, the mirror comes to hold exactly the kernel's churn table (10 s at most).
    let out = Command::new("ip")
        .args(["-n", netns, "-j", "route", "show", "table", &table])
        .output()
        .map_err(|e| format!("ip: {e}"))?;
    let kernel = dsts(String::from_utf8_lossy(&out.stdout).trim())?;
    let mut client = Client::connect(socket)?;
    let settle = Instant::now() + Duration::from_secs(10);
    let mismatched = loop {
        let mirror = dsts(client.ask(&format!("route show table {table}"))?)?;
        let differ = mirror.symmetric_difference(&kernel).count();
        if differ == 0 || Instant::now() > settle {
            break differ;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Ok(Lag {
        changes,
        rate: changes as f64 / elapsed,
        lags,
        lost,
        mismatched,
    })
}

fn dsts(json: &str) -> Result<std::collections::BTreeSet<String>, String> {
    let v: serde_json::Value =
        serde_json::from_str(json).map_err(|e| format!("a listing: {e}: {json}"))?;
    Ok(v.as_array()
        .ok_or_else(|| format!("not a listing: {json}"))?
        .iter()
        .filter_map(|r| r["dst"].as_str().map(String::from))
        .collect())
}

/// The run's records as a table.
pub fn summary(results: &Results) -> String {
    let mut out =
        String::from("| engine | scenario | metric | value | unit |\n|---|---|---|---|---|\n");
    for r in &results.records {
        out += &format!(
            "| {} | {} | {} | {:.4} | {} |\n",
            r.engine, r.scenario, r.metric, r.value, r.unit
        );
    }
    let find = |m: &str| {
        results
            .records
            .iter()
            .find(|r| r.metric == m)
            .map(|r| r.value)
    };
    if let (Some(sync), Some(dump)) = (find("mirror_sync"), find("kernel_dump")) {
        out += &format!("\nmirror sync / ip dump: {:.2}×\n", sync / dump);
    }
    out
}
