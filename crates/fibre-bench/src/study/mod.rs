//! The orchestrator: generates each point of the study (`point`), where every engine's answers
//! are checked against the reference's and timed, and collects the records.
use crate::alloc;
use crate::engine::harness::{self, HarnessSpec, HARNESSES};
use crate::engine::REFERENCE;
use crate::host::{online_cpus, pin_thread};
use crate::progress::Progress;
use crate::report::{self, Record, Results};
use crate::scenario::{
    self, generate, synthetic_view, FullViews, PickView, ScenarioKind, StudyFamily,
};
use crate::workload::{self};
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};

mod peer_updates;
mod point;
mod update_point;
use point::study_point;
use update_point::update_point;

/// Where the routes come from.
#[derive(Clone, Debug, PartialEq)]
pub enum TableChoice {
    /// The shared real table when present beside the repository, else synthetic.
    Default,
    /// A prefix list (optionally gzip-compressed) or an MRT RIB dump.
    Path(PathBuf),
    /// The synthetic full view, even when a real table is at hand.
    Synthetic,
}

/// The shared real table, relative to the repository root (where `make` runs).
pub const SHARED_TABLE: &str = "../shared/data/full-table-2024.txt.gz";

#[derive(Clone, Debug)]
pub struct StudyConfig {
    pub table: TableChoice,
    /// 4 and/or 6.
    pub families: Vec<u8>,
    pub scenarios: Vec<ScenarioKind>,
    pub sizes: Vec<usize>,
    /// Timed repetitions of each lookup measurement.
    pub runs: usize,
    /// Times each point is measured, engines interleaved, every engine built afresh each time
    /// (ratios to the peers are taken repeat by repeat).
    pub repeat: usize,
    /// Batch size of bulk lookups.
    pub bulk: usize,
    pub seed: u64,
    /// Results, plots, report and the generated files (under `work/`).
    pub out: PathBuf,
    /// Addresses in W1 and W2.
    pub w_count: usize,
    /// Answers checked per engine and workload before timing.
    pub check_n: usize,
    pub harness_dir: Option<PathBuf>,
    /// Only these engines (names as reported); all when `None`.
    pub engines: Option<Vec<String>>,
    /// Core to pin to; the last one by default.
    pub cpu: Option<usize>,
    pub progress: bool,
    /// An engine whose build at the next size is projected (from its last builds in the same
    /// scenario) to take longer than this is left out there, with a note.
    pub max_build_secs: f64,
    /// Routes of the full view deleted and put back one at a time in the update benchmark
    /// (0: no update benchmark).
    pub updates: usize,
    /// A BGP4MP update file replayed into a router holding the full view (`--replay`).
    pub replay: Option<PathBuf>,
    /// Times the update file is replayed.
    pub replay_passes: usize,
    /// Routes of the table the update benchmark runs on: a sample of the full view (`None`: all
    /// of it, as the study asks).
    pub update_table: Option<usize>,
}

impl StudyConfig {
    /// The demo: both families, the study's scenarios at 10^3..10^5 routes, 3 runs, W1/W2 of
    /// 250,000 addresses (10^6 in the full study).
    pub fn quick() -> Self {
        StudyConfig {
            table: TableChoice::Default,
            families: vec![4, 6],
            scenarios: vec![
                ScenarioKind::FullView,
                ScenarioKind::Spread { density: 1.0 },
                ScenarioKind::Spread { density: 0.01 },
                ScenarioKind::Random128,
            ],
            sizes: vec![1_000, 10_000, 100_000],
            runs: 3,
            repeat: 1,
            bulk: 64,
            seed: 1,
            out: PathBuf::from("target/bench-report"),
            w_count: 250_000,
            check_n: 10_000,
            harness_dir: None,
            engines: None,
            cpu: None,
            progress: true,
            max_build_secs: 60.0,
            updates: 20_000,
            replay: None,
            replay_passes: 1,
            update_table: None,
        }
    }
    /// The full study: every density, 100 to 2,000,000 routes, 11 runs.
    pub fn full() -> Self {
        let mut scenarios = vec![ScenarioKind::FullView];
        scenarios.extend(
            [1.0, 0.5, 0.1, 0.05, 0.01, 0.001]
                .into_iter()
                .map(|density| ScenarioKind::Spread { density }),
        );
        scenarios.push(ScenarioKind::Random128);
        StudyConfig {
            scenarios,
            sizes: vec![100, 1_000, 10_000, 100_000, 1_000_000, 2_000_000],
            updates: 100_000,
            runs: 11,
            w_count: 1_000_000,
            ..Self::quick()
        }
    }
}

