//! `fibre bench snmp`: whole-table `snmpbulkwalk -Cr50` of inetCidrRouteTable through snmpd,
//! in one run and on one kernel table per size: net-snmp's own implementation inside snmpd,
//! fibre's AgentX subagent (`fibre mirror --agentx`), and net-snmp's own implementation as an
//! AgentX subagent (`snmpd -X`), each with the CPU time snmpd and the subagent spent; then
//! GETNEXT latency at random points through snmpd to fibre.
//!
//! Sizes are IPv4 route counts (the table's first ones), plus `full4` (the whole IPv4 view) and
//! `full6` (the whole IPv6 view). A walk that has not ended within `--walk-timeout` is stopped
//! and recorded with the varbinds it had (net-snmp's own needs minutes per 10^5 routes to load
//! its cache). Records: `snmp.json`, `snmp.csv` in `--out`.
use super::agent::{self, cpu_of, Snmpd, OWN_ROUTE_MODULES};
use super::latency;
use crate::engine::harness::{netns_available, BenchNamespace};
use crate::mirror::client::MirrorProcess;
use crate::report::{Record, Results};
use crate::stats::quantile;
use clap::Parser;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A table's IPv4 and IPv6 prefixes (address bits, length).
type Prefixes4<'a> = &'a [(u32, u8)];
type Prefixes6<'a> = &'a [(u128, u8)];

/// inetCidrRouteTable.
const INET_CIDR_ROUTE_TABLE: &str = "1.3.6.1.2.1.4.24.7";

/// Walks of inetCidrRouteTable through snmpd: fibre's subagent beside net-snmp's own
/// implementation, inside snmpd and as a subagent, on one kernel table per size.
#[derive(Parser, Debug)]
#[command(name = "fibre bench snmp", bin_name = "fibre bench snmp")]
pub struct SnmpBenchArgs {
    #[command(flatten)]
    pub views: crate::scenario::ViewArgs,
    /// Tables walked: IPv4 route counts, `full4`, `full6`
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "10000,100000,full4,full6",
        value_name = "N|full4|full6,..."
    )]
    pub sizes: Vec<String>,
    /// Seconds a walk may take before it is stopped and recorded as incomplete
    #[arg(long, default_value = "300", value_name = "SECS")]
    pub walk_timeout: f64,
    /// Walk net-snmp's own implementations only at tables of at most this many routes (at
    /// 10^5 routes its cache alone takes half a minute of CPU; the full view none in 570 s)
    #[arg(long, default_value = "100000", value_name = "N")]
    pub own_max: usize,
    /// Walks per engine and table; the records are the median run's
    #[arg(long, default_value = "2", value_name = "N")]
    pub runs: usize,
    /// Pin snmpd and its subagent (fibre, or `snmpd -X`) to this CPU: in a VM, a wakeup of a
    /// process on another vCPU costs more than answering, and AgentX wakes the subagent once
    /// per GETNEXT [default: where the scheduler puts them]
    #[arg(long, value_name = "CPU")]
    pub pin: Option<usize>,
    /// GETNEXT requests timed at random points of each table (through snmpd to fibre)
    #[arg(long, default_value = "1000", value_name = "N")]
    pub probes: usize,
    /// The fibre program to run as `fibre mirror` [default: this one]
    #[arg(long, value_name = "PATH")]
    pub fibre: Option<PathBuf>,
    /// Seed of the synthetic table and of the probes
    #[arg(long, default_value = "1")]
    pub seed: u64,
    /// Output directory: snmp.json, snmp.csv
    #[arg(long, default_value = "target/bench-report")]
    pub out: PathBuf,
}

fn say(what: &str) {
    eprintln!("fibre bench snmp: {what}");
}

/// One walk's outcome.
struct Walk {
    varbinds: usize,
    seconds: f64,
    complete: bool,
    /// Stopped at the timeout (else, if not complete, the walk failed: a request timed out
    /// or was answered with an error).
    timed_out: bool,
    snmpd_cpu: f64,
    subagent_cpu: f64,
}