/// What a run produced.
pub struct StudyOutput {
    pub results: Results,
    pub report: PathBuf,
}

/// Runs the study and writes its report. An engine whose answers differ from fibre's is an
/// error (nothing is reported for a run whose engines disagree); an engine that cannot run here
/// is skipped with a note.
pub fn run(cfg: &StudyConfig) -> Result<StudyOutput, String> {
    let pinned = pin(cfg.cpu);
    let load_at_start = crate::host::loadavg();
    let mut results = Results::default();
    let progress = Progress::new(cfg.progress);
    progress.phase("loading the full-view table");
    let views = load_views(cfg, &mut results.notes)?;
    let events = match &cfg.replay {
        Some(path) => {
            progress.phase("reading the update file to replay");
            Some(crate::replay::read_events(path)?)
        }
        None => None,
    };
    progress.phase("looking for the peer harnesses");
    let harnesses = available_harnesses(cfg, &mut results.notes);
    if !alloc::is_counting() {
        results.notes.push(
            "memory of in-process engines not measured: the counting allocator is not installed"
                .into(),
        );
    }
    let mut ctx = Ctx {
        cfg,
        views: &views,
        harnesses: &harnesses,
        results: &mut results,
        progress,
        events: events.as_deref(),
        clock: std::time::Instant::now(),
        history: BTreeMap::new(),
        disagreements: Vec::new(),
    };
    let (points4, points6) = (points::<Ipv4Addr>(&ctx), points::<Ipv6Addr>(&ctx));
    let updates = (cfg.updates > 0 && cfg.scenarios.contains(&ScenarioKind::FullView)) as usize
        + cfg.replay.is_some() as usize;
    let total = (points4.len() + updates) * cfg.families.contains(&4) as usize
        + (points6.len() + updates) * cfg.families.contains(&6) as usize;
    ctx.progress.set_total(total as u64);
    if cfg.families.contains(&4) {
        study_family::<Ipv4Addr>(&mut ctx, points4)?;
    }
    if cfg.families.contains(&6) {
        study_family::<Ipv6Addr>(&mut ctx, points6)?;
    }
    ctx.progress.clear();
    let disagreements = std::mem::take(&mut ctx.disagreements);
    results
        .notes
        .extend(disagreements.iter().map(|d| format!("DISAGREEMENT: {d}")));
    machine_meta(&mut results, &load_at_start);
    let meta = &mut results.meta;
    meta.insert("machine".into(), crate::host::machine());
    meta.insert("pinned to cpu".into(), pinned);
    meta.insert("IPv4 table".into(), views.v4.origin.clone());
    meta.insert("IPv6 table".into(), views.v6.origin.clone());
    meta.insert(
        "configuration".into(),
        format!(
            "sizes {:?}, runs {}, repeats {}, bulk {}, seed {}, W1/W2 {} addresses, check {} answers",
            cfg.sizes, cfg.runs, cfg.repeat, cfg.bulk, cfg.seed, cfg.w_count, cfg.check_n
        ),
    );
    let report =
        report::write_all(&results, &cfg.out).map_err(|e| format!("{}: {e}", cfg.out.display()))?;
    if !disagreements.is_empty() {
        return Err(format!(
            "{} disagreement(s) with {REFERENCE} (their records left out; report written to {}):\n{}",
            disagreements.len(),
            report.display(),
            disagreements.join("\n")
        ));
    }
    Ok(StudyOutput { results, report })
}

/// The cache probe's size for memory: past any L3 share.
const MEMORY_PROBE_BYTES: usize = 64 << 20;

/// What the meta records of the machine, beyond its name: the CPU's model and the extensions
/// lookups may use, the huge pages the system and fibre's arenas got, and how busy the machine
/// was (load averages at the start and the end; other processes' CPU and the hypervisor's steal
/// during the repeats).
fn machine_meta(results: &mut Results, load_at_start: &str) {
    let meta = &mut results.meta;
    meta.insert("cpu model".into(), crate::host::cpu_model());
    meta.insert("cpu features".into(), crate::host::cpu_features().join(" "));
    // The bulk path fibre's FIB took, both families (FIBRE_LOOKUP forces one), and why a
    // request was refused.
    let requested = std::env::var("FIBRE_LOOKUP").ok();
    use fibre::fib::LookupPath;
    let paths = format!(
        "IPv4 {0}, IPv6 {0} (this CPU: {1})",
        LookupPath::chosen(),
        LookupPath::available()
            .iter()
            .map(|p| p.name())
            .collect::<Vec<_>>()
            .join(", ")
    );
    meta.insert(
        "fibre lookup path".into(),
        match LookupPath::choose(requested.as_deref()) {
            Ok(_) => paths,
            Err(e) => format!("{paths}; {e}"),
        },
    );
    let sys = |f: &str| {
        std::fs::read_to_string(format!("/sys/kernel/mm/transparent_hugepage/{f}"))
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".into())
    };
    meta.insert(
        "transparent huge pages".into(),
        format!(
            "enabled: {}; defrag: {}; FIBRE_NO_THP {}",
            sys("enabled"),
            sys("defrag"),
            if std::env::var_os("FIBRE_NO_THP").is_some() {
                "set"
            } else {
                "unset"
            }
        ),
    );
    let shares: Vec<f64> = results
        .repeats
        .iter()
        .flat_map(|r| &r.records)
        .filter(|r| r.metric == "huge_pages")
        .map(|r| r.value)
        .collect();
    if !shares.is_empty() {
        let lo = shares.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = shares.iter().copied().fold(0.0, f64::max);
        meta.insert(
            "fibre arenas on huge pages".into(),
            format!(
                "{:.0}% … {:.0}% over {} builds",
                lo * 100.0,
                hi * 100.0,
                shares.len()
            ),
        );
    }
    meta.insert(
        "load average".into(),
        format!(
            "{load_at_start} at the start, {} at the end",
            crate::host::loadavg()
        ),
    );
    if !results.repeats.is_empty() {
        let max = |f: fn(&crate::report::repeats::Repeat) -> f64| {
            results.repeats.iter().map(f).fold(0.0, f64::max)
        };
        meta.insert(
            "others' load during repeats".into(),
            format!(
                "at most {:.2} cores busy with other processes, {:.2} stolen by the hypervisor",
                max(|r| r.others_busy),
                max(|r| r.steal)
            ),
        );
        let probes: Vec<String> = results
            .repeats
            .iter()
            .map(|r| format!("{:.0}", r.probe_ns))
            .collect();
        meta.insert(
            "cache probe".into(),
            format!(
                "a dependent load over {} MiB took {} ns as each repeat began; over {} MiB \
                 (memory) {:.0} ns at the end (far below memory: the repeat kept its share of \
                 the L3; near it: neighbours had taken it, and lookups ran from memory)",
                crate::report::repeats::PROBE_BYTES >> 20,
                probes.join(", "),
                MEMORY_PROBE_BYTES >> 20,
                crate::host::dependent_load_ns(
                    MEMORY_PROBE_BYTES,
                    crate::report::repeats::PROBE_STEPS
                )
            ),
        );
    }
}

struct Ctx<'a> {
    cfg: &'a StudyConfig,
    views: &'a FullViews,
    harnesses: &'a [(HarnessSpec, PathBuf)],
    results: &'a mut Results,
    progress: Progress,
    /// The update file's events (`--replay`).
    events: Option<&'a [fibre::io::mrt::UpdateEvent]>,
    /// When the run began: the zero of the load measurements.
    clock: std::time::Instant,
    /// Build times so far, by (engine, family, scenario): (routes, seconds).
    history: BuildHistory,
    /// Engines whose answers differed from the reference: their records of that point are
    /// dropped, the report says so, and the run fails once the report is written.
    disagreements: Vec<String>,
}