/// Walks `oid` through the snmpd on `port` of `netns` until it ends or `timeout`, counting
/// varbinds; CPU time of `snmpd` and `subagent` (pids) over the walk.
fn walk(
    netns: &str,
    port: u16,
    snmpd: u32,
    subagent: Option<u32>,
    timeout: Duration,
) -> Result<Walk, String> {
    let cpu = |pid: Option<u32>| pid.map_or(Duration::ZERO, cpu_of);
    let (s0, a0) = (cpu(Some(snmpd)), cpu(subagent));
    let started = Instant::now();
    let mut child: Child = Command::new("ip")
        .args([
            "netns",
            "exec",
            netns,
            "snmpbulkwalk",
            "-v2c",
            "-c",
            "public",
            "-On",
            "-Cr50",
        ])
        .args(["-t", "60", "-r", "0"])
        .arg(format!("127.0.0.1:{port}"))
        .arg(INET_CIDR_ROUTE_TABLE)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("snmpbulkwalk: {e}"))?;
    let out = child.stdout.take().expect("piped");
    // Lines are counted on a thread, so that the walk can be stopped at the deadline.
    let counter =
        std::thread::spawn(move || BufReader::new(out).lines().map_while(Result::ok).count());
    let deadline = started + timeout;
    let (complete, timed_out) = loop {
        match child.try_wait() {
            Ok(Some(status)) => break (status.success(), false),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break (false, true);
            }
        }
    };
    let seconds = started.elapsed().as_secs_f64();
    let varbinds = counter.join().unwrap_or(0);
    Ok(Walk {
        varbinds,
        seconds,
        complete,
        timed_out,
        // saturating: a process that died reads as zero.
        snmpd_cpu: cpu(Some(snmpd)).saturating_sub(s0).as_secs_f64(),
        subagent_cpu: cpu(subagent).saturating_sub(a0).as_secs_f64(),
    })
}

/// `runs` walks (at least one); the median by time. A walk stopped at the timeout is not
/// repeated.
fn walks(
    runs: usize,
    who: &str,
    mut one: impl FnMut() -> Result<Walk, String>,
) -> Result<Walk, String> {
    let mut all = Vec::new();
    for _ in 0..runs.max(1) {
        let w = one()?;
        say(&format!(
            "  {who}: {} varbinds in {:.2} s (snmpd {:.2} s, subagent {:.2} s of CPU)",
            w.varbinds, w.seconds, w.snmpd_cpu, w.subagent_cpu
        ));
        let stopped = !w.complete;
        all.push(w);
        if stopped {
            break;
        }
    }
    all.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
    Ok(all.swap_remove(all.len() / 2))
}