/// Build times by (engine, family, scenario): (routes, seconds), in increasing size.
type BuildHistory = BTreeMap<(String, &'static str, String), Vec<(usize, f64)>>;

/// Seconds in a unit that shows them (a build of 1,000 routes is not "0.0 s").
fn duration(secs: f64) -> String {
    if secs >= 10.0 {
        format!("{secs:.0} s")
    } else if secs >= 0.1 {
        format!("{secs:.1} s")
    } else if secs >= 1e-4 {
        format!("{:.1} ms", secs * 1e3)
    } else {
        format!("{:.0} µs", secs * 1e6)
    }
}

/// Measures a point `cfg.repeat` times: `measure(ctx, repeat)` adds one repeat's records, which
/// are folded with how busy the machine was around them (`report::repeats`).
fn repeated(
    ctx: &mut Ctx,
    family: &str,
    scenario: &str,
    size: usize,
    mut measure: impl FnMut(&mut Ctx, usize) -> Result<(), String>,
) -> Result<(), String> {
    use crate::host::CpuTimes;
    use report::repeats::{self, Repeat, PROBE_BYTES, PROBE_STEPS};
    let mut repeats = Vec::new();
    for repeat in 0..ctx.cfg.repeat.max(1) {
        let first = ctx.results.records.len();
        let probe_ns = crate::host::dependent_load_ns(PROBE_BYTES, PROBE_STEPS);
        let before = CpuTimes::now(ctx.clock);
        measure(ctx, repeat)?;
        let (others_busy, steal) = before.others(&CpuTimes::now(ctx.clock));
        repeats.push(Repeat {
            family: family.to_string(),
            scenario: scenario.to_string(),
            size,
            repeat,
            others_busy,
            steal,
            probe_ns,
            records: ctx.results.records.drain(first..).collect(),
        });
    }
    repeats::fold(ctx.results, repeats);
    Ok(())
}

/// Engines whose build of `size` routes is projected over budget, with the reason. The
/// projection extrapolates from the last two builds of the same scenario (the exponent clamped
/// to 1..2), or quadratically from a single one.
fn over_budget(
    history: &BuildHistory,
    family: &'static str,
    scenario: &str,
    size: usize,
    budget: f64,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for ((engine, f, s), builds) in history {
        if *f != family || s != scenario {
            continue;
        }
        let Some(&(n1, t1)) = builds.last() else {
            continue;
        };
        if size <= n1 || t1 <= 0.0 {
            continue;
        }
        let k = match builds.iter().rev().nth(1) {
            Some(&(n0, t0)) if t0 > 0.0 && n1 > n0 => {
                ((t1 / t0).ln() / (n1 as f64 / n0 as f64).ln()).clamp(1.0, 2.0)
            }
            _ => 2.0,
        };
        let projected = t1 * (size as f64 / n1 as f64).powf(k);
        if projected > budget && engine != REFERENCE {
            out.push((
                engine.clone(),
                format!(
                    "{engine} left out of {family} {scenario} at {size} routes: its build took \
                     {} at {n1} routes, projected {} (budget {budget:.0} s)",
                    duration(t1),
                    duration(projected)
                ),
            ));
        }
    }
    out
}

/// The (scenario, size) points of one family: full views are clipped to the table's size.
fn points<A: StudyFamily + PickView>(ctx: &Ctx) -> Vec<(ScenarioKind, usize)> {
    let mut out = Vec::new();
    for kind in ctx.cfg.scenarios.iter().filter(|k| k.applies_to::<A>()) {
        let mut sizes: Vec<usize> = ctx.cfg.sizes.clone();
        if *kind == ScenarioKind::FullView {
            let n = A::view(ctx.views).prefixes.len();
            sizes = sizes
                .into_iter()
                .map(|s| s.min(n))
                .filter(|s| *s > 0)
                .collect();
        }
        sizes.sort_unstable();
        sizes.dedup();
        out.extend(sizes.into_iter().map(|s| (kind.clone(), s)));
    }
    out
}

fn study_family<A: StudyFamily + PickView>(
    ctx: &mut Ctx,
    points: Vec<(ScenarioKind, usize)>,
) -> Result<(), String> {
    let w_size = points
        .iter()
        .filter(|(k, _)| *k == ScenarioKind::FullView)
        .map(|(_, s)| *s)
        .max();
    for (kind, size) in points {
        let name = kind.name::<A>();
        ctx.progress
            .start(format!("{} {name} {size} routes", A::LABEL));
        let Some((routes, range)) = generate::<A>(&kind, size, ctx.views, ctx.cfg.seed) else {
            ctx.results.notes.push(format!(
                "{} {name}: {size} routes do not fit the scenario; point skipped",
                A::LABEL
            ));
            ctx.progress
                .finish(Some("skipped, the routes do not fit the scenario"));
            continue;
        };
        let with_w = w_size == Some(size) && kind == ScenarioKind::FullView;
        study_point::<A>(ctx, &name, &routes, range, with_w)?;
        ctx.progress.finish(None);
    }
    if ctx.cfg.updates > 0 && ctx.cfg.scenarios.contains(&ScenarioKind::FullView) {
        update_point::<A>(ctx)?;
    }
    if let Some(events) = ctx.events {
        replay_point::<A>(ctx, events)?;
    }
    Ok(())
}

/// The replay of a BGP4MP update file on the full view (see [`crate::replay`]).
fn replay_point<A: StudyFamily + PickView>(
    ctx: &mut Ctx,
    events: &[fibre::io::mrt::UpdateEvent],
) -> Result<(), String> {
    let whole = A::view(ctx.views).prefixes.len();
    ctx.progress.start(format!("{} replay", A::LABEL));
    let Some((routes, _)) = generate::<A>(&ScenarioKind::FullView, whole, ctx.views, ctx.cfg.seed)
    else {
        ctx.progress.finish(Some("skipped, no full view"));
        return Ok(());
    };
    let keys = workload::inside_prefixes::<A>(&routes, 1 << 16, ctx.cfg.seed);
    let n = online_cpus();
    let writer = ctx.cfg.cpu.unwrap_or(n - 1);
    let reader_cpu = (n > 1).then_some(if writer == 0 { 1 } else { 0 });
    let passes = ctx.cfg.replay_passes.max(1);
    let (run, _) = crate::replay::run::<A>(&routes, events, passes, &keys, reader_cpu)?;
    let file = ctx
        .cfg
        .replay
        .as_ref()
        .map_or(String::new(), |p| p.display().to_string());
    if run.applied == 0 {
        ctx.results.notes.push(format!(
            "{} replay of {file}: no update of this family",
            A::LABEL
        ));
        ctx.progress.finish(Some("no update of this family"));
        return Ok(());
    }
    let note = format!(
        "{file}, {passes} pass(es): {} announcements, {} withdrawals applied one change at a \
         time, {} withdrawals of prefixes not held skipped; a reader doing bulk lookups on {}",
        run.announcements, run.withdrawals, run.unknown_withdrawals, run.reader_on
    );
    let max = run.per_update.iter().copied().fold(0.0, f64::max);
    for (metric, value) in [
        ("replay_rate", run.applied as f64 / run.secs.max(1e-9)),
        ("replay_median", crate::stats::median(&run.per_update)),
        (
            "replay_p999",
            crate::stats::quantile(&run.per_update, 0.999),
        ),
        ("replay_max", max),
        ("replay_reader_lookup", run.reader_ns),
    ] {
        ctx.results.records.push(Record {
            engine: "fibre-router".to_string(),
            family: A::LABEL.to_string(),
            scenario: "replay".to_string(),
            size: routes.len(),
            metric: metric.to_string(),
            value,
            unit: crate::report::unit_of(metric).to_string(),
            runs: run.applied,
            spread: 0.0,
            note: Some(note.clone()),
        });
    }
    ctx.progress.finish(None);
    Ok(())
}

fn load_views(cfg: &StudyConfig, notes: &mut Vec<String>) -> Result<FullViews, String> {
    let path = match &cfg.table {
        TableChoice::Path(p) => Some(p.clone()),
        TableChoice::Default => {
            let p = PathBuf::from(SHARED_TABLE);
            if p.exists() {
                Some(p)
            } else {
                notes.push(format!("{SHARED_TABLE} not found: synthetic full views"));
                None
            }
        }
        TableChoice::Synthetic => None,
    };
    let mut views = match &path {
        Some(p) => scenario::load_table(p)?,
        None => FullViews::default(),
    };
    // The sizes of the real table's families (the file holds 901,899 IPv4 and 160,147 IPv6
    // lines; shared/data/README.md rounds them differently).
    let real4 = 901_899;
    let real6 = 160_147;
    // A table given or found must hold the families studied: a study of a synthetic table in
    // its place would answer another question.
    if let Some(p) = &path {
        for (family, empty) in [
            (4, views.v4.prefixes.is_empty()),
            (6, views.v6.prefixes.is_empty()),
        ] {
            if empty && cfg.families.contains(&family) {
                return Err(format!(
                    "{}: no IPv{family} prefixes in the table (give --family {} or another table)",
                    p.display(),
                    10 - family
                ));
            }
        }
    }
    if views.v4.prefixes.is_empty() {
        views.v4 = synthetic_view::<Ipv4Addr>(real4, cfg.seed);
    }
    if views.v6.prefixes.is_empty() {
        views.v6 = synthetic_view::<Ipv6Addr>(real6, cfg.seed);
    }
    Ok(views)
}

fn available_harnesses(cfg: &StudyConfig, notes: &mut Vec<String>) -> Vec<(HarnessSpec, PathBuf)> {
    let dir = harness::harness_dir(cfg.harness_dir.as_deref());
    let mut out = Vec::new();
    for spec in HARNESSES {
        let all: Vec<&str> = spec
            .engines_v4
            .iter()
            .chain(spec.engines_v6)
            .copied()
            .collect();
        if let Some(list) = &cfg.engines {
            if !all.iter().any(|e| list.iter().any(|l| l == e)) {
                continue;
            }
        }
        let program = dir.join(spec.program);
        if !is_executable(&program) {
            notes.push(format!(
                "{} skipped: harness {} not built (needs {}; run `make bench-deps harnesses`)",
                all.iter()
                    .copied()
                    .collect::<std::collections::BTreeSet<_>>()
                    .into_iter()
                    .collect::<Vec<_>>()
                    .join(", "),
                program.display(),
                spec.needs
            ));
            continue;
        }
        if spec.netns {
            if let Err(why) = harness::netns_available() {
                notes.push(format!(
                    "linux-kernel skipped: {why} (the kernel is measured in a network namespace)"
                ));
                continue;
            }
        }
        out.push((*spec, program));
    }
    out
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Pins the process (and the harnesses it starts, which inherit it) to one core.
fn pin(cpu: Option<usize>) -> String {
    let n = online_cpus();
    let cpu = cpu.unwrap_or(n - 1);
    match pin_thread(cpu) {
        Ok(()) => format!("{cpu} of {n}"),
        Err(e) => format!("not pinned ({e})"),
    }
}

/// The records as a map by key, for tests and callers that look values up.
pub fn index(results: &Results) -> BTreeMap<(String, String, String, usize, String), f64> {
    results
        .records
        .iter()
        .map(|r| {
            (
                (
                    r.engine.clone(),
                    r.family.clone(),
                    r.scenario.clone(),
                    r.size,
                    r.metric.clone(),
                ),
                r.value,
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_times_are_shown_in_a_unit_that_shows_them() {
        assert_eq!(duration(0.00004), "40 µs");
        assert_eq!(duration(0.0123), "12.3 ms");
        assert_eq!(duration(0.26), "0.3 s");
        assert_eq!(duration(68.4), "68 s");
    }

    #[test]
    fn builds_projected_over_budget_are_left_out() {
        let mut h = BuildHistory::new();
        let key = |e: &str| (e.to_string(), "ipv4", "full-view".to_string());
        // Quadratic: 1 s at 10k, 100 s at 100k -> 10,000 s at 1M.
        h.insert(key("slow"), vec![(10_000, 1.0), (100_000, 100.0)]);
        // Linear: 0.5 s at 100k -> 5 s at 1M.
        h.insert(key("fast"), vec![(10_000, 0.05), (100_000, 0.5)]);
        // One point: assumed quadratic, 1 s at 100k -> 100 s at 1M.
        h.insert(key("once"), vec![(100_000, 1.0)]);
        // The reference is never left out.
        h.insert(key(REFERENCE), vec![(100_000, 100.0)]);
        let out: Vec<String> = over_budget(&h, "ipv4", "full-view", 1_000_000, 60.0)
            .into_iter()
            .map(|(e, _)| e)
            .collect();
        assert_eq!(out, ["once", "slow"]);
        assert!(over_budget(&h, "ipv6", "full-view", 1_000_000, 60.0).is_empty());
        assert!(over_budget(&h, "ipv4", "full-view", 100_000, 60.0).is_empty());
    }
}