pub fn run(args: &SnmpBenchArgs) -> Result<Results, String> {
    netns_available().map_err(|e| format!("the SNMP bench needs network namespaces: {e}"))?;
    if let Some(why) = agent::unavailable() {
        return Err(why);
    }
    let fibre = match &args.fibre {
        Some(p) => p.clone(),
        None => std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?,
    };
    let views = args.views.load(args.seed)?;
    let mut results = Results::default();
    results.meta.insert("host".into(), crate::host::machine());
    results
        .meta
        .insert("IPv4 table".into(), views.v4.origin.clone());
    results
        .meta
        .insert("IPv6 table".into(), views.v6.origin.clone());
    let timeout = Duration::from_secs_f64(args.walk_timeout);
    std::fs::create_dir_all(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    for size in &args.sizes {
        let (v4, v6, family): (Prefixes4, Prefixes6, &str) = match size.as_str() {
            "full4" => (&views.v4.prefixes, &[], "ipv4"),
            "full6" => (&[], &views.v6.prefixes, "ipv6"),
            n => {
                let n: usize = n
                    .parse()
                    .map_err(|_| format!("--sizes: \"{n}\" is not a count, full4 or full6"))?;
                (
                    &views.v4.prefixes[..n.min(views.v4.prefixes.len())],
                    &[],
                    "ipv4",
                )
            }
        };
        let routes = v4.len() + v6.len();
        let ns = BenchNamespace::create()?;
        say(&format!(
            "{size}: installing {routes} routes in {}",
            ns.name
        ));
        ns.install(v4, v6)?;
        let dir = std::env::temp_dir().join(format!("fibre-bench-snmp-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut rec = Recorder {
            family,
            scenario: format!("walk-{size}"),
            size: routes,
            records: Vec::new(),
        };
        // fibre's subagent.
        let fib = Snmpd::start(&ns.name, &dir, "fib", agent::PORT + 1, false)?;
        let extra = ["--agentx".to_string(), fib.agentx.display().to_string()];
        let mut mirror = MirrorProcess::start(
            &fibre,
            &ns.name,
            dir.join("mirror.sock"),
            &extra,
            Duration::from_secs(300),
        )?;
        wait_served(&fib)?;
        pin(args.pin, &[fib.pid(), mirror.pid()])?;
        // The first count asked of this table: fibre counts its rows once per snapshot.
        let count = latency::get_time(&ns.name, fib.port, &[1, 3, 6, 1, 2, 1, 4, 24, 6, 0])?;
        rec.one(
            "fibre-agentx",
            "first_count_get",
            count.as_secs_f64() * 1e3,
            "ms",
            None,
        );
        say(&format!(
            "{size}: the first GET of inetCidrRouteNumber took {:.1} ms",
            count.as_secs_f64() * 1e3
        ));
        say(&format!("{size}: walking through fibre's subagent"));
        let w = walks(args.runs, "fibre", || {
            walk(&ns.name, fib.port, fib.pid(), Some(mirror.pid()), timeout)
        })?;
        rec.walk("fibre-agentx", &w);
        if args.probes > 0 {
            let l = latency::getnext_latencies(&ns.name, fib.port, v4, v6, args.probes, args.seed)?;
            let l: Vec<f64> = l.iter().map(|d| d.as_secs_f64() * 1e3).collect();
            rec.one(
                "fibre-agentx",
                "getnext_median",
                quantile(&l, 0.5),
                "ms",
                None,
            );
            rec.one(
                "fibre-agentx",
                "getnext_p99",
                quantile(&l, 0.99),
                "ms",
                None,
            );
            say(&format!(
                "{size}: GETNEXT through snmpd to fibre: median {:.3} ms",
                quantile(&l, 0.5)
            ));
        }
        let (_, log) = mirror.stop();
        // The subagent's last status line: how many AgentX PDUs carried the varbinds (the
        // master asks one GETNEXT per repetition of an SNMP GETBULK).
        if let Some((pdus, varbinds)) = agentx_counts(&log) {
            rec.one(
                "fibre-agentx",
                "varbinds_per_pdu",
                varbinds / pdus.max(1.0),
                "varbinds",
                None,
            );
        }
        drop(fib);

        if routes <= args.own_max {
            // net-snmp's own, inside snmpd.
            let own = Snmpd::start(&ns.name, &dir, "own", agent::PORT, true)?;
            pin(args.pin, &[own.pid()])?;
            say(&format!("{size}: walking net-snmp's own implementation"));
            let w = walks(args.runs, "net-snmp", || {
                walk(&ns.name, own.port, own.pid(), None, timeout)
            })?;
            rec.walk("net-snmp", &w);
            // The same, behind a second snmpd's `proxy` directive: how a subtree answered by
            // another agent over SNMP (rather than AgentX) reaches a walker. The requests the
            // proxied snmpd receives per varbind show how it forwards a GETBULK.
            let proxy = Snmpd::start_with(
                &ns.name,
                &dir,
                "proxy",
                agent::PORT + 3,
                false,
                &format!(
                    "proxy -v 2c -c public 127.0.0.1:{} {INET_CIDR_ROUTE_TABLE}\n",
                    own.port
                ),
            )?;
            pin(args.pin, &[proxy.pid(), own.pid()])?;
            say(&format!(
                "{size}: walking net-snmp's own implementation through a proxy"
            ));
            let packets = || in_packets(&own);
            let before = packets()?;
            let w = walk(&ns.name, proxy.port, proxy.pid(), Some(own.pid()), timeout)?;
            // Less the GET that reads the counter.
            let requests = packets()?.saturating_sub(before + 1);
            rec.walk("net-snmp-proxy", &w);
            rec.one(
                "net-snmp-proxy",
                "requests_per_varbind",
                requests as f64 / w.varbinds.max(1) as f64,
                "requests",
                None,
            );
            drop(proxy);
            drop(own);
            // net-snmp's own, as an AgentX subagent.
            let master = Snmpd::start(&ns.name, &dir, "master", agent::PORT + 2, false)?;
            let sub = subagent_snmpd(&ns.name, &dir, &master.agentx)?;
            wait_served(&master)?;
            pin(args.pin, &[master.pid(), sub.id()])?;
            say(&format!(
                "{size}: walking net-snmp's own implementation as a subagent (snmpd -X)"
            ));
            let w = walks(args.runs, "net-snmp -X", || {
                walk(&ns.name, master.port, master.pid(), Some(sub.id()), timeout)
            })?;
            rec.walk("net-snmp-agentx", &w);
            stop(sub);
        } else {
            results.notes.push(format!(
                "{size}: net-snmp's own implementations not walked ({routes} routes > --own-max {})",
                args.own_max
            ));
        }
        results.records.extend(rec.records);
        let _ = std::fs::remove_dir_all(&dir);
    }
    results
        .write_json(&args.out.join("snmp.json"))
        .map_err(|e| e.to_string())?;
    results
        .write_csv(&args.out.join("snmp.csv"))
        .map_err(|e| e.to_string())?;
    Ok(results)
}

/// snmpInPkts.0 of `snmpd`: the SNMP messages it has received.
fn in_packets(snmpd: &Snmpd) -> Result<u64, String> {
    let got = snmpd.client().get(&["1.3.6.1.2.1.11.1.0".into()])?;
    got.first()
        .and_then(|vb| vb.value.parse().ok())
        .ok_or_else(|| format!("snmpInPkts: {got:?}"))
}

/// The records of one table.
struct Recorder<'a> {
    family: &'a str,
    scenario: String,
    size: usize,
    records: Vec<Record>,
}

impl Recorder<'_> {
    fn one(&mut self, engine: &str, metric: &str, value: f64, unit: &str, note: Option<String>) {
        self.records.push(Record {
            engine: engine.into(),
            family: self.family.into(),
            scenario: self.scenario.clone(),
            size: self.size,
            metric: metric.into(),
            value,
            unit: unit.into(),
            runs: 1,
            spread: 0.0,
            note,
        });
    }

    /// A walk's time, varbinds, rate and CPU times; a walk stopped at the timeout says so.
    fn walk(&mut self, engine: &str, w: &Walk) {
        let note = match (w.complete, w.timed_out) {
            (true, _) => None,
            (false, true) => Some(format!("stopped at the timeout, {:.0} s", w.seconds)),
            (false, false) => Some(format!("the walk failed after {:.0} s", w.seconds)),
        };
        let rate = w.varbinds as f64 / w.seconds.max(1e-9);
        self.one(engine, "walk_time", w.seconds, "s", note.clone());
        self.one(
            engine,
            "walk_varbinds",
            w.varbinds as f64,
            "varbinds",
            note.clone(),
        );
        self.one(engine, "walk_rate", rate, "varbinds/s", note.clone());
        self.one(engine, "snmpd_cpu", w.snmpd_cpu, "s", note.clone());
        self.one(engine, "subagent_cpu", w.subagent_cpu, "s", note);
    }
}

/// `snmpd -X`: net-snmp's own modules as an AgentX subagent of the master at `socket`.
fn subagent_snmpd(netns: &str, dir: &Path, socket: &Path) -> Result<Child, String> {
    let conf = dir.join("subagent.conf");
    std::fs::write(&conf, format!("agentXSocket {}\n", socket.display()))
        .map_err(|e| e.to_string())?;
    Command::new("ip")
        .args(["netns", "exec", netns, "snmpd", "-f", "-C", "-X", "-Lf"])
        .arg(dir.join("subagent.log"))
        .arg("-c")
        .arg(&conf)
        .args(["-I", OWN_ROUTE_MODULES])
        .env("SNMP_PERSISTENT_DIR", dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("snmpd -X: {e}"))
}

/// (requests, varbinds) from the last `agentx: N sessions, R requests, V varbinds` line.
fn agentx_counts(log: &str) -> Option<(f64, f64)> {
    let line = log.lines().rev().find(|l| l.contains(" requests, "))?;
    let number_before = |word: &str| -> Option<f64> {
        let at = line.find(word)?;
        line[..at].split_whitespace().last()?.parse().ok()
    };
    Some((number_before(" requests")?, number_before(" varbinds")?))
}

/// Pins every thread of the processes `pids` to `cpu`, if one is given.
fn pin(cpu: Option<usize>, pids: &[u32]) -> Result<(), String> {
    let Some(cpu) = cpu else { return Ok(()) };
    for pid in pids {
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task"))
            .map_err(|e| format!("pid {pid}: {e}"))?;
        for task in tasks.flatten() {
            let Ok(tid) = task.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            crate::host::pin_task(tid, cpu)
                .map_err(|e| format!("pinning {tid} to CPU {cpu}: {e}"))?;
        }
    }
    Ok(())
}

fn stop(mut child: Child) {
    // SAFETY: a signal to our own child, not yet reaped.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(10);
    while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Waits (up to 60 s) until the master answers inetCidrRouteNumber through a subagent.
fn wait_served(snmpd: &Snmpd) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    // An entry of the table, not the count: net-snmp's own subagent serves no count.
    while Instant::now() < deadline {
        let got = snmpd.client().get_next(&[INET_CIDR_ROUTE_TABLE.into()]);
        if got.is_ok_and(|v| {
            v.first()
                .is_some_and(|vb| vb.oid.starts_with(&[1, 3, 6, 1, 2, 1, 4, 24, 7]))
        }) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Err(format!(
        "no subagent served the table within 60 s: {}",
        snmpd.log_tail()
    ))
}

/// The summary printed after a run: each walk, and the ratios the issue asks for.
pub fn summary(results: &Results) -> String {
    let mut out = String::from(
        "| engine | scenario | metric | value | unit | note |\n|---|---|---|---|---|---|\n",
    );
    for r in &results.records {
        out += &format!(
            "| {} | {} | {} | {:.4} | {} | {} |\n",
            r.engine,
            r.scenario,
            r.metric,
            r.value,
            r.unit,
            r.note.as_deref().unwrap_or("")
        );
    }
    let rate = |engine: &str, scenario: &str| {
        results
            .records
            .iter()
            .find(|r| r.engine == engine && r.scenario == scenario && r.metric == "walk_rate")
            .map(|r| r.value)
    };
    for scenario in results
        .records
        .iter()
        .map(|r| r.scenario.clone())
        .collect::<std::collections::BTreeSet<_>>()
    {
        if let (Some(f), Some(x)) = (
            rate("fibre-agentx", &scenario),
            rate("net-snmp-agentx", &scenario),
        ) {
            out += &format!(
                "\n{scenario}: fibre's subagent / net-snmp's subagent, varbinds/s: {:.2}×",
                f / x
            );
        }
    }
    // The issue's goal: the full view through fibre against net-snmp's subagent on 10^4.
    if let (Some(f), Some(x)) = (
        rate("fibre-agentx", "walk-full4"),
        rate("net-snmp-agentx", "walk-10000"),
    ) {
        out += &format!(
            "\nfull IPv4 view through fibre / net-snmp's subagent at 10^4 routes, varbinds/s: \
             {:.2}× (goal 2.5×)",
            f / x
        );
    }
    let value = |engine: &str, scenario: &str, metric: &str| {
        results
            .records
            .iter()
            .find(|r| r.engine == engine && r.scenario == scenario && r.metric == metric)
            .map(|r| r.value)
    };
    let scenarios: std::collections::BTreeSet<String> =
        results.records.iter().map(|r| r.scenario.clone()).collect();
    for scenario in &scenarios {
        if let (Some(cpu), Some(t)) = (
            value("fibre-agentx", scenario, "subagent_cpu"),
            value("fibre-agentx", scenario, "walk_time"),
        ) {
            out += &format!(
                "\n{scenario}: fibre's CPU over the walk: {:.0}% (goal ≤ 10%)",
                100.0 * cpu / t
            );
        }
    }
    out
}
